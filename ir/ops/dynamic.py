"""Slices at run-time offsets (StableHLO semantics: start indices are clamped so the slice fits).

%s = dynamic_slice %x, %i, %j {slice_sizes = [4, 32]} : tensor<4x32xf32>
%u = dynamic_update_slice %x, %update, %i, %j : tensor<16x32xf32>
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, register, req
from shardc.ir.types import TensorType


def _check_indices(op: Operation, first: int, rank: int) -> None:
    indices = op.operands[first:]
    if len(indices) != rank:
        raise op_error(op, f"takes {rank} start indices (one per operand dim), got {len(indices)}")
    dtypes = {v.type.dtype for v in indices}
    for i, v in enumerate(indices):
        if v.type.rank != 0 or not v.type.dtype.startswith(("i", "ui")) or v.type.dtype == "i1":
            raise op_error(
                op, f"start index {i} must be an integer scalar, got {v.type.tensor}"
            )
    if len(dtypes) > 1:
        raise op_error(op, "start indices must all have the same element type")


def _infer_dynamic_slice(op: Operation) -> list[TensorType]:
    if op.num_operands < 1:
        raise op_error(op, "needs an operand")
    x = op.operand(0).type
    _check_indices(op, 1, x.rank)
    sizes = attr(op, "slice_sizes")
    if len(sizes) != x.rank:
        raise op_error(op, f"slice_sizes has {len(sizes)} entries, operand rank is {x.rank}")
    for d, (s, n) in enumerate(zip(sizes, x.shape)):
        if not 0 <= s <= n:
            raise op_error(op, f"slice size {s} does not fit operand dim {d} (size {n})")
    return [TensorType(tuple(sizes), x.dtype)]


def _infer_dynamic_update_slice(op: Operation) -> list[TensorType]:
    if op.num_operands < 2:
        raise op_error(op, "needs an operand and an update")
    x, update = op.operand(0).type, op.operand(1).type
    if update.rank != x.rank or update.dtype != x.dtype:
        raise op_error(op, f"update {update.tensor} must have the operand's rank and element type")
    for d, (u, n) in enumerate(zip(update.shape, x.shape)):
        if u > n:
            raise op_error(op, f"update dim {d} (size {u}) is larger than operand dim (size {n})")
    _check_indices(op, 2, x.rank)
    return [TensorType(x.shape, x.dtype)]


register(OpDef("dynamic_slice", None, 1, {"slice_sizes": req("ints")}, _infer_dynamic_slice))
register(OpDef("dynamic_update_slice", None, 1, {}, _infer_dynamic_update_slice))
