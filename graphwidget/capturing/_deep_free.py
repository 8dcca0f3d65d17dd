"""Keep the process alive when a deep autograd graph is freed after Python has touched it.

Why this exists (found with torch 2.13, CPU, default 8 MiB stack):

Since torch made ``Node`` an ``intrusive_ptr`` target with *PyObject preservation*, a node that has ever been
handed to Python (any ``grad_fn`` / ``next_functions`` access, i.e. any graph walk) keeps its Python wrapper alive
for as long as C++ still references the node. Freeing such a chain no longer goes through torch's iterative
``deleteNode``; it recurses in C: ``~Node`` releases its next edge -> the next node's refcount drops to 1 ->
``decref_pyobject`` -> ``THPCppFunction_dealloc`` -> ``~Node`` -> ... about five C frames per node. A chain of some
tens of thousands of nodes overflows 8 MiB: segfault, i.e. a dead Jupyter kernel. No order of releasing the
wrappers helps (we tried root-first, leaf-first, dict and list holders): once wrapped, the recursion happens
whenever the last C++ reference goes.

The fix: the main thread's stack on Linux/macOS grows on demand up to the *soft* ``RLIMIT_STACK``, read at fault
time, so raising the soft limit at run time (never above the hard limit) gives the recursion the room it needs.
:data:`BYTES_PER_NODE` is a few times what those frames take, so the limit follows the graph with a margin.
Worker threads have fixed-size stacks set when they start, so this protects frees on the main thread — where
notebooks and scripts run — and we say so instead of pretending otherwise.

The compiled core (graphwidget/capturing/native/) avoids most of the problem at its source: it reads nodes without
giving them Python wrappers, so only the few it does wrap count, and its callers pass that number here. A deep chain
captured by it frees on the default stack with the limit untouched (tests/test_deep.py).
"""
from __future__ import annotations

import threading
import warnings

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

#: Graphs smaller than this free fine on the default 8 MiB stack: several times below the depth where a free was
#: seen to crash (tests/test_deep.py's control test shows the crash), so small graphs never touch the limit.
SAFE_NODES = 12_000
#: Stack reserved per node of a captured graph: a few times what the five C frames of one node's free take.
BYTES_PER_NODE = 512
#: Extra headroom for whatever the program itself has on the stack.
HEADROOM = 64 * 2**20


def required_stack(n_nodes: int) -> int:
    """Soft stack limit, in bytes, that lets a chain of ``n_nodes`` wrapped nodes be freed."""
    return n_nodes * BYTES_PER_NODE + HEADROOM


def make_deep_free_safe(n_nodes: int) -> bool:
    """Raise the soft stack limit so freeing a graph of ``n_nodes`` cannot overflow the main thread's stack.

    Returns True when the current limit is enough (or was raised to be), False when it could not be (no
    ``resource`` module, hard limit too low, or not on the main thread); a ``RuntimeWarning`` then says why.
    """
    if n_nodes < SAFE_NODES:
        return True
    need = required_stack(n_nodes)
    if resource is None:
        warnings.warn(
            f"graphwidget: this platform cannot raise the stack limit; freeing this {n_nodes}-node graph may "
            f"overflow the stack inside torch.", RuntimeWarning, stacklevel=3)
        return False
    if threading.current_thread() is not threading.main_thread():
        warnings.warn(
            f"graphwidget: captured a {n_nodes}-node graph off the main thread. Freeing a deep graph recurses "
            f"inside torch; only the main thread's stack can be grown. Free it on the main thread, or start "
            f"worker threads with threading.stack_size({need}).", RuntimeWarning, stacklevel=3)
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return True
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (target, hard))
    except (ValueError, OSError) as exc:  # pragma: no cover - depends on the OS policy
        warnings.warn(f"graphwidget: could not raise the stack limit to {need} bytes ({exc}).",
                      RuntimeWarning, stacklevel=3)
        return False
    if target < need:
        warnings.warn(
            f"graphwidget: the hard stack limit ({hard} bytes) is below the {need} bytes needed to free this "
            f"{n_nodes}-node graph safely; raise it with `ulimit -Hs`.", RuntimeWarning, stacklevel=3)
        return False
    return True
