"""graphwidget's optional compiled core: capture, ``profile``'s hooks and the JSON writer in C++ (sources in
``cpp/``), giving exactly the pure-Python engine's graph, faster on big graphs.

Pure Python is what a ``pip install`` gives; the core is compiled against the torch you run, once, on request — never
silently during a capture::

    python -m graphwidget build-native      # or: graphwidget.capturing.native.build()

``paths`` (where builds live and what names them), ``engine`` (which engine captures: loading a build and checking it
against the Python engine), ``builder`` (what a build needs, compiling, verifying). This module is their public face.
"""
from .builder import MIN_TORCH, BuildError, build, check_torch, compiler, first_errors, ninja, preflight, torch_version
from .engine import (
    BUILD_TIME,
    LARGE_GRAPH,
    CoreDisabledWarning,
    CoreNotBuiltWarning,
    available,
    first_difference,
    load_core,
    self_check,
    status,
)
from .paths import (
    build_root,
    clean,
    env_tag,
    find_library,
    library_path,
    locations,
    module_name,
    search_roots,
    system_root,
    user_root,
)

__all__ = [
    "MIN_TORCH", "BuildError", "build", "check_torch", "compiler", "first_errors", "ninja", "preflight",
    "torch_version", "BUILD_TIME", "LARGE_GRAPH", "CoreDisabledWarning", "CoreNotBuiltWarning", "available",
    "first_difference", "load_core", "self_check", "status", "build_root", "clean", "env_tag", "find_library",
    "library_path", "locations", "module_name", "search_roots", "system_root", "user_root",
]
