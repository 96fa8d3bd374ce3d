"""The six global collectives as per-device `spmd.*` ops with explicit device groups::

    %1 = all_gather %0 {gathering_axes = [[], ["y"]]} : tensor<8x32xf32, <@m, [{"x"}, {}]>>
becomes (per device, a 4x8 block)
    %1 = spmd.all_gather %0 {axes = ["y"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]}

A collective over several dims is one `spmd.*` op per dim, in dim order (`op_steps.per_dim`,
which the cost report's `steps` follow); uneven dims are padded before and sliced after
(padding.py). A `reduce_scatter` that does not sum is an all_reduce then an all_slice (JAX has
only a summing psum_scatter).
"""

from __future__ import annotations

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.registry import attr
from shardc.ir.ops.sharding import all_to_all_params, explicit_reduction_axes, reduced_axes
from shardc.ir.placements import ReduceOp
from shardc.passes.analysis.collectives.axes import product
from shardc.passes.analysis.collectives.groups import permute_sources
from shardc.passes.analysis.collectives.op_steps import per_dim
from shardc.passes.analysis.collectives.shards import chunk
from shardc.passes.analysis.collectives.steps import AllGather, AllSlice, AllToAll, ReduceScatter
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering, with_dim
from shardc.passes.spmd.lowering.padding import pad_dim, slice_dim

# `unreduced_op` -> the `kind` of spmd.all_reduce (and of `reduce`).
REDUCE_KIND = {
    ReduceOp.SUM: "add",
    ReduceOp.MAX: "maximum",
    ReduceOp.MIN: "minimum",
    ReduceOp.PROD: "multiply",
    ReduceOp.AND: "and",
    ReduceOp.OR: "or",
}


def _src_dst(low: FunctionLowering, op: Operation) -> tuple[Value, NamedMapping, NamedMapping]:
    """(operand, its sharding, result sharding); an operand without a sharding is replicated."""
    x = op.operand(0)
    src, dst = low.mapping(x), op.result.mapping
    if dst is None:
        raise PassError(f"'{op.name}' op needs shardings on its operand and result", op.loc)
    if src is None:
        src = NamedMapping.fully_replicated(dst.mesh, dst.rank)
    return x, src, dst


def _reduction_kind(low: FunctionLowering, op: Operation) -> str:
    """The `kind` of the spmd.all_reduce an all_reduce/reduce_scatter becomes."""
    written = op.attributes.get("reduction_op")
    if written is not None:
        return REDUCE_KIND[ReduceOp.parse(written.word)]
    src = low.mapping(op.operand(0))
    return REDUCE_KIND[src.unreduced_op if src is not None and src.unreduced else ReduceOp.SUM]


