"""A real Hugging Face model (GPT-2 built from a small config: no download) through capture, trace and profile.

Its output is a ``ModelOutput`` mapping holding a ``DynamicCache``; ``gradient_checkpointing_enable()`` puts every
block's saved tensors behind torch.utils.checkpoint's hooks. Skipped when ``transformers`` is not installed (it is in
the ``dev`` extra).
"""
from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
from torch_facts import HAS_SAVED_HOOK_FACTS, needs_saved_hook_facts

import graphwidget as gw
from graphwidget.capturing import native

transformers = pytest.importorskip("transformers")

ENGINES = ["python", "native"] if native.available() or os.environ.get("GRAPHWIDGET_REQUIRE_NATIVE") == "1" \
    else ["python"]


def gpt2(checkpointing: bool = False, reentrant: bool = False):
    transformers.logging.set_verbosity_error()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=100))
    model.train()
    if checkpointing:  # what Hugging Face's Trainer turns on (renamed in transformers 5)
        # transformers 4 defaults to the reentrant checkpoint (no saved-tensor hooks), 5 to the non-reentrant one
        kwargs = {"use_reentrant": reentrant}
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    return model


def ids() -> torch.Tensor:
    return torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(1))


def test_model_output_with_a_cache_is_captured_by_every_engine_and_stage():
    model = gpt2()
    out = model(ids(), labels=ids())
    assert type(out.past_key_values).__name__ == "DynamicCache"
    texts = {e: gw.capture(out, module=model, engine=e).to_json() for e in ENGINES}
    assert len(set(texts.values())) == 1, "engines disagree"
    g = gw.load_json(texts[ENGINES[0]])
    assert g.summary()["roots"] == 2  # loss and logits, the tensors that require grad
    names = {g.node(n)["tensor"]["name"] for n in g.nodes(kind="leaf")}
    assert {"transformer.h.0.attn.c_attn.weight", "transformer.wpe.weight"} <= names
    traced = gw.trace(model, ids(), labels=ids())
    assert len(traced) == len(g)
    profiled = gw.profile(model, ids(), labels=ids(), repeat=2, warmup=0)
    assert len(profiled) == len(g) and profiled.summary()["backward_ms"] > 0


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_checkpointed_gpt2_capture_recomputes_nothing_and_shows_less_saved(reentrant: bool):
    """Non-reentrant: saved tensors sit behind checkpoint's hooks and are described packed, never unpacked (needs
    torch >= 2.5's SavedTensor.unpack_hook). Reentrant: a CheckpointFunctionBackward per block that saved only its
    inputs: nothing to recompute, nothing packed."""
    if not reentrant and not HAS_SAVED_HOOK_FACTS:
        pytest.skip(needs_saved_hook_facts.kwargs["reason"])
    plain = gpt2()
    base = gw.capture(plain(ids(), labels=ids())).summary()

    model = gpt2(checkpointing=True, reentrant=reentrant)
    calls = []
    for block in model.transformer.h:  # runs once per block forward, recompute included
        block.ln_1.register_forward_pre_hook(lambda *a: calls.append(1))
    out = model(ids(), labels=ids())
    n = len(calls)
    for engine in ENGINES:
        g = gw.capture(out, module=model, engine=engine)
        assert len(calls) == n, f"{engine}: capture re-ran a checkpointed block"
        s = g.summary()
        assert (s["saved_tensors_packed"] > 0) is not reentrant
        assert s["saved_bytes"] < base["saved_bytes"]
        assert s["saved_activation_bytes"] < base["saved_activation_bytes"]
        assert s["saved_parameter_bytes"] > 0  # the tied embedding, saved by the head outside the checkpoints
        if reentrant:  # one opaque node per block in place of its ops
            ops = [d["op"] for _, d in g.nx.nodes(data=True)]
            assert ops.count("CheckpointFunctionBackward") == len(model.transformer.h)
            assert s["nodes"] < base["nodes"]
        else:
            assert s["nodes"] == base["nodes"]
    out.loss.backward()
    assert len(calls) == n + len(model.transformer.h)  # backward recomputes each block once, as it should


def test_gradients_after_capture_are_bit_identical():
    def grads(capture: bool):
        model = gpt2(checkpointing=True)
        out = model(ids(), labels=ids())
        if capture:
            for engine in ENGINES:
                gw.capture(out, module=model, engine=engine)
        out.loss.backward()
        return {k: p.grad.clone() for k, p in model.named_parameters()}

    a, b = grads(False), grads(True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_saved_parameters_dominate_a_small_gpt2():
    model = gpt2()
    s = gw.capture(model(ids(), labels=ids()), module=model).summary()
    assert s["saved_parameter_bytes"] + s["saved_activation_bytes"] == s["saved_bytes"]
    assert s["saved_parameter_bytes"] > 0 and s["saved_activation_bytes"] > 0
    json.dumps(s)
