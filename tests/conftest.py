"""One Chromium for the whole test session (Debian's chromium driven by Playwright; see shared/TESTING.md).

Playwright's sync API allows one running instance per thread, so the browser tests and the JupyterLab tests share
this one instead of each starting their own.
"""
from __future__ import annotations

import shutil
from typing import Any, Iterator

import pytest

#: The host-resolver rule stops Chromium's own background look-ups: a test then sees zero outside traffic.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed (apt-get install chromium; `make browser` does it): browser tests "
                    "skipped")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
