"""How Shardy's `sdy-insert-explicit-reshards` moves values into and out of the unreduced state.

- `all_reduce_to(use, source, target)`: a use that needs fewer unreduced axes than its value has
  gets an `all_reduce` of the difference (Shardy delays the reduction to here: the return, a call,
  or the op that needs the reduced value).
- `unreduced_collectives(use, target)`: a use that needs *more* unreduced axes gets
  `replicated_to_unreduced` (axes the value is replicated on) and/or `sharded_to_unreduced`
  (minor-most dim axes), after a `reshard` when the dim axes do not line up.
- `all_reduce_reduction_factors(op, axes)`: the `all_reduce` after an op whose sharded reduction
  factors its result does not keep unreduced.

    %0 = stablehlo.reduce(%arg0 init: %c) ... {sdy.sharding = <@m, [{}], unreduced={"x"}>}
    %1 = sdy.all_reduce {"x"} %0 out_sharding=<@m, [{}]>        # before a user needing [{}]
    %2 = sdy.replicated_to_unreduced {"y"} %a out_sharding=<@m, [{}], unreduced={"y"}>
    %3 = sdy.sharded_to_unreduced [{"x"}] %b out_sharding=<@m, [{}], unreduced={"x"}>

A use is `(op, operand index)`; new ops go where the `Cursor` says.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.axis_refs import PrefixStatus, prefix_status
from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.passes.analysis.collectives.sub_axes import (
    set_difference,
    sort_and_merge,
    suffix_without_overlap,
)
from shardc.passes.reshard.reshards.insertion import Cursor, closed_replicated

Use = tuple[Operation, int]


def all_reduce_to(
    cursor: Cursor, use: Use, source: NamedMapping | None, target: NamedMapping | None
) -> NamedMapping | None:
    """Reduce the unreduced axes of `source` that `target` does not keep (Shardy's
    `insertAllReduceIfUnreducedToReplicated`); returns the operand's sharding after it."""
    if source is None or not source.unreduced:
        return source
    op, i = use
    mesh = source.mesh
    if target is not None and target.mesh.axes != mesh.axes:
        raise PassError(
            f"'{op.name}' op: unreduced {op.operand(i).label} is used on another mesh "
            f"(@{target.mesh.name})", op.loc
        )
    keep = target.unreduced if target is not None else ()
    axes = set_difference(source.unreduced, keep, mesh)
    if not axes:
        return source
    out = source.replace(unreduced=tuple(set_difference(source.unreduced, axes, mesh)))
    v = cursor.create("all_reduce", op.operand(i), out, {"reduction_axes": tuple(axes)},
                      op.operand(i).defining_op or op)
    op.set_operand(i, v)
    return out


def unreduced_collectives(cursor: Cursor, use: Use, target: NamedMapping | None) -> (
    NamedMapping | None
):
    """Make the operand unreduced on the axes `target` adds (Shardy's
    `insertUnreducedCollectives`); returns its new sharding, or None when nothing changed."""
    op, i = use
    value = op.operand(i)
    source = value.mapping
    if source is None or target is None or not target.unreduced:
        return None
    mesh = source.mesh
    if target.mesh.axes != mesh.axes:
        raise PassError(
            f"'{op.name}' op: {value.label} becomes unreduced on another mesh "
            f"(@{target.mesh.name})", op.loc
        )
    added = set_difference(target.unreduced, source.unreduced, mesh)
    if not added:
        return None
    if set_difference(source.unreduced, target.unreduced, mesh):
        raise PassError(
            f"'{op.name}' op: {value.label} is unreduced on axes its use does not keep and "
            "lacks axes it needs unreduced", op.loc
        )
    from_dims: list[AxisRef] = []
    per_dim: list[tuple[AxisRef, ...]] = [() for _ in source.dims]
    dims = list(target.dims)
    reshard = False
    for d, (have, want) in enumerate(zip(source.dims, target.dims, strict=True)):
        status = prefix_status(want.axes, have.axes)
        if status is PrefixStatus.STRICT_PREFIX:
            diff: list[AxisRef] = []
            n = len(want.axes)
            if want.axes and want.axes[-1] != have.axes[n - 1]:
                suffix = suffix_without_overlap(have.axes[n - 1], want.axes[-1], mesh)
                assert suffix is not None
                diff.append(suffix)
            diff.extend(have.axes[n:])
            if not set_difference(diff, added, mesh):
                per_dim[d] = tuple(diff)
                from_dims.extend(diff)
                dims[d] = have
            else:
                reshard = True
        elif status is PrefixStatus.NOT_A_PREFIX:
            reshard = True
    result = value
    if reshard:
        result = cursor.create("reshard", result, source.with_dims(dims), {}, op)
    last = result.mapping
    from_replicated = set_difference(added, from_dims, mesh)
    if from_replicated:
        unreduced = sort_and_merge([*source.unreduced, *from_replicated], mesh)
        last = NamedMapping(mesh, tuple(dims), target.replicated, tuple(unreduced),
                            target.unreduced_op)
        result = cursor.create("replicated_to_unreduced", result, last,
                               {"axes": tuple(from_replicated)}, op)
    if from_dims:
        result = cursor.create("sharded_to_unreduced", result, target,
                               {"axes": tuple(per_dim)}, op)
        last = target
    if result is value:
        return None
    op.set_operand(i, result)
    return last


def reshard_to_unreduced_collectives(op: Operation) -> bool:
    """A `reshard` that only adds unreduced axes becomes those collectives (Shardy's
    `convertReshardToUnreducedCollectives`)."""
    if op.name != "reshard":
        return False
    if unreduced_collectives(Cursor.before(op), (op, 0), op.result.mapping) is None:
        return False
    op.result.replace_all_uses_with(op.operand(0))
    op.erase()
    return True


def all_reduce_results(op: Operation, axes: Sequence[AxisRef], mesh_of: NamedMapping) -> None:
    """Insert `all_reduce {axes}` after `op` on each result and make every other use read it.
    The all_reduce produces the result's sharding (closed replicated on `mesh_of`'s mesh when the
    result has none); the result itself keeps its sharding."""
    cursor = Cursor.after(op)
    for r in op.results:
        m = r.mapping if r.mapping is not None else closed_replicated(mesh_of, r.type.rank)
        v = cursor.create("all_reduce", r, m, {"reduction_axes": tuple(axes)}, op)
        new_op = v.defining_op
        r.replace_uses_if(v, lambda use, new_op=new_op: use.op is not new_op)
