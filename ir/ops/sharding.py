"""Sharding ops and the six collectives (global view: shapes are global, types carry mappings).

    %1 = sharding_constraint %0 : tensor<8x16xf32, <@mesh, [{"dp"}, {?}]>>
    sharding_group %0 {group_id = 0}
    %2 = propagation_barrier %1 {allowed_direction = FORWARD} : tensor<8x16xf32>
    %3 = reshard %2 : tensor<8x16xf32, <@mesh, [{}, {"tp"}]>>
    %4 = all_gather %3 {gathering_axes = [[], ["tp"]]} : tensor<8x16xf32, <@mesh, [{}, {}]>>
    %5 = all_slice %4 {slicing_axes = [["dp"], []]} : tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>
    %6 = all_to_all %5 {params = [{"dp"}: 0->1]} : tensor<..., [{}, {"dp"}]>
    %7 = collective_permute %6 : tensor<8x16xf32, <@mesh, [{}, {"dp"}]>>
    %8 = all_reduce %7 {reduction_axes = ["tp"]} : tensor<8x16xf32, <@mesh, [{}, {"dp"}]>>
    %9 = reduce_scatter %7 {scatter_axes = [["tp"], []], reduction_op = max} : ...
    %10 = sharded_to_unreduced %5 {axes = [["dp"], []]} : <@mesh, [{}, {}], unreduced={"dp"}>
    %11 = replicated_to_unreduced %4 {axes = ["dp"]} : <@mesh, [{}, {}], unreduced={"dp"}>

Each collective's result type names the sharding it produces, so the verifier can check that
the attributes turn the operand's sharding into exactly that one.
"""

from __future__ import annotations

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation
from shardc.ir.mapping import NamedMapping, axes_text
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.axis_lists import check_axis_list, check_axis_lists
from shardc.ir.ops.registry import (
    COLLECTIVE,
    NO_RESULTS,
    SHARDING,
    OpDef,
    attr,
    op_error,
    opt,
    register,
    req,
)
from shardc.ir.placements import ReduceOp
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


def _verify_layout_change(op: Operation) -> None:
    """`reshard` / `sharding_constraint`: a result sharding, and Shardy's rules for unreduced
    axes: axes the operand does not hold unreduced are introduced as `sum` partials, and axes it
    holds keep their reduction."""
    _needs_result_mapping(op)
    src, dst = op.operand(0).mapping, op.results[0].mapping
    if not dst.unreduced or (src is not None and src.mesh.name != dst.mesh.name):
        return
    mesh = dst.mesh
    held = src.unreduced if src is not None else ()
    introduced = [a for a in dst.unreduced if not any(b.contains(a, mesh) for b in held)]
    if introduced and dst.unreduced_op is not ReduceOp.SUM:
        raise op_error(op, f"cannot introduce '{dst.unreduced_op.value}' unreduced axes. "
                           "Expected 'sum'.")
    kept = any(a.overlaps(b, mesh) for a in dst.unreduced for b in held)
    if kept and src is not None and src.unreduced_op is not dst.unreduced_op:
        raise op_error(op, "cannot change the reduction operator of kept unreduced axes from "
                           f"{src.unreduced_op.value} to {dst.unreduced_op.value}.")


def _mappings(op: Operation) -> tuple[NamedMapping, NamedMapping]:
    """(operand sharding, result sharding); an operand without a sharding is fully replicated
    on the result's mesh, as in Shardy."""
    src, dst = op.operand(0).mapping, op.results[0].mapping
    if dst is None:
        raise op_error(
            op, 'result type must carry a sharding, e.g. tensor<8xf32, <@mesh, [{"x"}]>>'
        )
    if src is None:  # as in Shardy: an operand without a sharding is replicated on dst's mesh
        src = NamedMapping.fully_replicated(dst.mesh, dst.rank)
    if src.mesh.name != dst.mesh.name:
        raise op_error(op, f"operand is on mesh {src.mesh.ref_text()}, result on "
                           f"{dst.mesh.ref_text()}")
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
        groups += [src.unreduced, dst.unreduced, src.replicated, dst.replicated, *extra]
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
    check_axis_lists(op, per_dim, src.mesh)
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
    check_axis_lists(op, per_dim, src.mesh)
    if len(per_dim) != src.rank:
        raise op_error(op, f"slicing_axes needs one entry per dim ({src.rank})")
    view = _AtomView(src, dst, per_dim)
    dims = [view.of(dim.axes) + view.of(extra) for dim, extra in zip(src.dims, per_dim)]
    _expect(op, view, dims, view.of(src.unreduced), dst, "the operand plus the sliced axes")


