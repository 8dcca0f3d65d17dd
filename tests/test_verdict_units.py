"""Every figure of the maths verdict says what it is (issue 33): relative (to what) and absolute, and the
parameters that get no gradient on one side are named, all of them. Truth: the differences computed by hand in
float64 on the models built here."""
from __future__ import annotations

import re

import torch
from torch import nn

import graphwidget as gw


def test_a_difference_is_given_relative_and_absolute() -> None:
    torch.manual_seed(0)
    x = (torch.randn(64, 8) * 100).requires_grad_()

    def a(t: torch.Tensor) -> torch.Tensor:
        return t * 2.0

    def b(t: torch.Tensor) -> torch.Tensor:
        return t * 2.0 + 3.0  # off by 3 everywhere

    d = gw.compare(a, b, x, budget=0.3)
    s = d.sentence()
    m = re.search(r"output differs in float64 by ([0-9.e+-]+) relative to its largest value \(([0-9.e+-]+) "
                  r"absolute\)", s)
    assert m, s
    x64 = x.detach().double()
    hand_abs = ((x64 * 2 + 3) - x64 * 2).abs().max().item()
    hand_rel = hand_abs / (x64 * 2 + 3).abs().max().item()
    assert abs(float(m.group(2)) - hand_abs) <= 1e-3 * hand_abs
    assert abs(float(m.group(1)) - hand_rel) <= 0.06 * hand_rel  # printed to two figures
    assert "rounding explains" in s and "relative" in s.split("rounding explains")[1]


class Four(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.p1, self.p2 = nn.Linear(4, 4), nn.Linear(4, 4)


def test_every_parameter_without_a_gradient_on_one_side_is_named() -> None:
    torch.manual_seed(0)
    m = Four()
    x = torch.randn(3, 4)

    def a(t: torch.Tensor) -> torch.Tensor:
        return (m.used(t) + m.p1(t) + m.p2(t)).sum()

    def b(t: torch.Tensor) -> torch.Tensor:
        return m.used(t).sum() * 1.0 + 0.0 * 0  # p1 and p2 get no gradient here

    d = gw.compare(a, b, x, budget=0.3)
    s = d.sentence()
    assert "NOT EQUIVALENT" in s and "more" not in s, s
    names = [n for n in ("p1.weight", "p1.bias", "p2.weight", "p2.bias")]
    assert all(n in s for n in names), s
    assert "only in A, none in B" in s, s


def test_the_same_maths_sentence_labels_its_figures() -> None:
    torch.manual_seed(0)
    x = torch.randn(32, 8)
    w = torch.randn(8, 8, requires_grad=True)
    d = gw.compare(lambda t: (t @ w).sum(), lambda t: (t @ w.t().t()).sum(), x, budget=0.3)
    text = d.report()
    assert "relative to each tensor's largest value" in text and "absolute" in text, text
