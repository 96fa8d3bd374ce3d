"""Factor-propagation strategies: `BASIC` and `AGGRESSIVE` (Shardy's two `FactorPropagation`s).

A strategy is a `PropagationStrategy(name, run)` value; `run(projection, context)` updates the
projection in place and returns which tensors changed. Look one up by name with `strategy_named`.

- `BASIC`: per factor (in index order), the compatible major axes are cut by every conflict in
  any tensor — another factor's axes or overflow axes in *any* tensor, and for tensors that have
  the factor their replicated/unreduced axes and closed or overflowing factors (so a closed dim
  blocks the factor for every tensor of the op). The result expands every tensor.
- `AGGRESSIVE`: the compatible major axes are computed for all factors first; then each tensor
  (results before operands) takes them factor by factor, in order of preference, cutting only
  its own conflicts, so a closed tensor is just skipped and the others still get the sharding.
  Preference between factors that compete for an axis: the larger source tensor (a tensor that
  already has the factor's compatible axes), then for element-wise ops the more sharded factor,
  then the lower source-tensor index, then the lower factor index. For element-wise ops an operand
  gets no more than a result already has for that factor.

Example: `%r = op(%a: [{"x"}], %b: [{?}])` with `%r: [{}]` (closed): `BASIC` propagates nothing
(the closed result blocks the factor); `AGGRESSIVE` skips `%r` and gives `%b` `[{"x", ?}]` —
unless the op is element-wise, where the result's empty sharding caps the operands and `%b` stays
`[{?}]`.
"""

from __future__ import annotations

from shardc.ir.axis_refs import PrefixStatus, axis_size, is_strict_prefix, prefix_status
from shardc.ir.mesh import AxisRef
from shardc.passes.propagation.conflicts import (
    compatible_major_axes,
    expand_tensor,
    no_conflicts_across_factors,
    no_conflicts_within_factor,
    truncate_conflicts,
)
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.projection import ShardingProjection, TensorFactorShardings
from shardc.passes.propagation.strategy import (
    PropagationContext,
    PropagationStrategy,
    TensorUpdates,
)


def _basic(projection: ShardingProjection, ctx: PropagationContext) -> TensorUpdates:
    operands, results = projection.operands, projection.results
    tensors = operands + results
    updated = [False] * len(tensors)
    mesh, sizes = ctx.mesh, ctx.rule.factor_sizes
    for f, direction in enumerate(ctx.directions):
        if direction is PropagationDirection.NONE:
            continue
        axes = compatible_major_axes(projection, f, direction)
        if not axes:
            continue
        factor_size = sizes[f]

        def remove(
            ref: AxisRef, prev: int, f: int = f, factor_size: int = factor_size
        ) -> AxisRef | None:
            result: AxisRef | None = ref
            for tensor in tensors:
                result = no_conflicts_across_factors(result, tensor.factors, f)
                if result is None:
                    return None
                fs = tensor.factors.get(f)
                if fs is not None:
                    result = no_conflicts_within_factor(
                        result, tensor.blocked_axes(), fs, prev, factor_size, mesh
                    )
                    if result is None:
                        return None
            return result

        axes = truncate_conflicts(axes, remove, mesh, ctx.conservative)
        if not axes:
            continue
        for t, tensor in enumerate(tensors):
            if expand_tensor(tensor, f, axes):
                updated[t] = True
    n = len(operands)
    return TensorUpdates(updated[:n], updated[n:])


def _may_gain(tensor: TensorFactorShardings, factor: int, axes: list[AxisRef]) -> bool:
    """False when `tensor` already has `axes` (or more) for `factor`, so it cannot gain any."""
    fs = tensor.factors.get(factor)
    if fs is None:
        return False
    have = fs.axes
    return len(axes) > len(have) or axes != list(have[: len(axes)])


