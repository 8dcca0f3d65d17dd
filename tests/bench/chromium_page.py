"""What the browser benchmarks share: Chromium's flags (network refused, as in the browser tests) and opening a page
until the viewer says it is ready, with the wall time and the CPU time Chromium itself reports.

On a machine shared with other jobs the wall time follows the load; the CPU seconds of the page's main thread and
of its renderer process (main thread + layout workers) hardly do, so each benchmark prints both.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Set

ARGS = ["--no-sandbox", "--disable-gpu",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]
API = "document.querySelector('.graphwidget-root').graphwidget"


def open_ready(browser: Any, path: Path, evaluate: str, viewport: Optional[Dict[str, int]] = None,
               **context: Any) -> Dict[str, Any]:
    """Open ``path`` in a fresh context of ``browser`` (``viewport``, 1400x900 unless given; ``context``: more options
    of ``new_context``; only file: URLs load), wait until the viewer is ready, then run ``evaluate`` (a JS function;
    its result is the dict returned, plus ``wall`` seconds from goto to ready, ``thread_cpu``/``process_cpu``
    seconds, and ``page``/``ctx`` to go on with: close ``ctx`` when done)."""
    ctx = browser.new_context(viewport=viewport or {"width": 1400, "height": 900}, **context)
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Performance.enable")
    t0 = time.perf_counter()
    # generous: a million-node export is tens of MB of inline script on a machine other jobs share
    page.goto(path.as_uri(), timeout=300_000)
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=300_000)
    wall = time.perf_counter() - t0
    info = page.evaluate(evaluate)
    m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
    info["thread_cpu"], info["process_cpu"] = m.get("ThreadTime", float("nan")), m.get("ProcessTime", float("nan"))
    info.update(wall=wall, page=page, ctx=ctx, cdp=cdp)
    return info


def renderer_pids(browser: Any) -> Set[int]:
    """The process ids of the browser's renderers (Chromium's SystemInfo domain)."""
    cdp = browser.new_browser_cdp_session()
    try:
        return {p["id"] for p in cdp.send("SystemInfo.getProcessInfo")["processInfo"] if p["type"] == "renderer"}
    finally:
        cdp.detach()


def peak_rss_mib(pids: Iterable[int]) -> Optional[float]:
    """The largest peak resident memory (``VmHWM``, MiB) of these processes: a page's renderer holds its main thread
    and its workers. None where ``/proc`` cannot tell (not Linux, or the process is gone)."""
    peaks = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        peaks += [int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")]
    return max(peaks) if peaks else None
