"""Graphs of real models, captured with graphwidget (``gw.trace``, so nodes carry module paths), for the viewer's
tests and benchmarks. Nothing is downloaded: ``transformers`` builds GPT-2 and BERT from config objects with random
weights, and ``torch.nn.TransformerEncoder`` needs nothing at all.

Captures of the big ones take tens of seconds, so each graph is cached as JSON under ``tests/artifacts/graphs/``
(git-ignored), keyed by the model's configuration and the versions of torch, transformers and graphwidget.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
GRAPHS = ARTIFACTS / "graphs"
SCREENS = ARTIFACTS / "screens"


def _gpt2(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=layers, n_embd=64, n_head=2, vocab_size=100, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(cfg).eval(), (torch.randint(0, 100, (1, 16)),)


def _bert(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    import torch
    from transformers import BertConfig, BertModel
    cfg = BertConfig(num_hidden_layers=layers, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                     vocab_size=100)
    return BertModel(cfg).eval(), (torch.randint(0, 100, (1, 16)),)


def _encoder(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    import torch
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=2, dim_feedforward=128, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
    return enc.eval(), (torch.randn(1, 16, 64),)


#: name → (builder, layers, what it stands for). About 49 nodes per GPT-2 block, 54 per encoder layer.
MODELS: Dict[str, Tuple[Callable[[int], Tuple[Any, Tuple[Any, ...]]], int, str]] = {
    "encoder1": (_encoder, 1, "one TransformerEncoderLayer (~55 nodes)"),
    "gpt2_48": (_gpt2, 48, "GPT-2, 48 blocks (~2.4k nodes)"),
    "gpt2_60": (_gpt2, 60, "GPT-2, 60 blocks (~3k nodes)"),
    "bert_24": (_bert, 24, "BERT-large depth, 24 layers (~1.3k nodes)"),
    "encoder48": (_encoder, 48, "TransformerEncoder, 48 layers (~2.6k nodes)"),
    "gpt2_200": (_gpt2, 200, "GPT-2, 200 blocks (~10k nodes)"),
}


def _key(name: str) -> str:
    import torch

    import graphwidget
    try:
        import transformers
        tv = transformers.__version__
    except ImportError:
        tv = "none"
    _, layers, _ = MODELS[name]
    raw = f"{name}:{layers}:{torch.__version__}:{tv}:{graphwidget.__version__}"
    return hashlib.sha1(raw.encode()).hexdigest()[:12]


def model_graph(name: str) -> Dict[str, Any]:
    """The captured graph (schema dict) of model `name` (see MODELS), from the cache or captured now."""
    path = GRAPHS / f"{name}-{_key(name)}.json"
    if path.is_file():
        return json.loads(path.read_text())
    import torch

    import graphwidget as gw
    build, layers, _ = MODELS[name]
    torch.manual_seed(0)
    model, args = build(layers)
    graph = gw.trace(model, *args, title=name)
    doc = json.loads(graph.to_json())
    GRAPHS.mkdir(parents=True, exist_ok=True)
    for old in GRAPHS.glob(f"{name}-*.json"):
        if old != path:
            old.unlink(missing_ok=True)  # another pytest-xdist worker may have removed it first
    # one temporary file per process: two workers capturing the same model each write their own, then one replaces
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    return doc
