"""Small, careful rewrites of one line of the user's code for a finding's ``suggestion``. Each returns ``None`` when
the line does not have the expected shape: a rule then says the fix in words instead of guessing."""
from __future__ import annotations

import re
from typing import Iterator, List, Optional, Tuple


def _chars(code: str, start: int = 0) -> Iterator[Tuple[int, str, int]]:
    """``(index, character, bracket depth before it)`` for every character of ``code`` from ``start`` that lies
    outside string literals (quotes and backslash escapes respected): the one scanner behind the helpers below."""
    depth, i, quote = 0, start, ""
    while i < len(code):
        ch = code[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        else:
            yield i, ch, depth
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
        i += 1


def strip_comment(code: Optional[str]) -> Optional[str]:
    """The line without its trailing ``# comment`` (a ``#`` inside a string stays) and outer whitespace."""
    if code is None:
        return None
    cut = next((i for i, ch, _ in _chars(code) if ch == "#"), len(code))
    return code[:cut].strip()


def _call_end(code: str, open_paren: int) -> Optional[int]:
    """Index just past the parenthesis that closes the one at ``open_paren`` (strings respected); None if none."""
    return next((i + 1 for i, ch, depth in _chars(code, open_paren) if ch in ")]}" and depth == 1), None)


def _split_args(inner: str) -> List[str]:
    """A call's argument text split at its top-level commas (``"a, f(b, c), 'x,y'"`` -> three arguments)."""
    bounds = [-1] + [i for i, ch, depth in _chars(inner) if ch == "," and depth == 0] + [len(inner)]
    return [inner[a + 1:b].strip() for a, b in zip(bounds, bounds[1:])]


def _find_call(code: str, pattern: str) -> Optional[Tuple[int, int, int]]:
    """The first call ``pattern`` (a regex ending in ``\\(``) matches: ``(start, args_start, end)``, ``end`` just past
    its closing parenthesis; ``None`` when there is none or it is not closed on the line."""
    m = re.search(pattern, code)
    if not m:
        return None
    end = _call_end(code, m.end() - 1)
    return None if end is None else (m.start(), m.end(), end)


def drop_method(code: Optional[str], method: str) -> Optional[str]:
    """Remove every ``.method(...)`` call from ``code``: ``"h = homo.unsqueeze(1).repeat(1, n, 1, 1)"`` ->
    ``"h = homo.unsqueeze(1)"``. ``None`` when the line has no such call."""
    code = strip_comment(code)
    if not code:
        return None
    out, changed = code, False
    pat = re.compile(rf"\.\s*{re.escape(method)}\s*\(")
    while True:
        m = pat.search(out)
        if not m:
            break
        end = _call_end(out, m.end() - 1)
        if end is None:
            return None
        out = out[:m.start()] + out[end:]
        changed = True
    return out if changed else None


def unwrap_function(code: Optional[str], func: str) -> Optional[str]:
    """``torch.tile(x, (1, n))`` -> ``x``: replace a call of ``func`` by its first argument."""
    code = strip_comment(code)
    if not code:
        return None
    call = _find_call(code, rf"(?<![\w.]){re.escape(func)}\s*\(")
    if call is None:
        return None
    start, args_start, end = call
    arg = _split_args(code[args_start:end - 1])[0]
    return code[:start] + arg + code[end:] if arg else None


def remove_materialisation(code: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """The line without its ``repeat``/``tile``/``repeat_interleave``/``contiguous``/``clone`` call, and what was
    removed (``(None, None)`` when the line has none of them)."""
    for method in ("repeat_interleave", "repeat", "tile"):
        new = drop_method(code, method)
        if new is not None:
            return new, method
    for func in ("torch.tile", "torch.repeat_interleave"):
        new = unwrap_function(code, func)
        if new is not None:
            return new, func.split(".")[-1]
    for method in ("contiguous", "clone"):
        new = drop_method(code, method)
        if new is not None:
            return new, method
    return None, None


def from_numpy_as_float32(code: Optional[str]) -> Optional[str]:
    """``w = torch.from_numpy(a)`` -> ``w = torch.from_numpy(a).float()``."""
    code = strip_comment(code)
    if not code:
        return None
    call = _find_call(code, r"(?<![\w.])(?:torch\.)?from_numpy\s*\(")
    if call is None:
        return None
    end = call[2]
    return code[:end] + ".float()" + code[end:]


def vectorise_index(code: Optional[str], var: Optional[str], dim: int) -> Optional[str]:
    """Index dimension ``dim`` of ``var`` with ``:`` instead of a loop variable, everywhere in ``code``:
    ``total = total + x[i, 0] * x[i, 1]`` (var ``x``, dim 0) -> ``total = total + (x[:, 0] * x[:, 1]).sum(0)``.

    Only for simple subscripts whose ``dim``-th index is a bare name; the running sum ``acc = acc + EXPR`` becomes
    ``acc = acc + (EXPR).sum(dim)``. ``None`` when the line does not fit."""
    code = strip_comment(code)
    if not code or not var:
        return None
    pat = re.compile(rf"(?<![\w.]){re.escape(var)}\[([^\[\]]*)\]")
    loop_vars = set()

    def repl(m: "re.Match[str]") -> str:
        parts = [p.strip() for p in m.group(1).split(",")]
        if dim >= len(parts) or not re.fullmatch(r"[A-Za-z_]\w*", parts[dim]):
            return m.group(0)
        loop_vars.add(parts[dim])
        parts[dim] = ":"
        return f"{var}[{', '.join(parts)}]"

    new = pat.sub(repl, code)
    if len(loop_vars) != 1 or new == code:
        return None
    acc = re.match(r"^(\s*)([A-Za-z_]\w*)\s*=\s*\2\s*\+\s*(.+?)\s*$", new)
    if acc:
        indent, name, expr = acc.groups()
        return f"{indent}{name} = {name} + ({expr}).sum({dim})"
    acc = re.match(r"^(\s*)([A-Za-z_]\w*)\s*\+=\s*(.+?)\s*$", new)
    if acc:
        indent, name, expr = acc.groups()
        return f"{indent}{name} += ({expr}).sum({dim})"
    return new


def call_argument(code: Optional[str], funcs: Tuple[str, ...], index: int) -> Optional[str]:
    """The ``index``-th argument of the first call of one of ``funcs`` in ``code`` when it is a plain name
    (``torch.bmm(a, w)`` -> ``a`` for index 0); also ``a @ b`` for matmul-like ops."""
    if not code:
        return None
    for func in funcs:
        pattern = rf"(?<![\w]){re.escape(func)}\s*\("
        if not re.search(pattern, code):
            continue
        call = _find_call(code, pattern)
        if call is None:  # the call is not closed on this line
            return None
        _, args_start, end = call
        args = _split_args(code[args_start:end - 1])
        if index < len(args) and re.fullmatch(r"[A-Za-z_][\w.]*", args[index]):
            return args[index]
        return None
    m = re.search(r"([A-Za-z_][\w.]*)\s*@\s*([A-Za-z_][\w.]*)", code)
    if m and index in (0, 1):
        return m.group(index + 1)
    return None
