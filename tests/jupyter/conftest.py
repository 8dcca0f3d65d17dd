"""A real JupyterLab server on loopback and Debian's Chromium driven by Playwright (recipe: /work/shared/TESTING.md).

* ``lab``: one server for the whole session (free port, token disabled, every Jupyter/IPython dir a temp dir, the
  news pop-up disabled, ``--expose-app-in-browser`` so tests can ask the app whether the kernel is idle).
* ``browser``: one headless Chromium; ``lab_page`` gives each test a fresh context whose requests to anything but
  loopback are recorded and aborted (and must not happen).
* ``lab_helpers.LabNotebook``: open a notebook written with nbformat, wait for its kernel, run cells, read outputs,
  and reach the widget's automation API (``.graphwidget-root`` -> ``el.graphwidget``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, List

import pytest
from lab_helpers import REPO, Lab, free_port, missing_prerequisite, new_offline_page


def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    reason = missing_prerequisite()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    root, config, runtime, data, ipython, settings, workspaces = (
        base / d for d in ("root", "config", "runtime", "data", "ipython", "settings", "workspaces"))
    for d in (root, config / "labconfig", runtime, data, ipython, settings, workspaces):
        d.mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    env = dict(os.environ)
    env.update({
        "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_DATA_DIR": str(data),
        "IPYTHONDIR": str(ipython),
        # The kernel runs in the notebook's directory: make the working tree importable there.
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    })
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = base / "server.log"
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={workspaces}",
           "--expose-app-in-browser"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Lab(url=url, root=root, log=log, proc=proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not start in 60 s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(timeout=5)


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
