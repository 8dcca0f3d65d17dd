"""Helpers for the real-JupyterLab tests: the server record, an offline Chromium page, and ``LabNotebook``."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterator, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "graphwidget" / "static" / "widget.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}
#: Root element of one rendered view; data-gw-state="ready" once it has drawn.
ROOT = ".graphwidget-root"
READY = '.graphwidget-root[data-gw-state="ready"]'


def missing_prerequisite() -> Optional[str]:
    if CHROMIUM is None:
        return "Chromium not found (apt-get install -y chromium)"
    if not BUNDLE.exists():
        return f"widget bundle {BUNDLE.relative_to(REPO)} not built (cd js && npm install && npm run build)"
    # find_spec, not import: importing jupyterlab takes seconds, and this runs when pytest collects the module
    for name in ("jupyterlab", "playwright"):
        if importlib.util.find_spec(name) is None:  # pragma: no cover - dev extras missing
            return f"{name} not installed (pip install -e '.[dev]')"
    return None


def missing_notebook7() -> Optional[str]:
    """Why the Notebook 7 tests cannot run (``missing_prerequisite`` plus the ``notebook`` package), or None."""
    reason = missing_prerequisite()
    if reason is not None:
        return reason
    try:
        version = importlib.metadata.version("notebook")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - dev extras missing
        return "notebook (Jupyter Notebook 7) not installed (pip install -e '.[dev]')"
    major = version.split(".")[0]
    if not major.isdigit() or int(major) < 7:
        return f"notebook {version} is not Notebook 7 (pip install 'notebook>=7')"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    url: str
    root: Path
    log: Path
    proc: subprocess.Popen = field(repr=False)

    def write_notebook(self, name: str, cells: Sequence[str]) -> str:
        """Write ``name`` (code cells, python3 kernel) into the server's root; returns its /lab URL."""
        import nbformat
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        nbformat.write(nb, str(self.root / name))
        return f"{self.url}/lab/tree/{urllib.parse.quote(name)}?reset"

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def as_point(pos: Any) -> Tuple[float, float]:
    """A screen position from the widget's API (``{x, y}`` or ``[x, y]``) as floats."""
    if isinstance(pos, dict):
        return float(pos["x"]), float(pos["y"])
    x, y = pos
    return float(x), float(y)


def clickable_node(nb: "LabNotebook", root: Any, skip: Collection[Any] = ()) -> Tuple[int, float, float]:
    """A drawn node (none of ``skip``) whose screen position really is the view's canvas (no panel over it): its id
    and where to click."""
    for node in nb.api(root, "gw.visibleNodeIds()"):
        if node in skip:
            continue
        pos = nb.api(root, "gw.nodeScreenPosition(arg)", node)
        if pos is None:
            continue
        x, y = as_point(pos)
        hit = root.evaluate("(el, [x, y]) => { const t = document.elementFromPoint(x, y);"
                            " return !!t && t.tagName === 'CANVAS' && el.contains(t); }", [x, y])
        if hit:
            return int(node), x, y
    raise AssertionError("no drawn node of the widget is under the pointer anywhere")


