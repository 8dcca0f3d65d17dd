"""The analysis stage: numbers computed from captured graphs (torch-free).

``summary`` (graph-wide numbers), ``tables`` (timing/memory tables), ``diff`` (two graphs matched node to node),
``advisor`` (known slow patterns, with evidence).
"""
