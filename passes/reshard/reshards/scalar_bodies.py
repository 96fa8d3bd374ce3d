"""How `insert-reshards` makes `sort` and a `reduce` with a `body` function compute locally.

`sort`: the sort dimension is unsharded on every operand and result (`unshard_sort_dim`). The
rule's need_replication factor says so when the op has other dims of size > 1; when it has
none, Shardy's rule gives the sort dim only size-1 factors (which could carry any axes), so the
dim is unsharded here explicitly.

`reduce` with `body`:
A sharded reduced dim of a `kind` reduce leaves partial results `unreduced`, and an all_reduce
(add, max, min, mul) completes them. A `body` reduce (argmax: `(value, index)` pairs) has no
such collective, so a reduced dim of size n sharded k ways is reduced as a two-level tree, all
in the global view and all with the SAME body:

    %m, %i = reduce %x, %iota, %ninf, %zero {body = @f, dimensions = [0]}    # %x: 16x32 {"dp"}, _
becomes
    %x2 = reshape %x : tensor<2x8x32xf32, <@m, [{"dp"}, {}, {}]>>            # local: a view
    %y2 = reshape %iota : tensor<2x8x32xi32, <@m, [{"dp"}, {}, {}]>>
    %pm, %pi = reduce %x2, %y2, %ninf, %zero {body = @f, dimensions = [1]}   # per device
               : tensor<2x32xf32, <@m, [{"dp"}, {}]>>, ...
    %gm = reshard %pm : tensor<2x32xf32, <@m, [{}, {}]>>                     # all_gather k pairs
    %gi = reshard %pi : ...
    %m, %i = reduce %gm, %gi, %ninf, %zero {body = @f, dimensions = [0]}     # combine k pairs

Each device moves k result-sized partials instead of gathering its whole input (which is what
replicating the reduced dim would cost: n/k times more). Indices stay global: the index operand
is an ordinary value of the global program (an iota, offset per device by spmd). The inits are
applied once per level, which is exact when init is the body's identity -- as StableHLO
requires for a reduce to be well defined (XLA may apply it any number of times too).

The elements are combined in the order of the global program (row-major over the reduced dims),
so the split is exact for every associative body, commutative or not (JAX's argmax picks the
first NaN by this order). That holds when each device's block of the reduced elements is one
contiguous run, which is why only the major-most reduced dim (of size > 1) stays sharded; the
other reduced dims are replicated (gathered before the reduce), as is a reduced dim whose size
the shard count does not divide (splitting it would put padding inside the reduction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shardc.ir.builder import Builder
from shardc.ir.core import Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.scalar_bodies import reduce_inputs, sort_dimension
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.factor_axes import AxesPerFactor, axes_size, mapping_from_factors
from shardc.passes.propagation.layouts import replicated
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule


class Resharder(Protocol):
    """What `split_body_reduce` needs of insert-reshards' function rewriter (rewriter.py)."""

    builder: Builder
    decided: dict[Value, NamedMapping | None]

    def reshard_operand(self, op: Operation, index: int, target: NamedMapping) -> None:
        """Make operand `index` of `op` laid out as `target` (a shared `reshard` if needed)."""
        ...


def unshard_sort_dim(op: Operation, rule: OpShardingRule, axes: AxesPerFactor) -> None:
    """Unshard (in `axes`) every factor on the sort dimension of any operand or result."""
    d = sort_dimension(op)
    for tm in rule.mappings:
        for f in tm[d]:
            axes[f] = ()


def sharded_reduced_dims(
    op: Operation, rule: OpShardingRule, axes: AxesPerFactor, mesh: DeviceMesh
) -> dict[int, tuple[AxisRef, ...]]:
    """Reduced input dim -> its axes, for the reduced dims `axes` shard. Unshards (in `axes`)
    the reduction factors that cannot be split: only the major-most reduced dim (of size > 1)
    may stay sharded, and only when the shard count divides it."""
    shape = op.operand(0).type.shape
    dims = sorted(attr(op, "dimensions"))
    first = next((d for d in dims if shape[d] > 1), None)
    out = {}
    for d in dims:
        (f,) = rule.operands[0][d]
        assert rule.kind(f) is FactorKind.REDUCTION
        if not axes[f]:
            continue
        if d != first or shape[d] % axes_size(axes[f], mesh):
            axes[f] = ()
        else:
            out[d] = axes[f]
    return out