@contextmanager
def jupyter_server(base: Path, app: str = "lab", timeout: float = 60) -> Iterator[Lab]:
    """A JupyterLab (``app="lab"``) or Notebook 7 (``app="notebook"``) server on loopback: free port, token and
    password off, every Jupyter/IPython dir under ``base``, the announcements pop-up and news/update checks off, the
    app exposed as ``window.jupyterapp``. Stopped by its PID (SIGTERM, then SIGKILL) on exit."""
    root, config, runtime, data, ipython, settings, workspaces = (
        base / d for d in ("root", "config", "runtime", "data", "ipython", "settings", "workspaces"))
    for d in (root, config / "labconfig", runtime, data, ipython, settings, workspaces):
        d.mkdir(parents=True, exist_ok=True)
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
    # Notebook 7 runs the jupyterlab server extension too: its news/update checks stay off the same way.
    settings_of = "LabApp" if app == "lab" else "JupyterNotebookApp"
    cmd = [sys.executable, "-m", "jupyter", app, "--no-browser", "--allow-root", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           f"--{settings_of}.user_settings_dir={settings}", f"--{settings_of}.workspaces_dir={workspaces}",
           "--expose-app-in-browser"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Lab(url=url, root=root, log=log, proc=proc)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter {app} did not start in {timeout:.0f} s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(timeout=5)


@dataclass
class Offline:
    """Requests the page tried to send off the machine (all aborted) and uncaught page errors."""
    external: List[str] = field(default_factory=list)
    page_errors: List[str] = field(default_factory=list)
    dialogs: List[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.external == [], f"requests to non-loopback hosts: {self.external}"
        assert self.dialogs == [], f"unexpected dialogs: {self.dialogs}"
        ours = [e for e in self.page_errors if "graphwidget" in e or "anywidget" in e]
        assert ours == [], f"page errors from the widget: {ours}"


def new_offline_page(browser: Any) -> Any:
    """A page in a fresh context (its own storage) that aborts and records every non-loopback request."""
    # downloads accepted: the viewer's Save menu is tested here too (a download is a local blob, never a request)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    offline = Offline()

    def route(r: Any) -> None:
        u = urllib.parse.urlsplit(r.request.url)
        if u.scheme in ("http", "https", "ws", "wss") and u.hostname not in LOOPBACK:
            offline.external.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.on("pageerror", lambda e: offline.page_errors.append(str(e)))

    def dialog(d: Any) -> None:
        offline.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.gw_offline = offline  # type: ignore[attr-defined]
    return page


class LabNotebook:
    """One notebook open in JupyterLab: run cells, read outputs, use the widget's automation API."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.offline: Offline = page.gw_offline
        page.goto(url)
        self.panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        self.panel.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=30_000)
        self.wait_idle(timeout=60_000)

    # -- kernel -------------------------------------------------------------------------------------------------
    def wait_idle(self, timeout: float = 30_000) -> None:
        """Wait until the notebook's kernel exists and is idle (the app's own state, not the toolbar icon)."""
        self.page.wait_for_function(
            """() => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                const sc = w && w.sessionContext;
                return !!(sc && sc.isReady && sc.session && sc.session.kernel
                          && sc.session.kernel.status === 'idle');
            }""", timeout=timeout)

    # -- cells --------------------------------------------------------------------------------------------------
    def cell(self, i: int) -> Any:
        return self.panel.locator(".jp-Notebook .jp-Cell").nth(i)

    def run(self, i: int, timeout: float = 60_000) -> Any:
        """Run cell ``i`` the way a user does (click its editor, Shift+Enter) and wait until it has finished."""
        cell = self.cell(i)
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Shift+Enter")
        # The prompt shows [*] while queued/running and [N] when done.
        self.page.wait_for_function(
            """(i) => {
                const cells = document.querySelectorAll(
                    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
                const p = cells[i] && cells[i].querySelector('.jp-InputPrompt');
                return !!p && /\\[\\d+\\]/.test(p.textContent || '');
            }""", arg=i, timeout=timeout)
        self.wait_idle(timeout=timeout)
        return cell

    def output_text(self, i: int) -> str:
        return self.cell(i).locator(".jp-OutputArea").inner_text()

    def wait_output(self, i: int, text: str, timeout: float = 30_000) -> None:
        self.cell(i).locator(".jp-OutputArea-output", has_text=text).first.wait_for(timeout=timeout)

    # -- the widget ---------------------------------------------------------------------------------------------
    def widget_root(self, i: int, timeout: float = 30_000) -> Any:
        """The ready ``.graphwidget-root`` in cell ``i``'s output (waits for data-gw-state="ready")."""
        root = self.cell(i).locator(READY).first
        try:
            root.wait_for(timeout=timeout)
        except Exception:
            raise AssertionError(f"no ready widget in cell {i}; output: {self.output_text(i)!r}; "
                                 f"page errors: {self.offline.page_errors}") from None
        return root

    def api(self, root: Any, expr: str, arg: Any = None) -> Any:
        """Evaluate ``expr`` with ``gw`` bound to the view's automation API (``el.graphwidget``)."""
        return root.evaluate(f"(el, arg) => {{ const gw = el.graphwidget; return ({expr}); }}", arg)


