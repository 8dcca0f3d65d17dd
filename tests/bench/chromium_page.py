"""What the browser benchmarks share: Chromium's flags (network refused, as in the browser tests) and opening a page
until the viewer says it is ready, with the wall time and the CPU time Chromium itself reports.

On a machine shared with other jobs the wall time follows the load; the CPU seconds of the page's main thread and
of its renderer process (main thread + layout workers) hardly do, so each benchmark prints both.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict

ARGS = ["--no-sandbox", "--disable-gpu",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]
API = "document.querySelector('.graphwidget-root').graphwidget"


def open_ready(browser: Any, path: Path, evaluate: str) -> Dict[str, Any]:
    """Open ``path`` in a fresh context of ``browser`` (1400x900, only file: URLs load), wait until the viewer is
    ready, then run ``evaluate`` (a JS function; its result is the dict returned, plus ``wall`` seconds from goto to
    ready, ``thread_cpu``/``process_cpu`` seconds, and ``page``/``ctx`` to go on with: close ``ctx`` when done)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Performance.enable")
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=120_000)
    wall = time.perf_counter() - t0
    info = page.evaluate(evaluate)
    m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
    info["thread_cpu"], info["process_cpu"] = m.get("ThreadTime", float("nan")), m.get("ProcessTime", float("nan"))
    info.update(wall=wall, page=page, ctx=ctx, cdp=cdp)
    return info
