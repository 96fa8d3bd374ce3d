"""Factor propagation: the pure core of sharding propagation through one op.

Shardings and a rule in, updated shardings out — no IR. Per factor of the op's rule:

1. *Compatible major axes*: the longest axis list every tensor's list is a prefix of
   (`["a"]` and `["a", "b"]` -> `["a", "b"]`; `["a", "b"]` and `["a", "c"]` -> `["a"]`). The
   direction decides which tensors may lengthen it: forward lets operands expand it and results
   only cut it, backward the reverse, both lets everyone expand it.
2. *Conflict cut*: stop at an axis another factor of a tensor already uses (or overflows into),
   that a tensor lists as replicated or unreduced, that a closed or overflowing factor would have
   to gain, or that would not divide a non-minor factor (it is cut to the dividing sub-axis).
3. *Expand*: every tensor whose axes for the factor are a strict prefix of the result gets it.

NOTE: as in Shardy, the direction only decides which tensors *drive* a factor; every tensor that
has the factor may then receive it, so forward propagation can also shard a sibling operand.

The parts: `direction.py` (which tensors drive), `conflicts.py` (steps 1-3 per factor),
`strategy.py` (what a strategy is), `strategies.py` (`BASIC`, `AGGRESSIVE`); this module runs one.

The strategy decides how conflicts between tensors are resolved (see `strategies.py`): `BASIC`
propagates only what every tensor agrees on; `AGGRESSIVE` (the default) resolves conflicts per
tensor, preferring factors whose source tensor is larger, then (element-wise ops) the more sharded
factor, then the lower source index, then the lower factor index; results are updated before
operands, and for element-wise ops an operand gets no more than a result already has.

API:

- `propagate_shardings(operands, results, rule, mesh, *, direction, strategy, ...)` — mappings in
  (None: unsharded value), `(new operand mappings, new result mappings)` out; unchanged entries are
  the very objects passed in.
- `propagate_factors(projection, rule, *, direction, strategy, mesh, ...) -> TensorUpdates` — the
  same on a `ShardingProjection`, which it updates in place (it is per-visit scratch state).
- `PropagationDirection` (FORWARD, BACKWARD, BOTH, NONE) with `union`/`intersection`; `direction`
  may also be a per-factor sequence or a `factor -> direction` function. Blocked factors never
  propagate; `only_pass_through=True` propagates only pass-through factors (op-priority stage 2).

Example (matmul, `([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}`, mesh
`["a"=2, "b"=2]`)::

    lhs <@m, [{"a"}, {?}]>, rhs <@m, [{?}, {"b", ?}]>, result unsharded
      -> result <@m, [{"a", ?}, {"b", ?}]>
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.passes.propagation.direction import (
    DirectionSpec,
    PropagationDirection,
    resolve_directions,
)
from shardc.passes.propagation.projection import ShardingProjection, common_mesh
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.strategies import AGGRESSIVE
from shardc.passes.propagation.strategy import (
    PropagationContext,
    PropagationStrategy,
    TensorUpdates,
)


def propagate_factors(
    projection: ShardingProjection,
    rule: OpShardingRule,
    *,
    direction: DirectionSpec = PropagationDirection.BOTH,
    strategy: PropagationStrategy | None = None,
    mesh: DeviceMesh | None = None,
    elementwise: bool = False,
    only_pass_through: bool = False,
    conservative: bool = False,
    tensor_sizes: Sequence[int] | None = None,
) -> TensorUpdates:
    """Propagate factor shardings within `projection` (updated in place); see the module doc.

    `mesh` gives axis sizes (None skips divisibility checks, as Shardy's unit tests do).
    `conservative` refuses to propagate sub-axes. `tensor_sizes` (operands then results) rank the
    source tensors of the aggressive strategy; default: the rule's factor-size products.
    """
    if strategy is None:
        strategy = AGGRESSIVE
    sizes = tuple(tensor_sizes) if tensor_sizes is not None else rule.tensor_sizes()
    if len(sizes) != rule.num_operands + rule.num_results:
        raise ValueError(f"{len(sizes)} tensor sizes for an op with {len(rule.mappings)} tensors")
    context = PropagationContext(
        rule,
        resolve_directions(rule, direction, only_pass_through),
        mesh,
        conservative,
        elementwise,
        sizes,
    )
    return strategy.run(projection, context)


def propagate_shardings(
    operands: Sequence[NamedMapping | None],
    results: Sequence[NamedMapping | None],
    rule: OpShardingRule,
    mesh: DeviceMesh | None = None,
    *,
    direction: DirectionSpec = PropagationDirection.BOTH,
    strategy: PropagationStrategy | None = None,
    elementwise: bool = False,
    only_pass_through: bool = False,
    conservative: bool = False,
    tensor_sizes: Sequence[int] | None = None,
    closed_if_missing: bool = False,
) -> tuple[list[NamedMapping | None], list[NamedMapping | None]]:
    """Propagate through one op: mappings in, updated mappings out (unchanged ones as given).

    `mesh` defaults to the mappings' common mesh (`common_mesh`); nothing changes when there is
    none (no mapping at all, or meshes that differ) or when it is maximal: as in Shardy, maximal
    shardings (send/recv placeholders) are never propagated.
    """
    mesh = mesh if mesh is not None else common_mesh((*operands, *results))
    if mesh is None or mesh.is_maximal:
        return list(operands), list(results)
    projection = ShardingProjection.build(
        operands, results, rule, mesh, closed_if_missing=closed_if_missing
    )
    updates = propagate_factors(
        projection,
        rule,
        direction=direction,
        strategy=strategy,
        mesh=mesh,
        elementwise=elementwise,
        only_pass_through=only_pass_through,
        conservative=conservative,
        tensor_sizes=tensor_sizes,
    )
    if not updates.any():
        return list(operands), list(results)
    return projection.to_mappings(
        operands,
        results,
        rule,
        mesh,
        changed_operands=updates.operands,
        changed_results=updates.results,
    )