def all_to_all_params(op: Operation) -> tuple[tuple[tuple[AxisRef, ...], int, int], ...]:
    """The (axes, src_dim, tgt_dim) moves of an all_to_all, in order."""
    return tuple((p.axes, p.src_dim, p.tgt_dim) for p in attr(op, "params"))


def _verify_all_to_all(op: Operation) -> None:
    src, dst = _mappings(op)
    params = all_to_all_params(op)
    check_axis_lists(op, [axes for axes, _, _ in params], src.mesh)
    if not params:
        raise op_error(op, "needs at least one parameter {axes}: src_dim->tgt_dim")
    view = _AtomView(src, dst, [axes for axes, _, _ in params])
    dims = [view.of(d.axes) for d in src.dims]
    seen: set[int] = set()
    previous = -1
    for axes, s, t in params:
        for d in (s, t):
            if not 0 <= d < src.rank:
                raise op_error(op, f"dim {d} is out of range for rank {src.rank}")
            if d in seen:
                raise op_error(op, f"dim {d} appears in two all_to_all parameters (or twice)")
            seen.add(d)
        if s <= previous:
            raise op_error(op, f"source dims must be increasing: {s} comes after {previous}")
        previous = s
        moved = view.of(axes)
        if not moved or dims[s][len(dims[s]) - len(moved) :] != moved:
            raise op_error(op, f"dim {s} is not sharded minor-most on {{{axes_text(axes)}}}")
        dims[s] = dims[s][: len(dims[s]) - len(moved)]
        dims[t] = dims[t] + moved
    moves = ", ".join(f"{s}->{t}" for _, s, t in params)
    _expect(op, view, dims, view.of(src.unreduced), dst, f"the axes moved along {moves}")


def _verify_collective_permute(op: Operation) -> None:
    src, dst = op.operand(0).mapping, op.results[0].mapping
    if src is None or dst is None:
        raise op_error(op, "operand and result must both carry shardings")
    # Shardy lets the result use another mesh with the same axes (other device order).
    if src.mesh.axes != dst.mesh.axes:
        raise op_error(op, f"result mesh {dst.mesh.ref_text()} has other axes than the operand's "
                           f"{src.mesh.ref_text()}")
    if src.mesh.name != dst.mesh.name and src.mesh.device_ids == dst.mesh.device_ids:
        raise op_error(op, "result mesh has another name but the same device ids as the operand's")
    if src.shard_counts() != dst.shard_counts():
        raise op_error(
            op, f"collective_permute keeps the shard count of every dim; {src} and {dst} differ"
        )


def _reduction_overlaps(op: Operation, view: _AtomView, src: NamedMapping, dst: NamedMapping,
                        reduced: list[Atom]) -> None:
    """Reduction axes may not shard the operand, be replicated in it, or stay unreduced in the
    result (Shardy's all_reduce/reduce_scatter constraints)."""
    taken = [a for d in src.dims for a in view.of(d.axes)] + view.of(src.replicated)
    if any(a in taken for a in reduced):
        raise op_error(op, "reduction axes overlap the operand's dim shardings or replicated axes")
    if any(a in view.of(dst.unreduced) for a in reduced):
        raise op_error(op, "reduction axes overlap the result's unreduced axes")


def _same_reduction(op: Operation, view: _AtomView, src: NamedMapping, reduced: list) -> None:
    """Reducing unreduced axes takes the operand's own reduction."""
    kind = reduction_of(op)
    pending = view.of(src.unreduced)
    if any(a in pending for a in reduced) and src.unreduced_op is not kind:
        raise op_error(op, f"cannot reduce '{src.unreduced_op.value}' unreduced axes. "
                           f"Expected '{kind.value}'.")


