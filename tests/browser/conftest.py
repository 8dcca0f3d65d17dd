"""Shared Chromium for the browser tests (Debian's chromium through Playwright; see shared/TESTING.md).

Tests are skipped only when no chromium binary is on PATH (CI installs it, so there they run).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pagekit import ARGS, STATIC, Watched


def pytest_collection_modifyitems(items: List[Any]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)


# Module scope, not session: Playwright's sync API allows one running instance per thread, and tests/jupyter keeps
# its own session-wide one. A session-wide fixture here would make whichever folder runs second fail to start.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed (apt-get install chromium; `make browser` does it): browser tests skipped")
    if not (STATIC / "viewer.js").is_file() or not (STATIC / "widget.js").is_file():
        pytest.fail("the front end is not built: run `cd js && npm install && npm run build` (make test does)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
        yield b
        b.close()


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
