"""Sharding ops and the six collectives (global view: shapes are global, types carry mappings).

    %1 = sharding_constraint %0 : tensor<8x16xf32, <@mesh, [{"dp"}, {?}]>>
    sharding_group %0 {group_id = 0}
    %2 = propagation_barrier %1 {allowed_direction = FORWARD} : tensor<8x16xf32>
    %3 = reshard %2 : tensor<8x16xf32, <@mesh, [{}, {"tp"}]>>
    %4 = all_gather %3 {gathering_axes = [[], ["tp"]]} : tensor<8x16xf32, <@mesh, [{}, {}]>>
    %5 = all_slice %4 {slicing_axes = [["dp"], []]} : tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>
    %6 = all_to_all %5 {axes = ["dp"], src_dim = 0, tgt_dim = 1} : tensor<..., [{}, {"dp"}]>
    %7 = collective_permute %6 : tensor<8x16xf32, <@mesh, [{}, {"dp"}]>>
    %8 = all_reduce %7 {reduction_axes = ["tp"]} : tensor<8x16xf32, <@mesh, [{}, {"dp"}]>>
    %9 = reduce_scatter %7 {scatter_axes = [["tp"], []]} : ...

Each collective's result type names the sharding it produces, so the verifier can check that
the attributes turn the operand's sharding into exactly that one.
"""

from __future__ import annotations

from ir.core import Operation
from ir.mapping import NamedMapping, axes_text
from ir.ops.registry import COLLECTIVE, NO_RESULTS, SHARDING, OpDef, attr, op_error, register, req
from ir.types import TensorType

DIRECTIONS = ("FORWARD", "BACKWARD", "BOTH", "NONE")


def _identity(op: Operation) -> list[TensorType]:
    t = op.operand(0).type
    return [TensorType(t.shape, t.dtype)]


def _needs_result_mapping(op: Operation) -> None:
    if op.results[0].mapping is None:
        raise op_error(
            op, 'result type must carry a sharding, e.g. tensor<8xf32, <@mesh, [{"x"}]>>'
        )


def _mappings(op: Operation) -> tuple[NamedMapping, NamedMapping]:
    src, dst = op.operand(0).mapping, op.results[0].mapping
    if src is None or dst is None:
        raise op_error(op, "operand and result must both carry shardings")
    if src.mesh.name != dst.mesh.name:
        raise op_error(op, f"operand is on mesh @{src.mesh.name}, result on @{dst.mesh.name}")
    return src, dst


def _axes_per_dim(m: NamedMapping) -> list[tuple]:
    return [d.axes for d in m.dims]


def _expect(op: Operation, dims: list[tuple], unreduced: tuple, dst: NamedMapping) -> None:
    got = _axes_per_dim(dst)
    if got != [tuple(d) for d in dims] or tuple(dst.unreduced) != tuple(unreduced):
        want = "[" + ", ".join("{" + axes_text(d) + "}" for d in dims) + "]"
        if unreduced:
            want += f" unreduced={{{axes_text(unreduced)}}}"
        raise op_error(op, f"result sharding {dst} does not match what the op produces: {want}")


def _verify_all_gather(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "gathering_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"gathering_axes needs one entry per dim ({src.rank})")
    dims = []
    for d, (axes, gather) in enumerate(zip(_axes_per_dim(src), per_dim)):
        k = len(gather)
        if k and tuple(axes[len(axes) - k :]) != tuple(gather):
            raise op_error(op, f"dim {d} is not sharded minor-most on {{{axes_text(gather)}}}")
        dims.append(axes[: len(axes) - k])
    _expect(op, dims, src.unreduced, dst)


def _verify_all_slice(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "slicing_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"slicing_axes needs one entry per dim ({src.rank})")
    dims = [tuple(axes) + tuple(s) for axes, s in zip(_axes_per_dim(src), per_dim)]
    _expect(op, dims, src.unreduced, dst)


def _verify_all_to_all(op: Operation) -> None:
    src, dst = _mappings(op)
    axes = attr(op, "axes")
    s, t = attr(op, "src_dim"), attr(op, "tgt_dim")
    if not (0 <= s < src.rank and 0 <= t < src.rank) or s == t:
        raise op_error(op, f"src_dim {s} and tgt_dim {t} must be distinct dims of rank {src.rank}")
    dims = [tuple(a) for a in _axes_per_dim(src)]
    k = len(axes)
    if k == 0 or dims[s][len(dims[s]) - k :] != tuple(axes):
        raise op_error(op, f"dim {s} is not sharded minor-most on {{{axes_text(axes)}}}")
    dims[s] = dims[s][: len(dims[s]) - k]
    dims[t] = dims[t] + tuple(axes)
    _expect(op, dims, src.unreduced, dst)


def _verify_collective_permute(op: Operation) -> None:
    src, dst = _mappings(op)
    if src.shard_counts() != dst.shard_counts():
        raise op_error(
            op, f"collective_permute keeps the shard count of every dim; {src} and {dst} differ"
        )


def _verify_all_reduce(op: Operation) -> None:
    src, dst = _mappings(op)
    axes = attr(op, "reduction_axes")
    missing = [a for a in axes if a not in src.unreduced]
    if missing:
        raise op_error(op, f"operand is not unreduced on {{{axes_text(missing)}}}")
    remaining = tuple(a for a in src.unreduced if a not in axes)
    _expect(op, _axes_per_dim(src), remaining, dst)


def _verify_reduce_scatter(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "scatter_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"scatter_axes needs one entry per dim ({src.rank})")
    flat = [a for d in per_dim for a in d]
    missing = [a for a in flat if a not in src.unreduced]
    if missing:
        raise op_error(op, f"operand is not unreduced on {{{axes_text(missing)}}}")
    remaining = tuple(a for a in src.unreduced if a not in flat)
    dims = [tuple(axes) + tuple(s) for axes, s in zip(_axes_per_dim(src), per_dim)]
    _expect(op, dims, remaining, dst)


register(
    OpDef("sharding_constraint", 1, 1, {}, _identity, _needs_result_mapping, frozenset({SHARDING}))
)
register(OpDef("reshard", 1, 1, {}, _identity, _needs_result_mapping, frozenset({SHARDING})))
register(
    OpDef(
        "sharding_group",
        1,
        0,
        {"group_id": req("int")},
        None,
        None,
        frozenset({SHARDING, NO_RESULTS}),
    )
)
register(
    OpDef(
        "propagation_barrier",
        1,
        1,
        {"allowed_direction": req("keyword", *DIRECTIONS)},
        _identity,
        None,
        frozenset({SHARDING}),
    )
)

_C = frozenset({COLLECTIVE})
register(
    OpDef(
        "all_gather",
        1,
        1,
        {"gathering_axes": req("axes_per_dim")},
        _identity,
        _verify_all_gather,
        _C,
    )
)
register(
    OpDef(
        "all_slice", 1, 1, {"slicing_axes": req("axes_per_dim")}, _identity, _verify_all_slice, _C
    )
)
register(
    OpDef(
        "all_to_all",
        1,
        1,
        {"axes": req("axes"), "src_dim": req("int"), "tgt_dim": req("int")},
        _identity,
        _verify_all_to_all,
        _C,
    )
)
register(OpDef("collective_permute", 1, 1, {}, _identity, _verify_collective_permute, _C))
register(
    OpDef("all_reduce", 1, 1, {"reduction_axes": req("axes")}, _identity, _verify_all_reduce, _C)
)
register(
    OpDef(
        "reduce_scatter",
        1,
        1,
        {"scatter_axes": req("axes_per_dim")},
        _identity,
        _verify_reduce_scatter,
        _C,
    )
)
