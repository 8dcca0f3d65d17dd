"""The exports for other tools open in those tools: a Chrome trace in speedscope, a Model Explorer graph in a local
Model Explorer server, both in headless Chromium (screenshots under tests/artifacts/)."""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

import graphwidget as gw

HERE = Path(__file__).resolve().parent
SPEEDSCOPE = HERE / "speedscope"
ARTIFACTS = HERE.parent / "artifacts"
#: software WebGL: Model Explorer draws its graph with WebGL, and there is no GPU here
WEBGL_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
              "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.out = torch.nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.fc(x)))


@pytest.fixture(scope="module")
def profiled() -> Any:
    m = Block()
    return gw.profile(lambda m, x: m(x).sum(), m, torch.randn(4, 8), repeat=3, module=m, title="block </script>")


@pytest.fixture(scope="module")
def speedscope_dir() -> Path:
    """speedscope's built app, installed once by npm into the node_modules folder beside its package.json."""
    release = SPEEDSCOPE / "node_modules" / "speedscope" / "dist" / "release"
    if not (release / "index.html").is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the speedscope test needs it (apt-get install npm) to install "
                        "speedscope into tests/browser/speedscope")
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=SPEEDSCOPE, check=True,
                       timeout=600)
    return release


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path, speedscope_dir: Path) -> Iterator[Any]:
    """A local HTTP server over a folder with speedscope's app and the trace (a file:// page may not fetch)."""
    root = tmp_path / "site"
    shutil.copytree(speedscope_dir, root)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", _free_port()), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield root, f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def test_chrome_trace_opens_in_speedscope(chromium: Any, served: Any, profiled: Any) -> None:
    root, base = served
    profiled.export_chrome_trace(root / "trace.json")
    page = chromium.new_page(viewport={"width": 1400, "height": 800})
    errors: list = []
    console: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: console.append(m.text))
    try:
        page.goto(f"{base}/index.html#profileURL={base}/trace.json")
        # speedscope names each profile (one per thread) after its process and thread names
        page.wait_for_function("() => document.body.innerText.includes('forward ops')", timeout=30000)
        text = page.inner_text("body")
        _shot(page, "speedscope_forward.png")
        assert "Something went wrong" not in text
        assert "(1/2)" in text  # one process, two threads: two profiles
        assert any("Importing as Trace Event Format" in m for m in console), console
        # events laid end to end must not overlap: speedscope says so when an end comes after the next start
        bad = [m for m in console if "Tried to end" in m or "still open" in m]
        assert not bad, bad[:3]
        page.keyboard.press("n")  # the next profile: the backward thread
        page.wait_for_function("() => document.body.innerText.includes('backward nodes')", timeout=10000)
        page.wait_for_timeout(500)
        _shot(page, "speedscope_backward.png")
        assert not errors, errors
    finally:
        page.close()


@pytest.fixture(scope="module")
def model_explorer_bin() -> str:
    exe = shutil.which("model-explorer") or str(Path(shutil.which("python") or "").parent / "model-explorer")
    import sys
    cand = Path(sys.executable).parent / "model-explorer"
    if cand.is_file():
        return str(cand)
    if not Path(exe).is_file():
        pytest.skip("model-explorer is not installed (pip install ai-edge-model-explorer: the dev extra has it)")
    return exe


def test_model_explorer_graph_opens_in_model_explorer(chromium: Any, tmp_path: Path, profiled: Any,
                                                      model_explorer_bin: str) -> None:
    paths = profiled.export_model_explorer(tmp_path / "g.json")
    port = _free_port()
    proc = subprocess.Popen([model_explorer_bin, str(paths[0]), f"--node_data_paths={paths[1]}", "--host",
                             "127.0.0.1", "--port", str(port), "--no_open_in_browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read(10)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"model-explorer did not serve: {proc.stdout.read() if proc.stdout else ''}")
                time.sleep(0.5)
        data = {"models": [{"url": str(paths[0])}], "nodeData": [str(paths[1])], "nodeDataTargets": [""]}
        ctx = chromium.browser_type.launch(executable_path=shutil.which("chromium"), headless=True,
                                           args=WEBGL_ARGS)
        try:
            page = ctx.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?data={urllib.parse.quote(json.dumps(data))}")
            page.wait_for_function("() => document.body.innerText.includes('op node count')", timeout=60000)
            page.wait_for_timeout(2000)
            text = page.inner_text("body")
            _shot(page, "model_explorer.png")
            assert "Unsupported JSON format" not in text and "Failed to" not in text
            n_nodes = len(profiled)
            assert f"{n_nodes} nodes" in text  # the graph selector: every node was read
            assert "block (Block)" not in text  # the top module is the graph itself, not a layer
            # the node-data panel lists every node by its op with its backward ms
            for op in {d["op"] for _, d in profiled.nx.nodes(data=True)}:
                assert op in text
            assert "block </script>: backward ms" in text  # a hostile title stays text
            # the canvas drew something: the screenshot's graph area is not one flat colour
            png = page.locator("canvas").first.screenshot()
            assert len(set(png[100:])) > 50
        finally:
            ctx.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
