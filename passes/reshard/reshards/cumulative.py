"""Cumulative ops along a sharded dim: a scan per block plus the blocks' totals.

A cumulative sum (max, min, product) is the `reduce_window` JAX emits for `jnp.cumsum` and its
gradient (the reversed scan): one dim of size n with a window of n, padded by n - 1 before it
(after it when reversed), every other dim untouched. Its rule makes that dim a permutation
factor, so it would be gathered whole. When the operand shards it evenly over axes A (s
blocks of c), insert-reshards rewrites the op in the global view instead, and only the blocks'
totals move (s values per row, not n):

    %y = reduce_window %x, %zero {window_dimensions = [1, 16], padding = [[0, 0], [15, 0]],
                                  kind = add}                        # %x: 4x16 [{}, {"tp"}]
becomes
    %x2 = reshape %x : 4x4x4 [{}, {"tp"}, {}]                         # a view: block per device
    %l = reduce_window %x2, %zero {window [1, 1, 4], padding [.., [3, 0]]}   # scan per block
    %t = reduce %x2, %zero {dimensions = [2]} : 4x4 [{}, {"tp"}]        # each block's total
    %g = reshard %t : 4x4 [{}, {}]                                     # all_gather s totals
    %e = slice (reduce_window %g {window [1, 4], padding [.., [4, 0]]})  # totals of the blocks
    %b = broadcast_in_dim %e : 4x4x4 [{}, {"tp"}, {}]                   #   before each one
    %y = reshape (add %l, %b) : 4x16 [{}, {"tp"}]

The init value is applied once, by the per-block scan (the totals start from the identity), so
an init that is not the identity still counts once. Uneven dims are left to the rule (gathered).
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.attributes import DenseElements, Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.scalar_bodies import identity_value
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.factor_axes import axes_size
from shardc.passes.propagation.layouts import closed, replicated
from shardc.passes.reshard.reshards.provenance import mark_split
from shardc.passes.reshard.reshards.scalar_bodies import Resharder

_KINDS = ("add", "maximum", "minimum", "multiply")


def cumulative_dim(op: Operation) -> tuple[int, bool] | None:
    """(the scanned dim, reversed?) when `op` is a cumulative reduce_window, else None."""
    if op.name != "reduce_window" or op.num_operands != 2:
        return None
    kind = op.attributes.get("kind")
    if kind is None or kind.word not in _KINDS:
        return None
    shape = op.operand(0).type.shape
    rank = len(shape)
    window = attr(op, "window_dimensions")
    padding = attr(op, "padding") or ((0, 0),) * rank
    for key in ("window_strides", "base_dilations", "window_dilations"):
        value = attr(op, key)
        if value is not None and any(v != 1 for v in value):
            return None
    scanned = [d for d in range(rank) if window[d] != 1 or tuple(padding[d]) != (0, 0)]
    if len(scanned) != 1:
        return None
    (d,) = scanned
    n = shape[d]
    if n < 2 or window[d] != n or tuple(padding[d]) not in ((n - 1, 0), (0, n - 1)):
        return None
    return d, tuple(padding[d]) == (0, n - 1)


def split_cumulative(
    rw: Resharder, op: Operation, operand: NamedMapping, mesh: DeviceMesh, d: int, reverse: bool
) -> bool:
    """Rewrite `op` as in the module docstring when `operand` (its decided layout) shards dim d
    evenly; False (nothing done) otherwise."""
    m = closed(operand.replace(unreduced=()))
    assert m is not None
    x = op.operand(0)
    shape, dtype = x.type.shape, x.type.dtype
    axes = m.dims[d].axes
    s = axes_size(axes, mesh)
    if not axes or shape[d] % s:
        return False
    c = shape[d] // s
    kind = attr(op, "kind").word
    rw.reshard_operand(op, 0, m)
    rw.reshard_operand(op, 1, replicated(mesh, 0))
    x, init = op.operands
    split_shape = (*shape[:d], s, c, *shape[d + 1 :])
    dims = list(m.dims)
    split = NamedMapping(mesh, (*dims[:d], DimSharding(axes, True), DimSharding((), True),
                                *dims[d + 1 :]))
    totals_map = NamedMapping(mesh, (*dims[:d], DimSharding(axes, True), *dims[d + 1 :]))
    gathered_map = NamedMapping(mesh, (*dims[:d], DimSharding((), True), *dims[d + 1 :]))
    totals_shape = (*shape[:d], s, *shape[d + 1 :])
    rank = len(split_shape)
    b = rw.builder

    def window(dim: int, size: int, pad: tuple[int, int], r: int = rank) -> dict:
        return {
            "window_dimensions": tuple(size if i == dim else 1 for i in range(r)),
            "padding": tuple(pad if i == dim else (0, 0) for i in range(r)),
            "kind": Keyword(kind),
        }

    def emit(name: str, operands: list[Value], attrs: dict, out: Sequence[int],
             mapping: NamedMapping | None) -> Value:
        new = b.create(name, operands, attrs, [DistributedTensorType(tuple(out), dtype, mapping)])
        return new.results[0]

    with b.insertion_point(before=op):
        x2 = emit("reshape", [x], {}, split_shape, split)
        pad = (0, c - 1) if reverse else (c - 1, 0)
        local = emit("reduce_window", [x2, init], window(d + 1, c, pad), split_shape, split)
        ident = emit("constant", [], {"value": DenseElements((identity_value(kind, dtype),))},
                     (), None)
        totals = emit(
            "reduce", [x2, ident], {"dimensions": (d + 1,), "kind": Keyword(kind)},
            totals_shape, totals_map,
        )
        gathered = mark_split(b.reshard(totals, gathered_map), op)
        rw_pad = (0, s) if reverse else (s, 0)
        before = emit(
            "reduce_window", [gathered, ident], window(d, s, rw_pad, rank - 1),
            (*shape[:d], s + 1, *shape[d + 1 :]), gathered_map,
        )
        start = 1 if reverse else 0
        before = emit(
            "slice", [before],
            {"start_indices": tuple(start if i == d else 0 for i in range(rank - 1)),
             "limit_indices": tuple(start + s if i == d else n for i, n in
                                    enumerate((*shape[:d], s + 1, *shape[d + 1 :])))},
            totals_shape, gathered_map,
        )
        kept = tuple(i for i in range(rank) if i != d + 1)
        spread = b.create(
            "broadcast_in_dim", [before], {"broadcast_dimensions": kept},
            [DistributedTensorType(split_shape, dtype, split)],
        )
        combined = emit(kind, [local, spread.results[0]], {}, split_shape, split)
        out = emit("reshape", [combined], {}, shape, m)
    rw.reshard_operand(spread, 0, totals_map)  # all_slice: each device its block's entry
    old = op.results[0]
    out.name_hint = old.name_hint
    rw.decided[out] = rw.decided.get(old, old.mapping)
    old.replace_all_uses_with(out)
    op.erase()
    return True
