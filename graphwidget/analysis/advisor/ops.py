"""What the rules know about autograd node types: which are element-wise, which index, which only reshape, which
are heavy; and the small shape/dtype arithmetic they share. Torch-free: node types are matched by name."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

_SUFFIX = re.compile(r"Backward\d*$")


@lru_cache(maxsize=4096)
def stem(op: str) -> str:
    """``"MulBackward0"`` -> ``"Mul"``; names without the suffix (custom Functions) are returned as they are."""
    return _SUFFIX.sub("", op)


# Element-wise ops with one tensor operand (the scalar variants of binary ops included: MulBackward1 is x * 2.0).
UNARY = frozenset({
    "Neg", "Exp", "Exp2", "Expm1", "Log", "Log2", "Log10", "Log1p", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
    "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Sigmoid", "LogSigmoid", "Relu", "Gelu", "Silu", "Mish",
    "Elu", "Celu", "Selu", "LeakyRelu", "Softplus", "Hardsigmoid", "Hardswish", "Hardtanh", "Abs", "Sgn", "Sign",
    "Sqrt", "Rsqrt", "Reciprocal", "Erf", "Erfc", "Erfinv", "Trunc", "Floor", "Ceil", "Round", "Frac", "NanToNum",
    "ToCopy", "Clone", "Threshold", "Logit", "Sinc", "Deg2Rad", "Rad2Deg",
    "Square", "Pow",  # Pow: PowBackward0 is tensor ** scalar (PowBackward1, tensor ** tensor, is binary below)
})
# Variants that are element-wise with a scalar second operand (stem collides with the binary op).
UNARY_VARIANTS = frozenset({"MulBackward1", "DivBackward1", "DivBackward3", "AddBackward1", "SubBackward1",
                            "RsubBackward1", "PowBackward0", "ClampBackward1", "ClampMinBackward0",
                            "ClampMaxBackward0", "RemainderBackward0", "FmodBackward0"})

# Element-wise ops with several tensor operands that broadcast. The tuple names the operand in each
# ``next_functions`` slot as the saved-tensor name autograd gives it (a slot without an edge did not require grad;
# its shape is known only when the node saved it under that name).
BINARY: Dict[str, Tuple[str, ...]] = {
    "AddBackward0": ("self", "other"),
    "SubBackward0": ("self", "other"),
    "RsubBackward0": ("self", "other"),
    "MulBackward0": ("self", "other"),
    "DivBackward0": ("self", "other"),
    "DivBackward2": ("self", "other"),
    "PowBackward1": ("self", "exponent"),
    "MaximumBackward0": ("self", "other"),
    "MinimumBackward0": ("self", "other"),
    "MaxBackward2": ("self", "other"),
    "MinBackward2": ("self", "other"),
    "Atan2Backward0": ("self", "other"),
    "HypotBackward0": ("self", "other"),
    "XlogyBackward0": ("self", "other"),
    "CopysignBackward0": ("self", "other"),
    "FmodBackward1": ("self", "other"),
    "RemainderBackward1": ("self", "other"),
    "WhereBackward0": ("self", "other"),
    "LerpBackward0": ("self", "end"),
    "LerpBackward1": ("self", "end", "weight"),
    "AddcmulBackward0": ("self", "tensor1", "tensor2"),
    "AddcdivBackward0": ("self", "tensor1", "tensor2"),
}
#: Saved tensors that are extra operands of a binary op without a ``next_functions`` slot (where's condition).
EXTRA_OPERANDS: Dict[str, Tuple[str, ...]] = {"WhereBackward0": ("condition",)}
#: Binary ops whose non-grad operands autograd never saves: an operand without an edge has an unknown shape.
UNSAVED_OPERANDS = frozenset({"AddBackward0", "SubBackward0", "RsubBackward0", "WhereBackward0",
                              "LerpBackward0", "LerpBackward1", "AddcmulBackward0", "AddcdivBackward0"})

# Ops that pick part of one tensor: their backward writes a gradient of the whole input.
INDEX = frozenset({"SelectBackward0", "SliceBackward0", "IndexBackward0", "SelectBackward1", "SliceBackward1"})
# Ops that only re-describe their input (no arithmetic).
VIEW = frozenset({"ViewBackward0", "ReshapeAliasBackward0", "UnsafeViewBackward0", "UnsqueezeBackward0",
                  "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2", "PermuteBackward0",
                  "TransposeBackward0", "TBackward0", "ExpandBackward0", "AliasBackward0", "AsStridedBackward0",
                  "AsStridedBackward1", "UnfoldBackward0", "DiagonalBackward0", "NarrowBackward0"})
SPLIT = frozenset({"UnbindBackward0", "SplitBackward0", "SplitWithSizesBackward0", "ChunkBackward0"})
REDUCE = frozenset({"SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1", "ProdBackward0",
                    "ProdBackward1", "AmaxBackward0", "AminBackward0", "MaxBackward0", "MaxBackward1",
                    "MinBackward0", "MinBackward1", "NormBackward0", "NormBackward1"})
COLLECT = frozenset({"StackBackward0", "CatBackward0"})
#: Ops through which a loop accumulates its result without making iterations depend on each other.
ACCUMULATE = frozenset({"AddBackward0", "SubBackward0", "AddBackward1", "SubBackward1", "StackBackward0",
                        "CatBackward0"})
#: Heavy ops whose speed depends on the memory layout of their operands (the memory-layout rule re-runs these).
HEAVY = frozenset({"ConvolutionBackward0", "MmBackward0", "AddmmBackward0", "BmmBackward0"})

LOW_FLOATS = frozenset({"float32", "float16", "bfloat16"})


@lru_cache(maxsize=4096)
def is_elementwise(op: str) -> bool:
    """An op that maps elements to elements (with broadcasting between its operands)."""
    return op in BINARY or op in UNARY_VARIANTS or stem(op) in UNARY


def norm_dim(d: Any, ndim: int) -> Optional[int]:
    """A dimension from a node's attrs as a position in ``range(ndim)``. Negative dims are stored as unsigned 64-bit
    integers (``-1`` is ``2**64 - 1``); ``None`` for anything out of range."""
    if not isinstance(d, int) or isinstance(d, bool):
        return None
    if d >= 2**63:
        d -= 2**64
    if d < 0:
        d += ndim
    return d if 0 <= d < ndim else None


def norm_dims(ds: Any, ndim: int) -> Optional[List[int]]:
    """:func:`norm_dim` over a dim or a list of dims; ``None`` when any is invalid."""
    if isinstance(ds, int) and not isinstance(ds, bool):
        ds = [ds]
    if not isinstance(ds, list):
        return None
    out = [norm_dim(d, ndim) for d in ds]
    return None if any(d is None for d in out) else out  # type: ignore[return-value]


def shift(dims: Iterable[int], by: int) -> FrozenSet[int]:
    return frozenset(d + by for d in dims)


def fmt_shape(shape: Optional[Sequence[int]]) -> str:
    return "(?)" if shape is None else "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def _signed(x: Any) -> Any:
    """An int attr as stored (negative values as unsigned 64-bit) back to its signed value."""
    return x - 2**64 if isinstance(x, int) and not isinstance(x, bool) and x >= 2**63 else x


def slice_len(attrs: Mapping[str, Any], size: int) -> Optional[int]:
    """How many elements a SliceBackward0 with these attrs takes of a dim of ``size`` (Python's slice rules);
    ``None`` when its start/end/step are not known."""
    start, end, step = _signed(attrs.get("start", 0)), _signed(attrs.get("end")), _signed(attrs.get("step", 1))
    start = 0 if start is None else start
    end = size if end is None else end
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end, step)) or step < 1:
        return None
    return len(range(size)[start:end:step])


def full_slice(attrs: Mapping[str, Any], in_shape: Sequence[int], out_shape: Optional[Sequence[int]], k: int) -> bool:
    """Whether a SliceBackward0 along ``k`` takes the whole dim with step 1 (torch < 2.5 records one for every
    ``:`` in ``h[:, :, 0]``; ``narrow(d, 0, size)`` does on any torch): it copies nothing and indexes nothing."""
    if _signed(attrs.get("step", 1)) != 1:
        return False
    if out_shape is not None and len(out_shape) == len(in_shape):
        return out_shape[k] == in_shape[k]
    return slice_len(attrs, in_shape[k]) == in_shape[k]


def broadcast(shapes: Sequence[Optional[Sequence[int]]]) -> Optional[List[int]]:
    """The shape element-wise operands of these shapes broadcast to; ``None`` when any is unknown or they do not
    broadcast."""
    if not shapes or any(s is None for s in shapes):
        return None
    nd = max(len(s) for s in shapes)  # type: ignore[arg-type]
    out = [1] * nd
    for s in shapes:
        for i, n in enumerate(s, nd - len(s)):  # type: ignore[arg-type]
            if n != 1:
                if out[i] not in (1, n):
                    return None
                out[i] = n
    return out
