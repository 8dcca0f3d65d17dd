"""Shared Chromium for the browser tests (Debian's chromium through Playwright; see CONTRIBUTING.md).

Tests are skipped only when no chromium binary is on PATH (CI installs it, so there they run).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pagekit import STATIC, Watched


def pytest_collection_modifyitems(items: List[Any]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser(chromium: Any) -> Any:
    """The session's Chromium (tests/conftest.py), once the front end is known to be built."""
    if not (STATIC / "viewer.js").is_file() or not (STATIC / "widget.js").is_file():
        pytest.fail("the front end is not built: run `cd js && npm install && npm run build` (make test does)")
    return chromium


@pytest.fixture
def watched(browser: Any) -> Iterator[Any]:
    pages: List[Watched] = []

    def make(**kw: Any) -> Watched:
        w = Watched(browser, **kw)
        pages.append(w)
        return w

    yield make
    for w in pages:
        w.close()
