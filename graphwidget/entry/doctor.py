"""``python -m graphwidget doctor``: the one report to paste into a bug report.

Versions (Python, torch, graphwidget and its dependencies), whether they are in the supported range, which capture
engine runs and why, where the compiled core and the front-end bundle are, whether this torch exposes every fact a
capture records, and the tools for building (g++, ninja, Node.js) and testing (Chromium). Nothing here imports the
widget stack or starts anything: it must work in a broken environment too.

>>> from graphwidget import doctor
>>> sorted(doctor.report())[:3]
['bundle', 'engine', 'facts']
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

#: Packages whose versions matter for a bug report (distribution names).
PACKAGES = ("torch", "networkx", "anywidget", "ipywidgets", "plotly", "numpy", "playwright", "ninja", "setuptools")
#: The supported range, as pyproject.toml declares it and .ci/matrix tests it.
SUPPORTED_PYTHON = ((3, 9), (3, 13))
SUPPORTED_TORCH_MIN = (2, 4)
TESTED_TORCH = ("2.4.1", "2.13.0", "2.14.1")


def _version(dist: str) -> Optional[str]:
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _tool(cmd: str, args: List[str]) -> Optional[str]:
    """``cmd``'s path and first line of ``cmd args`` output, or ``None`` when it is not on PATH."""
    path = shutil.which(cmd)
    if path is None:
        return None
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=20)
        first = (out.stdout or out.stderr).strip().splitlines()
        return f"{first[0] if first else '?'} ({path})"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} (does not run: {exc})"


def _engine() -> Dict[str, Any]:
    try:
        from ..capturing import native
    except Exception as exc:  # noqa: BLE001 - torch missing or broken: say so
        return {"engine": "none", "why": f"capture is unavailable: {type(exc).__name__}: {exc}"}
    st = native.status()
    out: Dict[str, Any] = {
        "engine": "native (compiled core)" if st["available"] else "python",
        "why": "the compiled core is built for this environment and passed its self-check" if st["available"]
        else st["reason"],
        "core": st["path"],
        "min_torch_for_core": ".".join(map(str, native.MIN_TORCH)),
        "build_time": native.BUILD_TIME,
    }
    try:
        out["locations"] = native.locations()
        out["build_tools"] = {"c++ compiler": native.compiler(), "ninja": native.ninja(),
                              "missing": native.preflight()}
    except Exception as exc:  # noqa: BLE001
        out["locations"] = f"unknown ({type(exc).__name__}: {exc})"
    return out


def _facts() -> Dict[str, Any]:
    """Which per-node facts this torch exposes to the pure-Python engine (torch 2.4 has no ``_input_metadata``)."""
    try:
        from ..capturing.compat import missing_facts
        return {"missing": missing_facts()}
    except Exception as exc:  # noqa: BLE001
        return {"missing": None, "error": f"{type(exc).__name__}: {exc}"}


def _bundle() -> Dict[str, Any]:
    from ..views.assets import STATIC as static
    from ..views.assets import VIEWER_JS, WIDGET_JS
    files = {}
    for name in (WIDGET_JS, VIEWER_JS):
        p = static / name
        files[name] = {"path": str(p), "bytes": p.stat().st_size} if p.is_file() else {"path": str(p),
                                                                                          "missing": True}
    return files


