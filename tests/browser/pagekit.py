"""Page helpers for the browser tests (a uniquely named module: `conftest` is ambiguous across test folders)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List, TypeVar

T = TypeVar("T")

STATIC = Path(__file__).resolve().parents[2] / "graphwidget" / "static"

#: The fake anywidget model (class FakeModel, function toView) of the pages that run the widget bundle outside
#: Jupyter: JS text to put at the top of a page's script.
FAKE_MODEL_JS = (Path(__file__).resolve().parent / "fake_model.js").read_text(encoding="utf-8")
#: The page's automation API (``a`` in the expressions tests evaluate: ``async () => { const a = API; ... }``).
API = "document.querySelector('.graphwidget-root').graphwidget"


class Watched:
    """A page whose every network request is recorded and refused, with page errors and dialogs collected."""

    def __init__(self, browser: Any, **ctx_kwargs: Any) -> None:
        self.requests: List[str] = []
        self.errors: List[str] = []
        self.dialogs: List[str] = []
        self.console: List[str] = []
        self.ctx = browser.new_context(**ctx_kwargs)
        self.ctx.route("**/*", self._route)
        self.page = self.ctx.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("dialog", self._dialog)
        self.allow: Dict[str, Any] = {}

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file:") and route.request.is_navigation_request():
            route.continue_()  # the exported page itself
            return
        for prefix, (path, body, ctype) in self.allow.items():
            if url == prefix or (prefix.endswith("/") and url.startswith(prefix)):
                if body is not None:
                    route.fulfill(body=body, headers={"Content-Type": ctype})
                else:
                    route.fulfill(path=str(path), headers={"Content-Type": ctype})
                return
        self.requests.append(url)
        route.abort()

    def _dialog(self, d: Any) -> None:
        self.dialogs.append(d.message)
        d.dismiss()

    def serve(self, url: str, path: Any = None, *, body: Any = None, ctype: str = "text/javascript") -> None:
        """Answer requests for `url` (a prefix if it ends with /) from a local file or a body: a fake origin,
        no server."""
        self.allow[url] = (path, body, ctype)

    def assert_clean(self) -> None:
        assert self.requests == [], f"network requests were made: {self.requests}"
        assert self.errors == [], f"page errors: {self.errors}"
        assert self.dialogs == [], f"dialogs were opened (script ran): {self.dialogs}"

    def close(self) -> None:
        self.ctx.close()


def wait_ready(page: Any, timeout: float = 60_000) -> Dict[str, Any]:
    """Waits for the first complete drawing; returns the automation API's timings."""
    page.wait_for_selector('.graphwidget-root[data-gw-state="ready"]', timeout=timeout)
    return page.evaluate(f"async () => {{ const a = {API}; await a.ready; return a.timings; }}")


def wait_until(check: Callable[[], T], timeout: float = 10.0) -> T:
    """Calls ``check`` (usually a ``page.evaluate`` round trip) until it returns something truthy or ``timeout``
    seconds pass, and returns its last value: the caller asserts on it, so a failure still says what was wrong.

    Polling from Python works on every page: the export's CSP forbids eval, which ``page.wait_for_function`` needs
    for a predicate given as an expression."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.01)


def assert_centred(page: Any, position: str, canvas: Any) -> None:
    """The item whose client position ``position`` (an automation API expression) returns is in the middle of the
    ``canvas`` locator's box once the view has settled: a selection can open the side panel, which narrows the
    canvas, and the pane re-centres when its ResizeObserver reports that (a frame later, or more on a loaded
    machine); a check read between the two sees the narrower canvas with the old camera."""
    def off() -> Any:
        pos = page.evaluate(f"async () => {{ const a = {API}; return await ({position}); }}")
        box = canvas.bounding_box()
        dx, dy = pos["x"] - (box["x"] + box["width"] / 2), pos["y"] - (box["y"] + box["height"] / 2)
        return None if abs(dx) < 2 and abs(dy) < 2 else (pos, box)

    wait_until(lambda: off() is None, timeout=5)
    assert off() is None


def next_frame(page: Any) -> None:
    """Returns once the page has drawn a frame: what a change asked to redraw (requestAnimationFrame) is on screen."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done(null)))")


def toolbar_overflow(page: Any) -> List[str]:
    """Toolbar controls that end past the toolbar's right edge (cut off or hidden under its border), and the status
    text when it is cut below 1100 px (there it shows its short form, which must be whole)."""
    return page.evaluate("""() => {
        const bar = document.querySelector('.gw-toolbar'), right = bar.getBoundingClientRect().right - 1;
        const out = [];
        for (const c of bar.children) {
            const r = c.getBoundingClientRect();
            if (r.width > 0 && r.right > right) out.push(`${c.className || c.tagName} ends at ${r.right} > ${right}`);
        }
        const st = bar.querySelector('.gw-status');
        if (bar.getBoundingClientRect().width < 1100 && st.scrollWidth > st.clientWidth + 1) out.push(`status cut: ${st.textContent}`);
        return out; }""")