def lower_all_gather(low: FunctionLowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    for d, one in per_dim(attr(op, "gathering_axes")):
        axes = one[d]
        after = AllGather(one).apply(m, shape)
        local = low.local_shape(cur)
        g = product(axes, m.mesh)
        attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
        out_shape = with_dim(local, d, local[d] * g)
        cur = low.emit("spmd.all_gather", [cur], attrs, out_shape, x.type.dtype)
        cur = slice_dim(low, cur, d, chunk(shape[d], after.num_shards(d)))
        m = after
    low.replace(op, cur)


def all_slice(
    low: FunctionLowering, x: Value, d: int, axes: tuple[AxisRef, ...], size: int
) -> Value:
    """Each device keeps its `size`-long part of dim d (no communication)."""
    assert low.mesh is not None
    g = product(axes, low.mesh)
    x = pad_dim(low, x, d, g * size)
    attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
    out_shape = with_dim(low.local_shape(x), d, size)
    return low.emit("spmd.all_slice", [x], attrs, out_shape, x.type.dtype)


def lower_all_slice(low: FunctionLowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    for d, one in per_dim(attr(op, "slicing_axes")):
        m = AllSlice(one).apply(m, shape)
        cur = all_slice(low, cur, d, one[d], chunk(shape[d], m.num_shards(d)))
    low.replace(op, cur)


def lower_all_to_all(low: FunctionLowering, op: Operation) -> None:
    """One spmd.all_to_all per parameter, in order."""
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    for axes, s, t in all_to_all_params(op):
        after = AllToAll(axes, s, t).apply(m, shape)
        g = product(axes, m.mesh)
        t_size = chunk(shape[t], after.num_shards(t))
        cur = pad_dim(low, cur, t, g * t_size)
        local = low.local_shape(cur)
        out_shape = with_dim(with_dim(local, t, t_size), s, local[s] * g)
        attrs = {"axes": axes, "split_dim": t, "concat_dim": s, "groups": low.groups(axes)}
        cur = low.emit("spmd.all_to_all", [cur], attrs, out_shape, x.type.dtype)
        cur = slice_dim(low, cur, s, chunk(shape[s], after.num_shards(s)))
        m = after
    low.replace(op, cur)


def lower_collective_permute(low: FunctionLowering, op: Operation) -> None:
    x, src, dst = _src_dst(low, op)
    pairs = tuple((s, t) for s, t in permute_sources(src, dst))
    out = low.emit(
        "spmd.collective_permute", [x], {"pairs": pairs}, low.local_shape(x), x.type.dtype
    )
    low.replace(op, out)


def _all_reduce(low: FunctionLowering, x: Value, axes: tuple[AxisRef, ...], kind: str) -> Value:
    attrs = {"axes": axes, "kind": Keyword(kind), "groups": low.groups(axes)}
    return low.emit("spmd.all_reduce", [x], attrs, low.local_shape(x), x.type.dtype)


def lower_all_reduce(low: FunctionLowering, op: Operation) -> None:
    """Reduces over the axes the operand is unreduced on (the others: see `_verify_all_reduce`
    in ir/ops/sharding.py)."""
    x, m, _ = _src_dst(low, op)
    axes = explicit_reduction_axes(op, m)
    low.replace(op, _all_reduce(low, x, axes, _reduction_kind(low, op)) if axes else x)


def lower_reduce_scatter(low: FunctionLowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    scatter = attr(op, "scatter_axes")
    kind = _reduction_kind(low, op)
    explicit = explicit_reduction_axes(op, m)
    if kind != "add" or len(explicit) != len(reduced_axes(op)):
        # JAX has only a summing psum_scatter, and axes the operand is whole on need no
        # reduction: reduce the unreduced axes everywhere, then keep the own part.
        if explicit:
            cur = _all_reduce(low, cur, explicit, kind)
        _, _, dst = _src_dst(low, op)
        for d, one in per_dim(scatter):
            cur = all_slice(low, cur, d, one[d], chunk(shape[d], dst.num_shards(d)))
        low.replace(op, cur)
        return
    for d, one in per_dim(scatter):
        axes = one[d]
        m = ReduceScatter(one).apply(m, shape)
        size = chunk(shape[d], m.num_shards(d))
        g = product(axes, m.mesh)
        cur = pad_dim(low, cur, d, g * size)
        attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
        local = low.local_shape(cur)
        cur = low.emit("spmd.reduce_scatter", [cur], attrs, with_dim(local, d, size), x.type.dtype)
    low.replace(op, cur)


def _even(op: Operation, shape: tuple[int, ...], m: NamedMapping) -> None:
    for d, n in enumerate(shape):
        if n % m.num_shards(d):
            raise PassError(
                f"'{op.name}' op: dim {d} of size {n} does not split evenly into "
                f"{m.num_shards(d)} shards; shardc lowers it on even dims only", op.loc
            )


def lower_sharded_to_unreduced(low: FunctionLowering, op: Operation) -> None:
    """Each device puts its block where it lies in the larger block of the result and zeros
    elsewhere, so the sum over the axes is the gathered tensor (no communication)."""
    x, src, _ = _src_dst(low, op)
    shape = op.result.type.shape
    _even(op, shape, src)
    cur = x
    for d, axes in enumerate(attr(op, "axes")):
        if not axes:
            continue
        local = low.local_shape(cur)
        g = product(axes, src.mesh)
        zeros = low.const(0, x.type.dtype, with_dim(local, d, local[d] * g))
        starts = [low.const(0, "i32") for _ in local]
        starts[d] = low.offset(axes, local[d])
        cur = low.emit("dynamic_update_slice", [zeros, cur, *starts], {},
                       with_dim(local, d, local[d] * g), x.type.dtype)
    low.replace(op, cur)


def lower_replicated_to_unreduced(low: FunctionLowering, op: Operation) -> None:
    """The first device of each group along the axes keeps the value, the others hold zeros
    (no communication)."""
    x, _, _ = _src_dst(low, op)
    local = low.local_shape(x)
    first = low.emit("compare", [low.axis_index(attr(op, "axes")), low.const(0, "i32")],
                     {"comparison_direction": Keyword("EQ")}, (), "i1")
    keep = low.splat(first, local)
    zeros = low.const(0, x.type.dtype, local)
    low.replace(op, low.emit("select", [keep, x, zeros], {}, local, x.type.dtype))