def report() -> Dict[str, Any]:
    """Everything ``doctor`` prints, as a dict."""
    from .._version import __version__
    py = sys.version_info[:2]
    versions: Dict[str, Optional[str]] = {"python": platform.python_version(), "graphwidget": __version__}
    versions.update({d: _version(d) for d in PACKAGES})
    try:  # the running torch's own version says more than the distribution's (2.4.1+cu121, 2.13.0+cpu)
        import torch
        versions["torch"] = str(torch.__version__)
    except Exception:  # noqa: BLE001 - not installed or broken: keep what the metadata says
        pass
    torch_ok: Optional[bool] = None
    if versions.get("torch"):
        from ..capturing.native.builder import _parse_version
        torch_ok = _parse_version(str(versions["torch"]))[:2] >= SUPPORTED_TORCH_MIN
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return {
        "versions": versions,
        "supported": {
            "python": SUPPORTED_PYTHON[0] <= py <= SUPPORTED_PYTHON[1],
            "torch": torch_ok,
            "range": (f"Python {'.'.join(map(str, SUPPORTED_PYTHON[0]))}-{'.'.join(map(str, SUPPORTED_PYTHON[1]))}, "
                      f"torch >= {'.'.join(map(str, SUPPORTED_TORCH_MIN))} (tested: {', '.join(TESTED_TORCH)})"),
        },
        "platform": {"system": platform.platform(), "machine": platform.machine(), "executable": sys.executable,
                     "prefix": sys.prefix, "package": str(Path(__file__).resolve().parents[1])},
        "engine": _engine(),
        "facts": _facts(),
        "bundle": _bundle(),
        "tools": {
            "chromium (browser tests)": _tool(chromium, ["--version"]) if chromium else None,
            "node (rebuilding the front end)": _tool("node", ["--version"]),
            "npm": _tool("npm", ["--version"]),
        },
        "environment": {k: v for k, v in os.environ.items()
                        if k.startswith("GRAPHWIDGET_") or k in ("XDG_CACHE_HOME", "CXX")},
    }


def format_report(r: Dict[str, Any]) -> str:
    """The report as text, one fact a line."""
    lines = ["graphwidget doctor — paste all of this into a bug report", ""]
    v = r["versions"]
    lines.append("versions:")
    for k, val in v.items():
        lines.append(f"  {k:<12} {val or 'not installed'}")
    s = r["supported"]
    ok = {True: "yes", False: "NO", None: "unknown"}
    lines.append(f"supported:    python {ok[s['python']]}, torch {ok[s['torch']]}  ({s['range']})")
    p = r["platform"]
    lines += [f"platform:     {p['system']} ({p['machine']})", f"python:       {p['executable']}",
              f"package:      {p['package']}", ""]
    e = r["engine"]
    lines.append(f"engine:       {e['engine']}")
    lines.append(f"  why:        {e['why']}")
    if "core" in e:
        lines.append(f"  core:       {e['core']}")
        locs = e.get("locations")
        if isinstance(locs, dict):
            lines.append(f"  env folder: {locs['env_tag']}")
            for root in locs["roots"]:
                lines.append(f"  searched:   {root['root']}  ({'built' if root['exists'] else 'no build'})")
        tools = e.get("build_tools") or {}
        lines.append(f"  build:      needs torch >= {e['min_torch_for_core']}; c++: {tools.get('c++ compiler')}; "
                     f"ninja: {tools.get('ninja') or 'no (one file at a time)'}; takes {e['build_time']}")
        for m in tools.get("missing") or ():
            lines.append(f"  cannot build: {m}")
    f = r["facts"]
    if f.get("missing"):
        for fact, why in f["missing"].items():
            lines.append(f"  missing fact: {fact}: {why}")
    elif f.get("missing") == {}:
        lines.append("  facts:      this torch exposes every fact a capture records")
    lines.append("")
    for info in r["bundle"].values():
        state = "MISSING (reinstall graphwidget)" if info.get("missing") else f"{info['bytes']:,} bytes"
        lines.append(f"bundle:       {info['path']}  {state}")
    for name, val in r["tools"].items():
        lines.append(f"{name}: {val or 'not found'}")
    if r["environment"]:
        lines.append("environment:  " + ", ".join(f"{k}={v}" for k, v in r["environment"].items()))
    lines += ["", REPORT_TO]
    return "\n".join(lines)


#: Where a bug goes (the last line of the report). No public address is recorded in the package's metadata yet,
#: so it names the tracker and the README section that says how to file.
REPORT_TO = ("Report a bug on the project's issue tracker (README.md, \"Reporting a bug\"): what you ran, what "
             "happened, and this report.")


def main(as_json: bool = False) -> int:
    """Print the report; exit code 0 (the report itself says what is wrong)."""
    r = report()
    print(json.dumps(r, indent=2) if as_json else format_report(r))
    return 0
