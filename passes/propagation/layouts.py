"""The layouts insert-reshards gives values: closed shardings, replicated ones, and how an op's
partial results combine when it leaves them unreduced."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.ir.core import Operation
from shardc.ir.mapping import DimSharding, NamedMapping, interned
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.scalar_bodies import scatter_reduction
from shardc.ir.placements import ReduceOp


def closed(mapping: NamedMapping | None) -> NamedMapping | None:
    """`mapping` with every dim closed and priorities dropped (open is treated as closed)."""
    if mapping is None or all(d.is_closed and d.priority is None for d in mapping.dims):
        return mapping
    return mapping.with_dims([DimSharding(d.axes, True) for d in mapping.dims])


def replicated(mesh: DeviceMesh, rank: int) -> NamedMapping:
    return NamedMapping.fully_replicated(mesh, rank)


def reduce_op_of(op: Operation) -> ReduceOp:
    """How the partial results of `op`'s sharded reduction factors combine (a scatter's: the
    one reduction of its `kind` or `body`, `scatter_reduction`)."""
    if op.name == "scatter":
        word = scatter_reduction(op)
        return ReduceOp.SUM if word is None else ReduceOp.parse(word)
    kind = op.attributes.get("kind") if op.name == "reduce" else None
    if kind is not None and kind.word != "replace":  # a replace scatter leaves none
        return ReduceOp.parse(kind.word)
    return ReduceOp.SUM


MappingFn = Callable[[NamedMapping], NamedMapping]


def per_mapping(fn: MappingFn) -> MappingFn:
    """`fn` on mappings, computed once per distinct mapping: a program has a few shardings
    over many values (the values of one sharding then share one result object, the interned
    one that the values' types keep)."""
    done: dict[NamedMapping, NamedMapping] = {}

    def memo(m: NamedMapping) -> NamedMapping:
        out = done.get(m)
        if out is None:
            out = done[m] = interned(fn(m))
        return out

    return memo


def close(m: NamedMapping) -> NamedMapping:
    if m.is_fully_resolved and all(d.priority is None for d in m.dims):
        return m
    return m.with_dims([DimSharding(d.axes, True) for d in m.dims])


def evenly_sharded(m: NamedMapping, shape: Sequence[int]) -> NamedMapping:
    """Shardy's `getEvenlySharded`."""
    dims = []
    for d, n in zip(m.dims, shape, strict=True):
        if n % d.num_shards(m.mesh) == 0:
            dims.append(d)
            continue
        rest, axes = n, []
        for a in d.axes:
            size = a.axis_size(m.mesh)
            g = math.gcd(size, rest)
            if g == 1:
                break
            if g == size:
                axes.append(a)
                rest //= g
            else:
                axes.append(AxisRef(a.name, a.pre, g))
                break
        dims.append(DimSharding(tuple(axes), d.is_closed))
    return m.with_dims(dims)
