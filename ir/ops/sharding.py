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

from shardc.ir.core import Operation
from shardc.ir.mapping import NamedMapping, axes_text
from shardc.ir.ops.registry import (
    COLLECTIVE,
    NO_RESULTS,
    SHARDING,
    OpDef,
    attr,
    op_error,
    register,
    req,
)
from shardc.ir.types import TensorType

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
    if dst is None:
        raise op_error(op, "the result must carry a sharding")
    if src is None:  # as in Shardy: an operand without a sharding is replicated on dst's mesh
        src = NamedMapping.fully_replicated(dst.mesh, dst.rank)
    if src.mesh.name != dst.mesh.name:
        raise op_error(op, f"operand is on mesh @{src.mesh.name}, result on @{dst.mesh.name}")
    return src, dst


# Axis lists are compared as "atoms": every (sub-)axis is cut at each boundary any ref of the
# same axis uses, so `{"x"}` minus `"x":(2)2` is `{"x":(1)2}` on an axis of size 4.
Atom = tuple[str, int, int]  # axis name, [lo, hi) as products of the more-major sizes


def _cuts(mesh, groups) -> dict[str, set[int]]:
    cuts: dict[str, set[int]] = {}
    for refs in groups:
        for r in refs:
            lo, hi = r.interval(mesh)
            cuts.setdefault(r.name, {1, mesh.axis_size(r.name)}).update((lo, hi))
    return cuts


def _atoms(refs, mesh, cuts) -> list[Atom]:
    out: list[Atom] = []
    for r in refs:
        lo, hi = r.interval(mesh)
        if lo == hi:  # an axis of size 1: one (empty) atom of its own
            out.append((r.name, lo, hi))
            continue
        points = sorted(c for c in cuts[r.name] if lo <= c <= hi)
        out.extend((r.name, a, b) for a, b in zip(points, points[1:]))
    return out


class _AtomView:
    """One op's operand/result shardings and attribute axes, cut into comparable atoms."""

    def __init__(self, src: NamedMapping, dst: NamedMapping, extra) -> None:
        self.mesh = src.mesh
        groups = [d.axes for d in src.dims] + [d.axes for d in dst.dims]
        groups += [src.unreduced, dst.unreduced, *extra]
        self.cuts = _cuts(self.mesh, groups)

    def of(self, refs) -> list[Atom]:
        return _atoms(refs, self.mesh, self.cuts)


def _expect(op: Operation, view: _AtomView, dims, unreduced, dst: NamedMapping, want) -> None:
    got = [view.of(d.axes) for d in dst.dims]
    got_unreduced = sorted(view.of(dst.unreduced))
    if got != dims or got_unreduced != sorted(unreduced):
        raise op_error(op, f"result sharding {dst} does not match what the op produces: {want}")


def _verify_all_gather(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "gathering_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"gathering_axes needs one entry per dim ({src.rank})")
    view = _AtomView(src, dst, per_dim)
    dims = []
    for d, (dim, gather) in enumerate(zip(src.dims, per_dim)):
        have, drop = view.of(dim.axes), view.of(gather)
        if drop and have[len(have) - len(drop) :] != drop:
            raise op_error(op, f"dim {d} is not sharded minor-most on {{{axes_text(gather)}}}")
        dims.append(have[: len(have) - len(drop)])
    _expect(op, view, dims, view.of(src.unreduced), dst, "the operand minus the gathered axes")


def _verify_all_slice(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "slicing_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"slicing_axes needs one entry per dim ({src.rank})")
    view = _AtomView(src, dst, per_dim)
    dims = [view.of(dim.axes) + view.of(extra) for dim, extra in zip(src.dims, per_dim)]
    _expect(op, view, dims, view.of(src.unreduced), dst, "the operand plus the sliced axes")


def _verify_all_to_all(op: Operation) -> None:
    src, dst = _mappings(op)
    axes = attr(op, "axes")
    s, t = attr(op, "src_dim"), attr(op, "tgt_dim")
    if not (0 <= s < src.rank and 0 <= t < src.rank) or s == t:
        raise op_error(op, f"src_dim {s} and tgt_dim {t} must be distinct dims of rank {src.rank}")
    view = _AtomView(src, dst, [axes])
    dims = [view.of(d.axes) for d in src.dims]
    moved = view.of(axes)
    if not moved or dims[s][len(dims[s]) - len(moved) :] != moved:
        raise op_error(op, f"dim {s} is not sharded minor-most on {{{axes_text(axes)}}}")
    dims[s] = dims[s][: len(dims[s]) - len(moved)]
    dims[t] = dims[t] + moved
    _expect(op, view, dims, view.of(src.unreduced), dst, f"the axes moved from dim {s} to {t}")


def _verify_collective_permute(op: Operation) -> None:
    src, dst = _mappings(op)
    if src.shard_counts() != dst.shard_counts():
        raise op_error(
            op, f"collective_permute keeps the shard count of every dim; {src} and {dst} differ"
        )


def _verify_all_reduce(op: Operation) -> None:
    src, dst = _mappings(op)
    axes = attr(op, "reduction_axes")
    view = _AtomView(src, dst, [axes])
    pending, reduced = view.of(src.unreduced), view.of(axes)
    dims = [view.of(d.axes) for d in src.dims]
    # As in Shardy, reduction axes the operand is not unreduced on reduce the implicit partial
    # values of the op that defines it (what sdy-insert-explicit-reshards prints); they must not
    # shard a dim (docs/ir.md).
    if any(a in d for d in dims for a in reduced if a not in pending):
        raise op_error(
            op, f"reduction axes {{{axes_text(axes)}}} overlap the operand's dim shardings"
        )
    remaining = [a for a in pending if a not in reduced]
    _expect(op, view, dims, remaining, dst, "the operand with those axes reduced")


def _verify_reduce_scatter(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "scatter_axes")
    if len(per_dim) != src.rank:
        raise op_error(op, f"scatter_axes needs one entry per dim ({src.rank})")
    view = _AtomView(src, dst, per_dim)
    pending = view.of(src.unreduced)
    scattered = [a for d in per_dim for a in view.of(d)]
    if any(a not in pending for a in scattered):
        raise op_error(op, "operand is not unreduced on the scattered axes")
    remaining = [a for a in pending if a not in scattered]
    dims = [view.of(d.axes) + view.of(extra) for d, extra in zip(src.dims, per_dim)]
    _expect(op, view, dims, remaining, dst, "the operand reduced and scattered on those axes")


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

# The six global-view collectives, in the order docs and reports list them.
GLOBAL_COLLECTIVES = (
    "all_gather",
    "all_slice",
    "all_to_all",
    "collective_permute",
    "all_reduce",
    "reduce_scatter",
)
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
