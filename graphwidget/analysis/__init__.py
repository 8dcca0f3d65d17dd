"""The analysis stage: numbers computed from captured graphs (torch-free).

``summary`` (graph-wide numbers), ``tables`` (timing/memory tables), ``diff`` (two graphs matched node to node),
``advisor`` (known slow patterns, with evidence), ``memory``, ``memory_accounting`` and ``memory_checkpoints`` (the
memory peak explained, what is alive when, checkpoint candidates), ``ranks`` and ``rank_words`` (one graph per
rank of a distributed job, and its report in words). Nothing here imports torch (``tests/test_layers.py`` imports every
module with torch blocked): what needs running code lives in ``experiment/``.
"""
