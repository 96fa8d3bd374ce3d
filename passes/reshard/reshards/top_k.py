"""`top_k` on a sharded operand. It has no factor rule (Shardy registers none for chlo.top_k),
so propagation does not go through it and, left alone, insert-reshards would replicate it. But it
computes locally with any sharding of the dims before the last (each row on its own), and along
a sharded last dim it is a tree: each device's top k of its block, then the top k of the
gathered candidates (k per block, not the whole dim):

    %v, %i = top_k %x {k = 2} : ...                           # %x: 4x16 [{"dp"}, {"tp"}]
becomes
    %x2 = reshape %x : 4x4x4 [{"dp"}, {"tp"}, {}]             # a view: a block per device
    %lv, %li = top_k %x2 {k = 2} : 4x4x2 [{"dp"}, {"tp"}, {}]
    %gi = add %li, (iota 1) * 4                               # global indices
    %cv = reshard (reshape %lv : 4x8 [{"dp"}, {"tp"}]) : 4x8 [{"dp"}, {}]   # all_gather
    %ci = reshard (reshape %gi : ...) : 4x8 [{"dp"}, {}]
    %v, %j = top_k %cv {k = 2} : 4x2 [{"dp"}, {}]
    %i = gather %ci, %j ... (take along the last dim)         # 4x2 [{"dp"}, {}]

Ties keep the lower index, as top_k does: a block's candidates come in index order and blocks
in device order. An uneven last dim, or blocks shorter than k, are gathered whole instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.factor_axes import axes_size
from shardc.passes.propagation.layouts import closed
from shardc.passes.reshard.reshards.provenance import mark_split
from shardc.passes.reshard.reshards.scalar_bodies import Resharder


def shard_top_k(rw: Resharder, op: Operation, decided: NamedMapping, mesh: DeviceMesh) -> None:
    """Make `op` (a top_k) compute on `decided`, its operand's layout (see the docstring)."""
    m = closed(decided.replace(unreduced=()))
    assert m is not None
    x = op.operand(0)
    shape = x.type.shape
    last = len(shape) - 1
    k = attr(op, "k")
    axes = m.dims[last].axes
    s = axes_size(axes, mesh) if axes else 1
    batch = m.dims[:last]
    out = NamedMapping(mesh, (*batch, DimSharding((), True)))
    if s == 1 or shape[last] % s or shape[last] // s < k:
        rw.reshard_operand(op, 0, out)
        for r in op.results:
            rw.decided.setdefault(r, r.mapping)
            r.set_mapping(out)
        return
    _split(rw, op, m, out, s, k)


def _split(
    rw: Resharder, op: Operation, m: NamedMapping, out: NamedMapping, s: int, k: int
) -> None:
    mesh = m.mesh
    rw.reshard_operand(op, 0, m)
    x = op.operand(0)
    shape, dtype = x.type.shape, x.type.dtype
    nb = len(shape) - 1
    c = shape[nb] // s
    batch, axes = m.dims[:nb], m.dims[nb].axes
    split = NamedMapping(mesh, (*batch, DimSharding(axes, True), DimSharding((), True)))
    flat = NamedMapping(mesh, (*batch, DimSharding(axes, True)))
    b = rw.builder

    def emit(name: str, operands: list[Value], attrs: dict,
             types: Sequence[tuple[Sequence[int], str, NamedMapping]]) -> list[Value]:
        new = b.create(
            name, operands, attrs, [DistributedTensorType(tuple(t), d, mm) for t, d, mm in types]
        )
        return list(new.results)

    lead = shape[:nb]
    with b.insertion_point(before=op):
        (x2,) = emit("reshape", [x], {}, [((*lead, s, c), dtype, split)])
        local_v, local_i = emit(
            "top_k", [x2], {"k": k}, [((*lead, s, k), dtype, split), ((*lead, s, k), "i32", split)]
        )
        (block,) = emit("iota", [], {"iota_dimension": nb}, [((*lead, s, k), "i32", split)])
        (size,) = emit("constant", [], {"value": DenseElements((c,))}, [((), "i32", None)])
        (sizes,) = emit(
            "broadcast_in_dim", [size], {"broadcast_dimensions": ()},
            [((*lead, s, k), "i32", split)],
        )
        (offset,) = emit("multiply", [block, sizes], {}, [((*lead, s, k), "i32", split)])
        (global_i,) = emit("add", [local_i, offset], {}, [((*lead, s, k), "i32", split)])
        cand_v, cand_i = (
            mark_split(b.reshard(
                emit("reshape", [v], {}, [((*lead, s * k), v.type.dtype, flat)])[0], out
            ), op)
            for v in (local_v, global_i)
        )
        values, picks = emit(
            "top_k", [cand_v], {"k": k}, [((*lead, k), dtype, out), ((*lead, k), "i32", out)]
        )
        pick_map = NamedMapping(mesh, (*batch, DimSharding((), True), DimSharding((), True)))
        (where,) = emit("reshape", [picks], {}, [((*lead, k, 1), "i32", pick_map)])
        dims = tuple(range(nb))
        (indices,) = emit(
            "gather", [cand_i, where],
            {
                "offset_dims": (),
                "collapsed_slice_dims": (nb,),
                "operand_batching_dims": dims,
                "start_indices_batching_dims": dims,
                "start_index_map": (nb,),
                "index_vector_dim": nb + 1,
                "slice_sizes": (1,) * (nb + 1),
            },
            [((*lead, k), "i32", out)],
        )
    for old, new in zip(op.results, (values, indices), strict=True):
        new.name_hint = old.name_hint
        rw.decided[new] = rw.decided.get(old, old.mapping)
        old.replace_all_uses_with(new)
    op.erase()
