"""Shared fixtures: one Chromium for the whole test session (Debian's chromium driven by Playwright; see "Browser
tests" in CONTRIBUTING.md), and IPython's own test shell with graphwidget's magics loaded.

Playwright's sync API allows one running instance per thread, so the browser tests and the JupyterLab tests share
this one instead of each starting their own.
"""
from __future__ import annotations

import shutil
import signal
import sys
from typing import Any, Callable, Dict, Iterator

import pytest

# A shell without job control starts a background command (`make test &`, a CI runner's `cmd &`) with Ctrl-C
# ignored, and every process it starts inherits that: the tests of real Ctrl-C (in this process and in the command
# line's subprocesses) would then see no interrupt at all. They test what a user at a terminal gets, so Ctrl-C is
# given back its default meaning here; a child process started by a test then installs Python's own handler again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The host-resolver rule stops Chromium's own background look-ups: a test then sees zero outside traffic.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


@pytest.fixture(autouse=True)
def _same_random_numbers_in_any_order() -> None:
    """torch's global generator starts every test from the same seed. Serially a test's unseeded inputs were fixed by
    the tests that ran before it in the process; under pytest-xdist those vary from run to run (which worker, which
    order), and one rare draw broke a float32 tolerance (test_timing's native-hooks gradient check). Now a test's
    random numbers depend on neither. (Only when torch is loaded: browser tests need not import it.)"""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


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


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    """IPython's test shell (one per process: start_ipython() returns None once another module started it) with
    ``%load_ext graphwidget`` done."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    shell = start_ipython() or get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "graphwidget")
    yield shell


@pytest.fixture()
def user_ns(ip: Any) -> Iterator[Callable[[str], Dict[str, Any]]]:
    """``user_ns(setup)`` runs ``setup`` in the shared shell and returns its user namespace; after the test the
    namespace is put back as it was (for a test file's own ``ns`` fixture)."""
    saved = dict(ip.user_ns)

    def run(setup: str) -> Dict[str, Any]:
        ip.run_cell(setup, store_history=False)
        return ip.user_ns

    yield run
    ip.user_ns.clear()
    ip.user_ns.update(saved)
