"""One finding of the advisor: which rule, where in the user's code, what happens, what to write instead, and the
numbers that prove it. Plain data (its JSON form is ``docs/schema.md``, keys :data:`graphwidget.model.schema.
FINDING_KEYS`), so findings travel with a graph and load without torch."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ...model.schema import FINDING_KEYS, FINDING_SEVERITIES

__all__ = ["Finding", "short_source"]


def short_source(source: Optional[str]) -> str:
    """``/long/path/model.py:42`` -> ``model.py:42`` (what a one-line report shows); ``?`` when unknown."""
    if not source:
        return "?"
    path, sep, line = source.rpartition(":")
    if not sep or not line.isdigit():
        return os.path.basename(source) or source
    return f"{os.path.basename(path) or path}:{line}"


@dataclass
class Finding:
    """A known slow pattern found in a graph, tied to the forward line that causes it.

    ``rule`` is a stable id (``"repeat-broadcast"``); ``severity`` is ``"warning"`` (costs real time or memory in
    this graph) or ``"info"`` (worth knowing, may be fine); ``nodes`` are the node ids involved, the cause first;
    ``source``/``code``/``module`` name the user's line (``None`` on graphs captured without ``gw.trace``);
    ``message`` says what happens and why it is slow, with the numbers; ``suggestion`` is the rewrite (code where
    possible); ``evidence`` holds those numbers (``bytes``, ``grad_bytes``, and ``bwd_ms``/``share_of_backward``
    when the graph was profiled; see ``docs/advisor.md`` for every key).

    >>> f = g.advise()[0]                       # doctest: +SKIP
    >>> str(f)                                  # doctest: +SKIP
    'warning repeat-broadcast homography.py:54: `h = homo.unsqueeze(1).repeat(...)` materialises ...'
    """

    rule: str
    severity: str
    nodes: List[int]
    message: str
    suggestion: Optional[str] = None
    source: Optional[str] = None
    code: Optional[str] = None
    module: Optional[str] = None
    evidence: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in FINDING_SEVERITIES:
            raise ValueError(f"Finding.severity must be one of {FINDING_SEVERITIES}; got {self.severity!r}.")

    def __str__(self) -> str:
        return f"{self.severity} {self.rule} {short_source(self.source)}: {self.message}"

    @property
    def share(self) -> Optional[float]:
        """The fraction of the graph's cost this finding accounts for (``evidence["share"]``): of the measured
        backward time when profiled, else of what the rule counts (gradient bytes, nodes, saved bytes)."""
        v = self.evidence.get("share")
        return float(v) if isinstance(v, (int, float)) else None

    def to_dict(self) -> Dict[str, Any]:
        """The JSON form (``docs/schema.md``, "Findings"): keys in :data:`FINDING_KEYS` order."""
        return {k: (list(self.nodes) if k == "nodes" else dict(self.evidence) if k == "evidence"
                    else getattr(self, k)) for k in FINDING_KEYS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Finding":
        """Read back what :meth:`to_dict` wrote (e.g. ``graph.findings`` of a loaded graph)."""
        if not isinstance(d, Mapping):
            raise TypeError(f"Finding.from_dict expects a dict as written by Finding.to_dict(); got "
                            f"{type(d).__name__}.")
        missing = [k for k in ("rule", "severity", "nodes", "message") if k not in d]
        if missing:
            raise ValueError(f"Finding.from_dict: the dict lacks {', '.join(missing)}; pass a dict written by "
                             f"Finding.to_dict() (keys: {', '.join(FINDING_KEYS)}).")
        return cls(rule=str(d["rule"]), severity=str(d["severity"]), nodes=[int(n) for n in d["nodes"]],
                   message=str(d["message"]), suggestion=d.get("suggestion"), source=d.get("source"),
                   code=d.get("code"), module=d.get("module"), evidence=dict(d.get("evidence") or {}))