def split_body_reduce(
    rw: Resharder,
    op: Operation,
    rule: OpShardingRule,
    axes: AxesPerFactor,
    mesh: DeviceMesh,
    sharded: dict[int, tuple[AxisRef, ...]],
) -> None:
    """Replace `op` by reshape, local reduce, reshard (all_gather) and a combining reduce (see
    the module docstring). `rw` is insert-reshards' function rewriter."""
    inputs, inits = reduce_inputs(op)
    n = len(inputs)
    for i, tm in enumerate(rule.operands):
        rw.reshard_operand(op, i, mapping_from_factors(tm, axes, rule, mesh))
    inputs, inits = reduce_inputs(op)
    shape = inputs[0].type.shape
    in_mapping = inputs[0].mapping
    assert in_mapping is not None
    dims = set(attr(op, "dimensions"))
    # The split shape: a sharded reduced dim d becomes (k, n/k), "shard" (sharded like d) then
    # "local" (what one device reduces); other reduced dims are "local", the rest "kept".
    split_shape: list[int] = []
    split_dims: list[DimSharding] = []
    roles: list[str] = []
    for d, size in enumerate(shape):
        if d in sharded:
            k = axes_size(sharded[d], mesh)
            split_shape += [k, size // k]
            split_dims += [DimSharding(sharded[d], True), DimSharding((), True)]
            roles += ["shard", "local"]
        else:
            split_shape.append(size)
            split_dims.append(in_mapping.dims[d])
            roles.append("local" if d in dims else "kept")
    split_mapping = NamedMapping(mesh, tuple(split_dims))
    local_dims = tuple(i for i, role in enumerate(roles) if role == "local")
    out = [i for i, role in enumerate(roles) if role != "local"]
    partial_mapping = NamedMapping(mesh, tuple(split_dims[i] for i in out))
    gathered_mapping = NamedMapping(
        mesh,
        tuple(DimSharding((), True) if roles[i] == "shard" else split_dims[i] for i in out),
    )
    combine = tuple(j for j, i in enumerate(out) if roles[i] == "shard")
    body = attr(op, "body")
    with rw.builder.insertion_point(before=op):
        split = [
            _emit(rw, op, "reshape", [x], {}, [(split_shape, x.type.dtype, split_mapping)])
            .results[0]
            for x in inputs
        ]
        partial_shape = [split_shape[i] for i in out]
        partial = _emit(
            rw, op, "reduce", [*split, *inits], {"body": body, "dimensions": local_dims},
            [(partial_shape, x.type.dtype, partial_mapping) for x in inits],
        )
        final_op = _emit(
            rw, op, "reduce", [*partial.results, *inits], {"body": body, "dimensions": combine},
            [(r.type.shape, r.type.dtype, None) for r in op.results],
        )
    for i in range(n):
        rw.reshard_operand(final_op, i, gathered_mapping)
        rw.reshard_operand(final_op, n + i, replicated(mesh, 0))
    for old, new, tm in zip(op.results, final_op.results, rule.results, strict=True):
        new.name_hint = old.name_hint
        rw.decided[new] = rw.decided.get(old, old.mapping)
        new.set_mapping(mapping_from_factors(tm, axes, rule, mesh))
        old.replace_all_uses_with(new)
    op.erase()


def _emit(
    rw: Resharder, op: Operation, name: str, operands: list[Value], attrs: dict,
    types: list[tuple[Sequence[int], str, NamedMapping | None]],
) -> Operation:
    """A new op before `op` (the insertion point), with `op`'s location and cause."""
    new = rw.builder.create(
        name, operands, attrs, [DistributedTensorType(tuple(s), t, m) for s, t, m in types]
    )
    return new
