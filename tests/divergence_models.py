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
