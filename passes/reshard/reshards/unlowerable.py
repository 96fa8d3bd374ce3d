"""Factor shardings an op's rule allows but the spmd pass cannot compute per device: insert-reshards
unshards them (the operands are gathered before the op), so `compile` never stops at `spmd` on a
program propagation accepted.

- `scatter` with `kind = replace`, or a body function that is not one reduction every input
  combines with (`scatter_reduction`: add, multiply, maximum, minimum, and, or): its batch dims
  would leave partial results that no collective combines (which update wins, or `a + b * b`,
  is not a reduction). Its rule already makes them need replication; `replace` is explicit.
- `scatter`: an operand dim an update window covers only in part (a pass-through factor of the
  operand and result alone): a window may straddle two devices' blocks, and a window that does
  not fit a block is dropped whole.
- `convolution`: a spatial reduction factor (the window is larger than the output, as in a
  weight gradient) does not split the input dim into blocks the kernel's blocks pair with.
- any op: a dim whose factors do not multiply to its size (a convolution's kernel spatial dim
  gets a size-1 factor when the window is smaller than the output): a device's block is not
  the piece of the dim its factors' shards describe.
"""

from __future__ import annotations

import math

from shardc.ir.core import Operation
from shardc.ir.ops import attr
from shardc.ir.ops.compute import scatter_parts
from shardc.ir.ops.scalar_bodies import scatter_reduction
from shardc.passes.propagation.factor_axes import AxesPerFactor
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule


def unshard_unlowerable(op: Operation, rule: OpShardingRule, axes: AxesPerFactor) -> None:
    """Unshard (in `axes`, one entry per factor of `rule`) what spmd cannot lower."""
    tensors = [*op.operands, *op.results]
    for v, tm in zip(tensors, rule.mappings, strict=True):
        for d, factors in enumerate(tm):
            if factors and math.prod(rule.factor_sizes[f] for f in factors) != v.type.shape[d]:
                for f in factors:
                    axes[f] = ()
    if op.name == "scatter":
        _scatter(op, rule, axes)
    elif op.name == "convolution":
        for f in rule.factors_of_kind(FactorKind.REDUCTION):
            spatial = attr(op, "input_spatial_dimensions")
            if any(f in rule.operands[0][d] for d in spatial):
                axes[f] = ()


def _scatter(op: Operation, rule: OpShardingRule, axes: AxesPerFactor) -> None:
    if scatter_reduction(op) is None:  # no collective combines its partial results
        for f in rule.factors_of_kind(FactorKind.REDUCTION):
            axes[f] = ()
    inputs, _, all_updates = scatter_parts(op)
    operand, updates = inputs[0].type.shape, all_updates[0].type.shape
    no_window = set(attr(op, "inserted_window_dims")) | set(attr(op, "input_batching_dims"))
    window_dims = iter(sorted(attr(op, "update_window_dims")))
    for d, n in enumerate(operand):
        if d in no_window:
            continue
        if updates[next(window_dims)] != n:
            for f in rule.operands[0][d]:
                axes[f] = ()
