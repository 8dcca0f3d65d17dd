"""Small decoders written twice for tests/test_divergence.py and tests/bench/bench_divergence.py: the same maths
under other module names, each with its own copy of the weights loaded through a renaming state_dict map, and
variants with one change injected (a bug in one block, a detached residual, a GELU variant in one layer)."""
from __future__ import annotations

import math
from typing import Dict, Optional

import torch
from torch import nn
from torch.nn import functional as F


class AttnA(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads
        q = self.q(x).view(b, t, h, d // h).transpose(1, 2)
        k = self.k(x).view(b, t, h, d // h).transpose(1, 2)
        v = self.v(x).view(b, t, h, d // h).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(s, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class BlockA(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = AttnA(d, heads)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class DecoderA(nn.Module):
    """Written once: ``blocks.i.attn.q`` ..."""

    def __init__(self, d: int = 32, heads: int = 4, n: int = 4, vocab: int = 50) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(BlockA(d, heads) for _ in range(n))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x)).logsumexp(-1).mean()


class SelfAttentionB(nn.Module):
    def __init__(self, d: int, heads: int, bug: Optional[str] = None) -> None:
        super().__init__()
        self.n_head, self.bug = heads, bug
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        b, t, d = hidden.shape
        hd = d // self.n_head
        q = self.q_proj(hidden).view(b, t, self.n_head, hd).transpose(1, 2)
        k = self.k_proj(hidden).view(b, t, self.n_head, hd).transpose(1, 2)
        v = self.v_proj(hidden).view(b, t, self.n_head, hd).transpose(1, 2)
        scale = math.sqrt(d) if self.bug == "scale" else math.sqrt(hd)
        scores = (q @ k.transpose(-2, -1)) / scale  # the scale bug: sqrt(d), not sqrt(head_dim)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, t, d))


class LayerB(nn.Module):
    def __init__(self, d: int, heads: int, bug: Optional[str] = None) -> None:
        super().__init__()
        self.bug = bug
        self.norm_attn, self.norm_mlp = nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = SelfAttentionB(d, heads, bug)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.bug == "detach":
            h = h.detach() + self.self_attn(self.norm_attn(h))  # the detached residual
        else:
            h = h + self.self_attn(self.norm_attn(h))
        if self.bug == "gelu":
            act = F.gelu(self.up(self.norm_mlp(h)), approximate="tanh")  # the GELU variant
        else:
            act = F.gelu(self.up(self.norm_mlp(h)))
        return h + self.down(act)


class DecoderB(nn.Module):
    """Written again: ``layers.i.self_attn.q_proj`` ...; ``bug`` (``"scale"``, ``"detach"``, ``"gelu"``) in layer
    ``at``."""

    def __init__(self, d: int = 32, heads: int = 4, n: int = 4, vocab: int = 50, bug: Optional[str] = None,
                 at: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LayerB(d, heads, bug if i == at else None) for i in range(n))
        self.final_norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.final_norm(h)).logsumexp(-1).mean()


RENAME = [("emb.", "tok."), ("blocks.", "layers."), ("attn.q.", "self_attn.q_proj."),
          ("attn.k.", "self_attn.k_proj."), ("attn.v.", "self_attn.v_proj."), ("attn.o.", "self_attn.out_proj."),
          ("ln1.", "norm_attn."), ("ln2.", "norm_mlp."), ("fc1.", "up."), ("fc2.", "down."), ("ln.", "final_norm."),
          ("head.", "lm_head.")]


def renamed(state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """A's state_dict under B's names (copies: B holds its own weights)."""
    out = {}
    for k, v in state.items():
        for a, b in RENAME:
            if k.startswith(a) or f".{a}" in k:
                k = k.replace(a, b, 1) if k.startswith(a) else k.replace(f".{a}", f".{b}", 1)
        out[k] = v.clone()
    return out


def pair(bug: Optional[str] = None, at: int = 2, n: int = 4, seed: int = 0):
    """(A, B, ids): A, and B loaded from A's weights through the renaming map."""
    torch.manual_seed(seed)
    a = DecoderA(n=n)
    b = DecoderB(n=n, bug=bug, at=at)
    b.load_state_dict(renamed(a.state_dict()))
    ids = torch.randint(0, 50, (2, 12))
    return a, b, ids


# -- three ports whose structure differs, each with its own weights loaded through a state_dict map ----------------
class FusedAttn(nn.Module):
    """One ``qkv`` Linear, split."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d)).square().mean()


class SplitAttn(nn.Module):
    """Separate ``to_q``/``to_k``/``to_v`` (``bug="softmax"``: softmax over the wrong axis)."""

    def __init__(self, d: int = 32, heads: int = 4, bug: Optional[str] = None) -> None:
        super().__init__()
        self.heads, self.bug = heads, bug
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (f(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for f in (self.to_q, self.to_k, self.to_v))
        s = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        p = torch.softmax(s, dim=-2 if self.bug == "softmax" else -1)  # the softmax bug
        return self.to_out((p @ v).transpose(1, 2).reshape(b, t, d)).square().mean()


def fused_to_split(state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    w, bias = state["qkv.weight"], state["qkv.bias"]
    out = {f"to_{n}.weight": w[i * (w.shape[0] // 3):(i + 1) * (w.shape[0] // 3)].clone() for i, n in
           enumerate("qkv")}
    out.update({f"to_{n}.bias": bias[i * (bias.shape[0] // 3):(i + 1) * (bias.shape[0] // 3)].clone() for i, n in
                enumerate("qkv")})
    out["to_out.weight"], out["to_out.bias"] = state["proj.weight"].clone(), state["proj.bias"].clone()
    return out


class HFAttn(nn.Module):
    """``q_proj``/``k_proj``/``v_proj``/``o_proj``: SplitAttn's maths under other names."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(b, t, d)).square().mean()


def split_to_hf(state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    names = {"to_q": "q_proj", "to_k": "k_proj", "to_v": "v_proj", "to_out": "o_proj"}
    return {names[k.split(".")[0]] + "." + k.split(".")[1]: v.clone() for k, v in state.items()}


class MLPModule(nn.Module):
    """A block as a Module."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + self.fc2(F.gelu(self.fc1(x)))).square().mean()


def mlp_block(x: torch.Tensor, p: Dict[str, torch.Tensor], bug: bool = False) -> torch.Tensor:
    """The same block as a function of a parameter dict (``bug``: ReLU for GELU)."""
    h = F.linear(x, p["w_in"], p["b_in"])
    h = F.relu(h) if bug else F.gelu(h)  # the activation bug
    return (x + F.linear(h, p["w_out"], p["b_out"])).square().mean()


def module_to_params(state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    names = {"fc1.weight": "w_in", "fc1.bias": "b_in", "fc2.weight": "w_out", "fc2.bias": "b_out"}
    return {names[k]: v.clone().requires_grad_(True) for k, v in state.items()}
