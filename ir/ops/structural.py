"""Ops that create or rearrange data (StableHLO semantics).

%c = constant {value = dense<0.0>} : tensor<f32>
%i = iota {iota_dimension = 1} : tensor<4x8xi32>
%b = broadcast_in_dim %x {broadcast_dimensions = [1]} : tensor<4x8xf32>
%r = reshape %x : tensor<2x4x8xf32>
%q = bitcast_convert %u : tensor<4x2xui64>                # %u: tensor<4x2x2xui32>
%t = transpose %x {permutation = [1, 0]} : tensor<8x4xf32>
%k = concatenate %a, %b {dimension = 0} : tensor<8x8xf32>
%s = slice %x {start_indices = [0, 0], limit_indices = [2, 8], strides = [1, 1]} : ...
%p = pad %x, %zero {edge_padding_low = [0, 1], edge_padding_high = [0, 1],
                    interior_padding = [0, 0]} : tensor<4x10xf32>
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.types import TensorType, element_bits, int_range


def _infer_constant(op: Operation) -> None:
    value = attr(op, "value")
    t = op.results[0].type
    if value.hex is None and not value.is_splat and value.shape != t.shape:
        raise op_error(op, f"dense literal has shape {list(value.shape)}, result {list(t.shape)}")
    bounds = int_range(t.dtype) if value.hex is None and value.bits is None else None
    if bounds is not None:
        lo, hi = bounds
        for v in value.values:
            if isinstance(v, float):  # (MLIR: a float literal does not make an integer)
                raise op_error(op, f"dense literal value {v} is not an integer, as {t.dtype} "
                                   "needs")
            if isinstance(v, int) and not isinstance(v, bool) and not lo <= v <= hi:
                raise op_error(op, f"dense literal value {v} is out of range for {t.dtype} "
                                   f"([{lo}, {hi}])")
    return None


def _infer_iota(op: Operation) -> None:
    d = attr(op, "iota_dimension")
    rank = op.results[0].type.rank
    if not 0 <= d < rank:
        raise op_error(op, f"iota_dimension {d} is out of range for rank {rank}")
    return None


def _infer_broadcast(op: Operation) -> None:
    src = op.operand(0).type
    dst = op.results[0].type
    dims = attr(op, "broadcast_dimensions")
    if len(dims) != src.rank:
        raise op_error(
            op, f"broadcast_dimensions has {len(dims)} entries, operand rank is {src.rank}"
        )
    if len(set(dims)) != len(dims):
        raise op_error(op, "broadcast_dimensions must not repeat a dim")
    for i, d in enumerate(dims):
        if not 0 <= d < dst.rank:
            raise op_error(
                op, f"broadcast dimension {d} is out of range for result rank {dst.rank}"
            )
        if src.shape[i] not in (1, dst.shape[d]):
            raise op_error(
                op,
                f"operand dim {i} (size {src.shape[i]}) cannot broadcast to result dim {d} "
                f"(size {dst.shape[d]})",
            )
    if src.dtype != dst.dtype:
        raise op_error(op, f"result element type {dst.dtype} != operand's {src.dtype}")
    return None


def _infer_reshape(op: Operation) -> None:
    src = op.operand(0).type
    dst = op.results[0].type
    if src.num_elements != dst.num_elements:
        raise op_error(
            op,
            f"cannot reshape {list(src.shape)} ({src.num_elements} elements) to "
            f"{list(dst.shape)} ({dst.num_elements} elements)",
        )
    if src.dtype != dst.dtype:
        raise op_error(op, f"result element type {dst.dtype} != operand's {src.dtype}")
    return None


def _check_permutation(op: Operation, perm: tuple[int, ...], rank: int) -> None:
    if sorted(perm) != list(range(rank)):
        raise op_error(op, f"permutation {list(perm)} is not a permutation of 0..{rank - 1}")


def _infer_transpose(op: Operation) -> list[TensorType]:
    src = op.operand(0).type
    perm = attr(op, "permutation")
    _check_permutation(op, perm, src.rank)
    return [TensorType(tuple(src.shape[p] for p in perm), src.dtype)]


def _infer_concatenate(op: Operation) -> list[TensorType]:
    if op.num_operands == 0:
        raise op_error(op, "needs at least one operand")
    types = [v.type for v in op.operands]
    dim = attr(op, "dimension")
    first = types[0]
    if not 0 <= dim < first.rank:
        raise op_error(op, f"dimension {dim} is out of range for rank {first.rank}")
    total = 0
    for i, t in enumerate(types):
        if t.rank != first.rank or t.dtype != first.dtype:
            raise op_error(op, f"operand {i} has type {t.tensor}, incompatible with {first.tensor}")
        for d in range(t.rank):
            if d != dim and t.shape[d] != first.shape[d]:
                raise op_error(op, f"operand {i} differs from operand 0 in dim {d}")
        total += t.shape[dim]
    shape = list(first.shape)
    shape[dim] = total
    return [TensorType(tuple(shape), first.dtype)]


def _infer_slice(op: Operation) -> list[TensorType]:
    src = op.operand(0).type
    start, limit = attr(op, "start_indices"), attr(op, "limit_indices")
    strides = attr(op, "strides") or (1,) * src.rank
    if not len(start) == len(limit) == len(strides) == src.rank:
        raise op_error(op, f"start/limit/strides must each have {src.rank} entries")
    shape = []
    for d, (a, b, s) in enumerate(zip(start, limit, strides)):
        if not (0 <= a <= b <= src.shape[d]) or s < 1:
            raise op_error(op, f"slice [{a}:{b}:{s}] does not fit dim {d} of size {src.shape[d]}")
        shape.append(-(-(b - a) // s))
    return [TensorType(tuple(shape), src.dtype)]


def _infer_pad(op: Operation) -> list[TensorType]:
    src, value = op.operand(0).type, op.operand(1).type
    if value.rank != 0 or value.dtype != src.dtype:
        raise op_error(op, f"padding value must be a scalar of {src.dtype}")
    lo, hi = attr(op, "edge_padding_low"), attr(op, "edge_padding_high")
    interior = attr(op, "interior_padding") or (0,) * src.rank
    if not len(lo) == len(hi) == len(interior) == src.rank:
        raise op_error(op, f"padding arrays must each have {src.rank} entries")
    shape = []
    for d, n in enumerate(src.shape):
        if interior[d] < 0:
            raise op_error(op, f"interior padding of dim {d} is negative")
        size = lo[d] + hi[d] + n + max(n - 1, 0) * interior[d]
        if size < 0:
            raise op_error(op, f"padding makes dim {d} negative")
        shape.append(size)
    return [TensorType(tuple(shape), src.dtype)]


def _infer_reverse(op: Operation) -> list[TensorType]:
    src = op.operand(0).type
    for d in attr(op, "dimensions"):
        if not 0 <= d < src.rank:
            raise op_error(op, f"dimension {d} is out of range for rank {src.rank}")
    return [TensorType(src.shape, src.dtype)]


def _infer_bitcast_convert(op: Operation) -> None:
    """Same bits, other element type: a wider result element takes the trailing dim of the
    operand (its size the width ratio), a narrower one adds such a trailing dim."""
    src, dst = op.operand(0).type, op.results[0].type
    a, b = element_bits(src.dtype), element_bits(dst.dtype)
    if a == b:
        ok = src.shape == dst.shape
    elif a < b:
        ok = src.shape == dst.shape + (b // a,) and b % a == 0
    else:
        ok = dst.shape == src.shape + (a // b,) and a % b == 0
    if not ok:
        raise op_error(
            op, f"cannot reinterpret {src.tensor} ({a}-bit elements) as {dst.tensor} "
            f"({b}-bit elements)"
        )
    return None


register(OpDef("constant", 0, 1, {"value": req("dense")}, _infer_constant))
register(OpDef("bitcast_convert", 1, 1, {}, _infer_bitcast_convert))
register(OpDef("iota", 0, 1, {"iota_dimension": req("int")}, _infer_iota))
register(OpDef("broadcast_in_dim", 1, 1, {"broadcast_dimensions": req("ints")}, _infer_broadcast))
register(OpDef("reshape", 1, 1, {}, _infer_reshape))
register(OpDef("transpose", 1, 1, {"permutation": req("ints")}, _infer_transpose))
register(OpDef("concatenate", None, 1, {"dimension": req("int")}, _infer_concatenate))
register(
    OpDef(
        "slice",
        1,
        1,
        {"start_indices": req("ints"), "limit_indices": req("ints"), "strides": opt("ints", None)},
        _infer_slice,
    )
)
register(
    OpDef(
        "pad",
        2,
        1,
        {
            "edge_padding_low": req("ints"),
            "edge_padding_high": req("ints"),
            "interior_padding": opt("ints", None),
        },
        _infer_pad,
    )
)
register(OpDef("reverse", 1, 1, {"dimensions": req("ints")}, _infer_reverse))
