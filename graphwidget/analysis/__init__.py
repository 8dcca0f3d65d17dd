"""The analysis stage: numbers computed from captured graphs (torch-free).

``summary`` (graph-wide numbers), ``tables`` (timing/memory tables), ``diff`` (two graphs matched node to node),
``advisor`` (known slow patterns, with evidence). Nothing here imports torch (``tests/test_layers.py`` imports every
module with torch blocked): what needs running code lives in ``experiment/``.
"""