def _verify_all_reduce(op: Operation) -> None:
    """The result is the operand reduced over `reduction_axes`. Shardy also allows an axis the
    operand is not unreduced on: the operand is then partial along it implicitly (as Shardy's
    insert-explicit-reshards leaves a dot_general whose contracting dim is sharded). shardc's
    values are whole along such an axis, so reducing over it changes nothing."""
    src, dst = _mappings(op)
    axes = attr(op, "reduction_axes")
    check_axis_list(op, axes, src.mesh, "reduction")
    view = _AtomView(src, dst, [axes])
    reduced = view.of(axes)
    _reduction_overlaps(op, view, src, dst, reduced)
    _same_reduction(op, view, src, reduced)
    remaining = [a for a in view.of(src.unreduced) if a not in reduced]
    dims = [view.of(d.axes) for d in src.dims]
    _expect(op, view, dims, remaining, dst, "the operand with those axes reduced")


def _verify_reduce_scatter(op: Operation) -> None:
    src, dst = _mappings(op)
    per_dim = attr(op, "scatter_axes")
    check_axis_lists(op, per_dim, src.mesh)
    if len(per_dim) != src.rank:
        raise op_error(op, f"scatter_axes needs one entry per dim ({src.rank})")
    view = _AtomView(src, dst, per_dim)
    scattered = [a for d in per_dim for a in view.of(d)]
    _same_reduction(op, view, src, scattered)
    remaining = [a for a in view.of(src.unreduced) if a not in scattered]
    dims = [view.of(d.axes) + view.of(extra) for d, extra in zip(src.dims, per_dim)]
    _expect(op, view, dims, remaining, dst, "the operand reduced and scattered on those axes")


def reduced_axes(op: Operation) -> tuple[AxisRef, ...]:
    """The axes an all_reduce/reduce_scatter reduces over."""
    if op.name == "all_reduce":
        return tuple(attr(op, "reduction_axes"))
    return tuple(a for d in attr(op, "scatter_axes") for a in d)


def explicit_reduction_axes(op: Operation, src: NamedMapping | None) -> tuple[AxisRef, ...]:
    """The reduction axes of an all_reduce/reduce_scatter that its operand (sharded `src`) is
    unreduced on: the ones data is reduced over. The others are only implicitly partial in
    Shardy's sense (see `_verify_all_reduce`): shardc's values are already whole along them."""
    axes = reduced_axes(op)
    if src is None or not src.unreduced:
        return ()
    view = _AtomView(src, src, [axes])
    pending = view.of(src.unreduced)
    return tuple(a for a in axes if all(x in pending for x in view.of((a,))))


def reduction_of(op: Operation) -> ReduceOp:
    """The reduction of an all_reduce/reduce_scatter: `reduction_op` when written, else the
    operand's own unreduced reduction, else a sum."""
    written = op.attributes.get("reduction_op")
    if isinstance(written, Keyword):
        return ReduceOp.parse(written.word)
    src = op.operand(0).mapping
    return src.unreduced_op if src is not None and src.unreduced else ReduceOp.SUM


def _verify_sharded_to_unreduced(op: Operation) -> None:
    """The axes leave the minor end of their dims and become unreduced (no data moves: each
    device holds its block in place and zeros elsewhere, so the sum over the axes is the
    whole tensor)."""
    src, dst = _mappings(op)
    per_dim = attr(op, "axes")
    check_axis_lists(op, per_dim, src.mesh)
    if len(per_dim) != src.rank:
        raise op_error(op, f"axes needs one entry per dim ({src.rank})")
    if src.unreduced and src.unreduced_op is not ReduceOp.SUM or dst.unreduced_op is not \
            ReduceOp.SUM:
        raise op_error(op, "works with sum reductions only")
    view = _AtomView(src, dst, per_dim)
    dims = []
    for d, (dim, moved) in enumerate(zip(src.dims, per_dim)):
        have, drop = view.of(dim.axes), view.of(moved)
        if drop and have[len(have) - len(drop) :] != drop:
            raise op_error(op, f"dim {d} is not sharded minor-most on {{{axes_text(moved)}}}")
        dims.append(have[: len(have) - len(drop)])
    unreduced = view.of(src.unreduced) + [a for d in per_dim for a in view.of(d)]
    _expect(op, view, dims, unreduced, dst, "the operand with those axes made unreduced")


