"""Counts and module lists that the docs state and the code knows are read from the code, so a new rule, module
or facade that is not written down fails here instead of leaving stale words."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layers import FACADES

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "graphwidget"
NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}


def _number(word: str) -> int:
    return NUMBERS[word.lower()] if word.lower() in NUMBERS else int(word)


def _modules(folder: Path) -> list:
    """The modules and subpackages of a package folder."""
    mods = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    return sorted(mods + [p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()])


def test_the_advisors_rule_counts_are_the_registrys() -> None:
    from graphwidget.analysis.advisor import RULES
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.findall(r"\b(\w+) rules: `", readme)
    assert said and all(_number(w) == len(RULES) for w in said), (said, len(RULES))
    assert all(f"`{r}`" in readme for r in RULES)  # the README's list names every rule
    advisor = (ROOT / "docs" / "advisor.md").read_text(encoding="utf-8")
    totals = re.findall(r"of its (\w+) rules", advisor)
    assert totals and all(_number(w) == len(RULES) for w in totals), (totals, len(RULES))


def test_the_facade_count_in_internals_is_the_layer_tests() -> None:
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    (word,) = re.findall(r"\*\*Facades\*\*: (\w+) lazy upward imports", text)
    assert _number(word) == len(FACADES)


def test_the_stage_table_names_every_module() -> None:
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)/` \|.*$", text, re.M)}
    stages = sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert sorted(rows) == stages
    missing = {s: [m for m in _modules(PKG / s) if not re.search(rf"`{re.escape(m)}(\.py|/)`", rows[s])]
               for s in stages}
    assert not {s: m for s, m in missing.items() if m}, missing


def test_a_package_docstring_that_lists_its_modules_lists_them_all() -> None:
    partial = {}
    for init in sorted(PKG.rglob("__init__.py")):
        if init.parent == PKG:  # the package itself names its stages; the stage table above checks those
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        mods = _modules(init.parent)
        named = [m for m in mods if re.search(rf"``{re.escape(m)}``", doc)]
        if named and len(named) < len(mods):
            partial[str(init.relative_to(ROOT))] = sorted(set(mods) - set(named))
    assert not partial, partial


def test_the_api_page_lists_every_public_name_with_the_signature_the_code_has() -> None:
    import inspect

    import graphwidget as gw
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    headings = " ".join(re.findall(r"^### (.+)$", text, re.M))
    missing = [n for n in gw.__all__ if f"`gw.{n}`" not in headings]
    assert not missing, f"docs/api.md has no heading for {missing}"
    dispatchers = {"compare", "diff"}  # their typed forms (overloads) are listed instead: test_public_api checks them
    for name in gw.__all__:
        obj = getattr(gw, name)
        if name in dispatchers or inspect.isclass(obj) or not callable(obj):
            continue
        sig = str(inspect.signature(obj)).replace("'", "")
        assert f"gw.{name}{sig}" in text, f"docs/api.md: gw.{name}'s signature is now\n  gw.{name}{sig}"
    for returns in ("-> Diff", "-> MultiDiff"):
        assert sum(line.startswith("gw.compare(") and line.endswith(returns) for line in text.splitlines()) >= 1
        assert sum(line.startswith("gw.diff(") and line.endswith(returns) for line in text.splitlines()) == 1