def _propagated_axes(
    factor: int,
    tensor: TensorFactorShardings,
    axes: list[AxisRef],
    ctx: PropagationContext,
) -> list[AxisRef]:
    """The axes `tensor` takes for `factor` from the compatible `axes`, after its own conflicts."""
    fs = tensor.factors.get(factor)
    if fs is None or not _may_gain(tensor, factor, axes):
        return []
    mesh = ctx.mesh
    avoid = tensor.blocked_axes()
    factor_size = ctx.rule.factor_sizes[factor]
    new = truncate_conflicts(
        axes,
        lambda ref, prev: no_conflicts_within_factor(ref, avoid, fs, prev, factor_size, mesh),
        mesh,
        ctx.conservative,
    )
    if not is_strict_prefix(fs.axes, new):
        return []
    # Conflicts with the tensor's other factors as they are now (earlier factors may have grown).
    factors = tensor.factors
    return truncate_conflicts(
        new,
        lambda ref, _prev: no_conflicts_across_factors(ref, factors, factor),
        mesh,
        ctx.conservative,
    )


def _aggressive(projection: ShardingProjection, ctx: PropagationContext) -> TensorUpdates:
    operands, results = projection.operands, projection.results
    n_operands = len(operands)
    updates = TensorUpdates([False] * n_operands, [False] * len(results))
    axes_per_factor = [
        compatible_major_axes(projection, f, d) for f, d in enumerate(ctx.directions)
    ]
    tensors = projection.tensors
    if not any(
        _may_gain(tensor, f, axes)
        for f, axes in enumerate(axes_per_factor)
        if axes
        for tensor in tensors
    ):
        return updates  # fixed point: every tensor already has its factors' compatible axes
    order = [f for f in _factor_order(projection, axes_per_factor, ctx) if axes_per_factor[f]]

    for r, tensor in enumerate(results):
        for f in order:
            new = _propagated_axes(f, tensor, axes_per_factor[f], ctx)
            if new and expand_tensor(tensor, f, new):
                updates.results[r] = True

    for o, tensor in enumerate(operands):
        for f in order:
            new = _propagated_axes(f, tensor, axes_per_factor[f], ctx)
            if not new:
                continue
            if ctx.elementwise:
                # Do not shard an operand sideways beyond what a result has: that would only
                # add a reshard on the operand without making the result any more sharded.
                for result in results:
                    fs = result.factors.get(f)
                    if fs is not None and is_strict_prefix(fs.axes, new):
                        new = list(fs.axes)
            if expand_tensor(tensor, f, new):
                updates.operands[o] = True
    return updates


def _factor_order(
    projection: ShardingProjection, axes_per_factor: list[list[AxisRef]], ctx: PropagationContext
) -> list[int]:
    """Factors in order of preference (see the module docstring)."""
    n = len(axes_per_factor)
    source_size = [-1] * n
    source_index = [-1] * n
    for t, tensor in enumerate(projection.tensors):
        size = ctx.tensor_sizes[t]
        for f, fs in tensor.factors.items():
            axes = axes_per_factor[f]
            if (
                axes
                and size > source_size[f]
                and prefix_status(axes, fs.axes) is not PrefixStatus.NOT_A_PREFIX
            ):
                source_size[f] = size
                source_index[f] = t
    if ctx.elementwise:
        mesh = ctx.mesh
        sharded = [1] * n
        for f, axes in enumerate(axes_per_factor):
            for ref in axes:
                sharded[f] *= axis_size(ref, mesh)
    else:
        sharded = [0] * n
    return sorted(range(n), key=lambda f: (-source_size[f], -sharded[f], source_index[f], f))


BASIC = PropagationStrategy("basic", _basic)
AGGRESSIVE = PropagationStrategy("aggressive", _aggressive)

STRATEGIES: dict[str, PropagationStrategy] = {s.name: s for s in (BASIC, AGGRESSIVE)}


def strategy_named(name: str) -> PropagationStrategy:
    """`"basic"` or `"aggressive"` (as in `propagate{strategy=aggressive}`)."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown propagation strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        ) from None
