"""A real JupyterLab server on loopback and Debian's Chromium driven by Playwright (set-up: CONTRIBUTING.md).

* ``lab``: one server for the whole session (free port, token disabled, every Jupyter/IPython dir a temp dir, the
  news pop-up disabled, ``--expose-app-in-browser`` so tests can ask the app whether the kernel is idle).
* ``browser``: one headless Chromium; ``lab_page`` gives each test a fresh context whose requests to anything but
  loopback are recorded and aborted (and must not happen).
* ``lab_helpers.LabNotebook``: open a notebook written with nbformat, wait for its kernel, run cells, read outputs,
  and reach the widget's automation API (``.graphwidget-root`` -> ``el.graphwidget``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, List

import pytest
from lab_helpers import Lab, jupyter_server, missing_prerequisite, new_offline_page


def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    reason = missing_prerequisite()
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            # under pytest-xdist (--dist loadgroup) one worker runs them all: one JupyterLab server (the session
            # fixture below) and one Notebook 7 server for the run, not one per worker
            item.add_marker(pytest.mark.xdist_group("jupyter"))
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with jupyter_server(tmp_path_factory.mktemp("lab"), "lab") as server:
        yield server


@pytest.fixture(scope="session")
def browser(chromium: Any) -> Any:
    """The session's Chromium (tests/conftest.py)."""
    return chromium


@pytest.fixture()
def lab_page(browser: Any) -> Iterator[Any]:
    page = new_offline_page(browser)
    try:
        yield page
        page.gw_offline.assert_clean()
    finally:
        page.context.close()
