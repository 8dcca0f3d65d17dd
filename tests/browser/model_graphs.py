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
    doc = json.loads(graph.to_json(version=1))  # the record form: tests read nodes[i]
    GRAPHS.mkdir(parents=True, exist_ok=True)
    for old in GRAPHS.glob(f"{name}-*.json"):
        if old != path:
            old.unlink(missing_ok=True)  # another pytest-xdist worker may have removed it first
    # one temporary file per process: two workers capturing the same model each write their own, then one replaces
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    return doc


# ---- the "first view" models: what a new user opens (docs/viewer.md, "The first view") ----------------------------
#
# Each is built by hand (no torchvision), captured two ways: `gw.trace(model, x)` (nodes carry module paths) and the
# plain `gw.capture(loss, module=model)` (only parameter names, unless Python infers the modules). Until every graph
# carries `meta.modules` ({path: class name}), the fixture adds it from the model, as Python will.


def _decoder(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    import torch
    from torch import nn

    class CausalSelfAttention(nn.Module):
        def __init__(self, d: int, heads: int, ctx: int) -> None:
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)).bool(), persistent=False)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))

    class MLP(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, 4 * d)
            self.act = nn.GELU()
            self.out = nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            return self.out(self.act(self.fc(x)))

    class DecoderBlock(nn.Module):
        def __init__(self, d: int, heads: int, ctx: int) -> None:
            super().__init__()
            self.ln1, self.attn = nn.LayerNorm(d), CausalSelfAttention(d, heads, ctx)
            self.ln2, self.mlp = nn.LayerNorm(d), MLP(d)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class Decoder(nn.Module):
        def __init__(self, n: int, d: int = 64, heads: int = 4, ctx: int = 16, vocab: int = 100) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList(DecoderBlock(d, heads, ctx) for _ in range(n))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

    return Decoder(layers).eval(), (torch.randint(0, 100, (2, 16)),)


def _resnet(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    """ResNet-34's shape (3, 4, 6, 3 basic blocks) at small widths: conv, batch norm, residual, downsampling."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x: Any) -> Any:
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class ResNet(nn.Module):
        def __init__(self, blocks: Tuple[int, ...] = (3, 4, 6, 3), width: int = 8, classes: int = 10) -> None:
            super().__init__()
            self.conv1, self.bn1, self.relu = nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
            stages, cin = [], width
            for k, n in enumerate(blocks):
                cout = width * 2 ** k
                stages.append(nn.Sequential(*(BasicBlock(cin if j == 0 else cout, cout, 2 if (j == 0 and k) else 1)
                                              for j in range(n))))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(cin, classes)

        def forward(self, x: Any) -> Any:
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.pool(x).flatten(1))

    return ResNet().train(), (torch.randn(2, 3, 16, 16),)


def _gpt2_wide(layers: int) -> Tuple[Any, Tuple[Any, ...]]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=layers, n_embd=256, n_head=4, vocab_size=100, n_positions=64, bos_token_id=0,
                     eos_token_id=0)
    return GPT2LMHeadModel(cfg).eval(), (torch.randint(0, 100, (1, 16)),)


#: name → (builder, layers, what it stands for); each is opened as `<name>-trace` and `<name>-capture`
OVERVIEW: Dict[str, Tuple[Callable[[int], Tuple[Any, Tuple[Any, ...]]], int, str]] = {
    "decoder12": (_decoder, 12, "a 12-block decoder written by hand (attention + MLP)"),
    "resnet34": (_resnet, 0, "a ResNet-34-shaped conv net written by hand (conv, BN, residual blocks)"),
    "gpt2_12": (_gpt2_wide, 12, "transformers GPT-2, 12 blocks × 256"),
}


def module_classes(model: Any) -> Dict[str, str]:
    """{module path: class name}, as Python's meta.modules has it ("" is the model itself)."""
    return {path: type(m).__name__ for path, m in model.named_modules()}


def overview_graph(name: str, how: str) -> Dict[str, Any]:
    """The graph (schema dict) of OVERVIEW model `name`, traced (`how="trace"`) or captured from its loss
    (`how="capture"`), cached like model_graph."""
    import graphwidget
    # a plain capture's module paths are inferred (capturing/modules.py): a change there is a new graph
    rules = (hashlib.sha1((Path(graphwidget.__file__).parent / "capturing" / "modules.py").read_bytes()).hexdigest()
             if how == "capture" else "")
    key = hashlib.sha1(f"overview:{name}:{how}:{_key_versions()}:{graphwidget.__version__}:{rules}".encode()).hexdigest()[:12]
    path = GRAPHS / f"{name}-{how}-{key}.json"
    if path.is_file():
        return json.loads(path.read_text())
    import torch

    import graphwidget as gw
    build, layers, _ = OVERVIEW[name]
    torch.manual_seed(0)
    model, args = build(layers)
    if how == "trace":
        graph = gw.trace(model, *args, title=f"{name} (trace)")
    else:
        out = model(*args)
        loss = (out.logits if hasattr(out, "logits") else out).float().square().mean()
        graph = gw.capture(loss, module=model, title=f"{name} (capture)")
    doc = json.loads(graph.to_json(version=1))  # the record form: tests read nodes[i]
    doc["meta"].setdefault("modules", module_classes(model))
    GRAPHS.mkdir(parents=True, exist_ok=True)
    for old in GRAPHS.glob(f"{name}-{how}-*.json"):
        old.unlink()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    return doc


def _key_versions() -> str:
    import torch
    try:
        import transformers
        tv = transformers.__version__
    except ImportError:
        tv = "none"
    return f"{torch.__version__}:{tv}"