def _verify_replicated_to_unreduced(op: Operation) -> None:
    """Axes the operand is replicated on become unreduced (one device of each group keeps the
    value, the others hold zeros)."""
    src, dst = _mappings(op)
    axes = attr(op, "axes")
    check_axis_list(op, axes, src.mesh, "r2u")
    if not axes:
        raise op_error(op, "needs at least one axis")
    if dst.unreduced_op is not ReduceOp.SUM:
        raise op_error(op, "works with sum reductions only")
    view = _AtomView(src, dst, [axes])
    moved = view.of(axes)
    taken = [a for d in src.dims for a in view.of(d.axes)]
    if any(a in taken for a in moved):
        raise op_error(op, f"axes {{{axes_text(axes)}}} shard the operand; they must be replicated")
    if any(a in view.of(src.unreduced) for a in moved):
        raise op_error(op, f"axes {{{axes_text(axes)}}} are already unreduced in the operand")
    dims = [view.of(d.axes) for d in src.dims]
    _expect(op, view, dims, view.of(src.unreduced) + moved, dst,
            "the operand with those axes made unreduced")


register(
    OpDef("sharding_constraint", 1, 1, {}, _identity, _verify_layout_change, frozenset({SHARDING}))
)
register(OpDef("reshard", 1, 1, {}, _identity, _verify_layout_change, frozenset({SHARDING})))
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
def _verify_barrier(op: Operation) -> None:
    """A barrier that lets both directions through is no barrier; Shardy rejects it."""
    if attr(op, "allowed_direction").word == "BOTH":
        raise op_error(op, "cannot specify `BOTH` as the direction")


register(
    OpDef(
        "propagation_barrier",
        1,
        1,
        {"allowed_direction": req("keyword", *DIRECTIONS)},
        _identity,
        _verify_barrier,
        frozenset({SHARDING}),
    )
)

_C = frozenset({COLLECTIVE})

# The global-view collectives, in the order docs and reports list them.
GLOBAL_COLLECTIVES = (
    "all_gather",
    "all_slice",
    "all_to_all",
    "collective_permute",
    "all_reduce",
    "reduce_scatter",
    "sharded_to_unreduced",
    "replicated_to_unreduced",
)
# Shardy's reduction kinds of all_reduce and reduce_scatter (`sdy.all_reduce max {"x"} ...`).
SDY_REDUCTIONS = ("sum", "max", "min")
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
    OpDef("all_to_all", 1, 1, {"params": req("a2a_params")}, _identity, _verify_all_to_all, _C)
)
register(OpDef("collective_permute", 1, 1, {}, _identity, _verify_collective_permute, _C))
# Not written: the operand's own unreduced reduction (`reduction_of`).
_REDUCTION = opt("keyword", None, *SDY_REDUCTIONS)
register(
    OpDef(
        "all_reduce",
        1,
        1,
        {"reduction_axes": req("axes"), "reduction_op": _REDUCTION},
        _identity,
        _verify_all_reduce,
        _C,
    )
)
register(
    OpDef(
        "reduce_scatter",
        1,
        1,
        {"scatter_axes": req("axes_per_dim"), "reduction_op": _REDUCTION},
        _identity,
        _verify_reduce_scatter,
        _C,
    )
)
register(
    OpDef(
        "sharded_to_unreduced",
        1,
        1,
        {"axes": req("axes_per_dim")},
        _identity,
        _verify_sharded_to_unreduced,
        _C,
    )
)
register(
    OpDef(
        "replicated_to_unreduced",
        1,
        1,
        {"axes": req("axes")},
        _identity,
        _verify_replicated_to_unreduced,
        _C,
    )
)
