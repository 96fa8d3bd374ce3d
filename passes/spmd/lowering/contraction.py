"""dot_general and reduce per device (the ops of rules/contraction.py): the padding of an uneven
sharded contracted or reduced dim is masked (to 0, or to the reduction's identity), and with a
sharded reduced dim only the first device of each group applies the `init`."""

from __future__ import annotations

from typing import Any

import numpy as np

from shardc.ir.core import Operation, Value
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import identity_value
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering
from shardc.passes.spmd.lowering.locality import no_sharded_reduction
from shardc.passes.spmd.lowering.padding import mask


def fix_dot_general(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Zero the padding of uneven sharded contracting dims on both sides (0 * garbage could be
    NaN, so both are masked)."""
    lhs, rhs = op.operands
    _, _, lc, rc = dot_general_dims(op)
    lhs_dims, rhs_dims = [], []
    for a, b in zip(lc, rc):
        n, k = low.global_shape(lhs)[a], low.shards(lhs, a)
        if k > 1 and n % k:
            lhs_dims.append((a, n, low.mapping(lhs).dims[a].axes))  # type: ignore[union-attr]
            rhs_dims.append((b, n, low.mapping(rhs).dims[b].axes))  # type: ignore[union-attr]
    if lhs_dims:
        op.set_operand(0, mask(low, lhs, lhs_dims, 0))
        op.set_operand(1, mask(low, rhs, rhs_dims, 0))


def fix_reduce(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Padding of reduced dims becomes the identity; with sharded reduced dims only the first
    device of each group applies `init`, so the partial results combine to exactly one `init`."""
    if "body" in op.attributes:
        no_sharded_reduction(low, op, rule)  # insert-reshards splits them (scalar_bodies)
        return
    x, init = op.operands
    kind = attr(op, "kind").word
    m = low.mapping(x)
    if m is None:
        return
    identity = identity_value(kind, x.type.dtype)
    padded, axes = [], []
    for d in attr(op, "dimensions"):
        n, k = low.global_shape(x)[d], m.num_shards(d)
        if k > 1:
            axes.extend(m.dims[d].axes)
            if n % k:
                padded.append((d, n, m.dims[d].axes))
    if padded:
        op.set_operand(0, mask(low, x, padded, identity))
    if axes and not _is_constant(init, identity):
        first = low.is_first(tuple(axes))
        dtype = init.type.dtype
        op.set_operand(
            1, low.emit("select", [first, init, low.const(identity, dtype)], {}, (), dtype)
        )


def _is_constant(v: Value, value: Any) -> bool:
    d = v.defining_op
    if d is None or d.name != "constant":
        return False
    array = attr(d, "value").to_numpy(v.type.shape, v.type.dtype)
    return bool(np.all(array == value))
