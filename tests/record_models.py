"""The sides ``tests/test_record.py`` records in separate processes (``python -m graphwidget record
record_models:decoder_a --inputs record_models:make_inputs ...``): the decoders of :mod:`divergence_models`, built
at import from a fixed seed, so every process holds the same weights."""
from __future__ import annotations

from divergence_models import pair

decoder_a = pair()[0]
decoder_b = pair()[1]  # the same maths, written again, its own copy of the weights
decoder_b_scale = pair("scale")[1]  # the attention scale bug in one block
decoder_b_detach = pair("detach")[1]  # a detached residual in one block


def make_inputs():
    """The token ids (the same in every process)."""
    return (pair()[2],)
