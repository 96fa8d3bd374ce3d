"""`canonicalize`: local rewrites of reshards and collectives, applied to a fixed point.

    shardc opt model.mlir -p insert-reshards,canonicalize,lower-collectives,canonicalize

The rewrites are a table of `(pattern, function)` rows (tinygrad style): a row's pattern names
the ops it looks at, its function rewrites one such op in place and says whether it did. Every
rewrite keeps each value's layout (its type), so the verifier still holds after each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops import GLOBAL_COLLECTIVES, verify_operation
from shardc.ir.ops.effects import SIDE_EFFECTS, erase_dead, is_dead
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.analysis.collectives.sub_axes import add_or_merge
from shardc.passes.manager import Pass, PassContext, register_pass

Rewrite = Callable[[Operation], bool]
ANY = "*"
COLLECTIVES = GLOBAL_COLLECTIVES


def _producer(v: Value, name: str) -> Operation | None:
    op = v.defining_op
    return op if op is not None and op.name == name else None


def _forward(op: Operation, value: Value) -> bool:
    """Replace `op`'s result by `value` and erase `op`."""
    value_hint = value.name_hint or op.result.name_hint
    op.result.replace_all_uses_with(value)
    op.erase()
    value.name_hint = value_hint
    return True


def fold_reshard_chain(op: Operation) -> bool:
    inner = _producer(op.operand(0), "reshard")
    if inner is None or len(inner.result.uses) != 1:
        return False
    op.set_operand(0, inner.operand(0))
    inner.erase()
    return True


def drop_noop(op: Operation) -> bool:
    source, result = op.operand(0).mapping, op.result.mapping
    if source is None or result is None or not same_layout(source, result):
        return False
    return _forward(op, op.operand(0))


def _flat(per_dim: tuple[tuple[AxisRef, ...], ...]) -> list[AxisRef]:
    return [a for axes in per_dim for a in axes]


def all_reduce_then_slice(op: Operation) -> bool:
    reduce = _producer(op.operand(0), "all_reduce")
    if reduce is None or len(reduce.result.uses) != 1:
        return False
    scattered = _flat(op.attr("slicing_axes"))
    reduced = list(reduce.attr("reduction_axes"))
    if not scattered or any(a not in reduced for a in scattered):
        return False
    source = reduce.operand(0)
    rest = tuple(a for a in reduced if a not in scattered)
    block = op.parent
    assert block is not None
    built: list[Operation] = []
    try:
        if rest:
            mapping = source.mapping
            assert mapping is not None, "all_reduce verifies its operand has a sharding"
            kept = tuple(a for a in mapping.unreduced if a not in rest)
            partial = mapping.replace(unreduced=kept)
            t = DistributedTensorType(source.type.shape, source.type.dtype, partial)
            first = Operation.at(reduce, "all_reduce", [source], [t], {"reduction_axes": rest})
            built.append(block.insert_before(op, first))
            verify_operation(first)
            source = first.result
        attrs = {"scatter_axes": op.attr("slicing_axes")}
        new = Operation.at(op, "reduce_scatter", [source], [op.result.type], attrs)
        built.append(block.insert_before(op, new))
        verify_operation(new)
    except ShardcError:  # a layout the IR's ops cannot spell: keep the original pair
        for b in reversed(built):
            b.erase()
        return False
    _forward(op, new.result)
    reduce.erase()
    return True


def _cancel(op: Operation, inner_name: str, inner_key: str, outer_key: str) -> bool:
    inner = _producer(op.operand(0), inner_name)
    if inner is None or inner.attr(inner_key) != op.attr(outer_key):
        return False
    source = inner.operand(0)
    if source.mapping is None or not same_layout(source.mapping, op.result.mapping):
        return False
    return _forward(op, source)


def slice_after_gather(op: Operation) -> bool:
    return _cancel(op, "all_gather", "gathering_axes", "slicing_axes")


def gather_after_slice(op: Operation) -> bool:
    return _cancel(op, "all_slice", "slicing_axes", "gathering_axes")


REWRITES: list[tuple[str | tuple[str, ...], Rewrite]] = [
    ("reshard", fold_reshard_chain),  # reshard(reshard(x)) -> reshard(x)
    ("reshard", drop_noop),  # reshard(x) laid out as x -> x
    (COLLECTIVES, drop_noop),  # collective(x) laid out as x (empty axes) -> x
    ("all_slice", all_reduce_then_slice),  # all_slice{A}(all_reduce{A}(x)) -> reduce_scatter{A}(x)
    ("all_slice", slice_after_gather),  # all_slice{A}(all_gather{A}(x)) -> x
    ("all_gather", gather_after_slice),  # all_gather{A}(all_slice{A}(x)) -> x
    (ANY, erase_dead),  # op whose results are unused, without side effects -> nothing
]


# ----- Shardy's labelled canonicalization patterns (`canonicalize{enable-patterns=LABEL}`) -----


def _empty_axes(key: str) -> Rewrite:
    """`collective(x)` with no axes -> x (Shardy's `*NoopPattern`s)."""
    def rewrite(op: Operation) -> bool:
        if any(op.attr(key)):  # a non-empty dim (per-dim axes) or axis (flat axes)
            return False
        return _forward(op, op.operand(0))
    return rewrite


def all_reduce_of_replicated_to_unreduced(op: Operation) -> bool:
    inner = _producer(op.operand(0), "replicated_to_unreduced")
    if inner is None or tuple(inner.attr("axes")) != tuple(op.attr("reduction_axes")):
        return False
    return _forward(op, inner.operand(0))


def unused_all_to_all(op: Operation) -> bool:
    if op.result.uses:
        return False
    op.erase()
    return True


def all_to_all_fusion(op: Operation) -> bool:
    """all_to_all{B}(all_to_all{A}(x)), the inner one used once and A, B on distinct dims ->
    all_to_all{A and B by source dim}(x) (Shardy's `AllToAllFusionPattern`)."""
    inner = _producer(op.operand(0), "all_to_all")
    if inner is None or len(inner.result.uses) != 1:
        return False
    params = (*inner.attr("params"), *op.attr("params"))
    dims = [d for p in params for d in (p.src_dim, p.tgt_dim)]
    if len(set(dims)) != len(dims):
        return False
    op.attributes["params"] = tuple(sorted(params, key=lambda p: p.src_dim))
    op.set_operand(0, inner.operand(0))
    inner.erase()
    return True


def slice_of_gather(op: Operation) -> bool:
    inner = _producer(op.operand(0), "all_gather")
    if inner is None or inner.attr("gathering_axes") != op.attr("slicing_axes"):
        return False
    return _forward(op, inner.operand(0))


def reduce_scatter_fusion(op: Operation) -> bool:
    """Shardy's `ReduceScatterFusion`: all_slice(all_reduce{R}(x)) -> reduce_scatter of the
    longest prefix of each dim's slicing axes in R (when that uses all of R), then an all_slice
    of the rest; every user of the all_reduce is an identical all_slice, this one first."""
    reduce = _producer(op.operand(0), "all_reduce")
    if reduce is None:
        return False
    slicing = op.attr("slicing_axes")
    users = reduce.result.users
    if any(u.name != "all_slice" or u.attr("slicing_axes") != slicing for u in users):
        return False
    if users[0] is not op and _before(users[0], op):
        return False
    remaining = list(reduce.attr("reduction_axes"))
    scatter, residual = [], []
    for axes in slicing:
        k = 0
        while k < len(axes) and axes[k] in remaining:
            remaining.remove(axes[k])
            k += 1
        scatter.append(tuple(axes[:k]))
        residual.append(tuple(axes[k:]))
    if remaining:
        return False
    source = reduce.operand(0)
    out = op.result.mapping
    mesh = reduce.result.mapping.mesh
    base = source.mapping or NamedMapping.fully_replicated(mesh, source.type.rank)
    dims = []
    for dim, added in zip(base.dims, scatter):
        axes = list(dim.axes)
        for ref in added:
            add_or_merge(axes, ref, mesh)
        dims.append(DimSharding(tuple(axes), True))
    mapping = NamedMapping(mesh, tuple(dims), out.replicated, out.unreduced, out.unreduced_op)
    attrs = {"scatter_axes": tuple(scatter)}
    if reduce.attr("reduction_op") is not None:
        attrs["reduction_op"] = reduce.attr("reduction_op")
    block = op.parent
    assert block is not None
    new = block.insert_before(op, Operation.at(
        reduce, "reduce_scatter", [source],
        [DistributedTensorType(source.type.shape, source.type.dtype, mapping)], attrs))
    verify_operation(new)
    final = new.result
    if any(residual):
        rest = block.insert_before(op, Operation.at(
            op, "all_slice", [final], [op.result.type], {"slicing_axes": tuple(residual)}))
        verify_operation(rest)
        final = rest.result
    for user in users:
        _forward(user, final)
    reduce.erase()
    return True


def _before(a: Operation, b: Operation) -> bool:
    """`a` comes before `b` in their block."""
    op = a.next
    while op is not None:
        if op is b:
            return True
        op = op.next
    return False


# Shardy's patterns by label (shardy/dialect/sdy/ir/canonicalization.td).
LABELLED: dict[str, list[tuple[str | tuple[str, ...], Rewrite]]] = {
    "sdy-reshard": [("reshard", fold_reshard_chain)],  # reshard(reshard(x)) one use
    "sdy-collective": [
        ("all_gather", _empty_axes("gathering_axes")),  # all_gather [{}] x -> x
        ("all_slice", slice_of_gather),  # all_slice{A}(all_gather{A}(x)) -> x
        ("all_slice", _empty_axes("slicing_axes")),  # all_slice [{}] x -> x
        ("all_reduce", _empty_axes("reduction_axes")),  # all_reduce {} x -> x
        ("all_reduce", all_reduce_of_replicated_to_unreduced),  # u2r{A}(r2u{A}(x)) -> x
        ("all_to_all", all_to_all_fusion),  # all_to_all(all_to_all(x)) on other dims -> one
        ("all_to_all", unused_all_to_all),  # unused all_to_all -> nothing
        ("collective_permute", drop_noop),  # permute to an equivalent sharding -> x
        ("all_slice", reduce_scatter_fusion),  # all_slice(all_reduce(x)) -> reduce_scatter(x)
        ("reduce_scatter", _empty_axes("scatter_axes")),  # reduce_scatter [{}] x -> x
    ],
}
# Ops MLIR's canonicalizer may not erase when unused (not `Pure`): sdy's collectives and
# sharding ops, and StableHLO's ops with effects.
IMPURE = frozenset({*SIDE_EFFECTS, *COLLECTIVES, "sharding_constraint", "data_flow_edge",
                    "named_computation", "call", "while", "case", "infeed", "outfeed", "send",
                    "recv", "after_all", "create_token"})


def _mlir_canonicalize(module: Module, patterns: list) -> int:
    """What MLIR's greedy canonicalizer does with only `patterns` enabled: the patterns to a
    fixed point, unused `Pure` ops erased, and constants uniqued and hoisted to the top of the
    function (each moved to the front as it is met, so they end in reverse order)."""
    count = 0
    for func in module.functions.values():
        seen: dict[tuple[str, str], Operation] = {}
        for op in list(func.body):
            if op.name != "constant":
                continue
            key = (repr(op.attributes), op.result.type.text())
            if key in seen:
                _forward(op, seen[key].result)
                count += 1
                continue
            seen[key] = op
            first = func.body.ops[0]
            if first is not op:
                func.body._unlink(op)
                func.body.insert_before(first, op)
    rows = [*patterns, (ANY, erase_dead_pure)]
    return count + canonicalize_module(module, rows)


def erase_dead_pure(op: Operation) -> bool:
    if op.name in IMPURE or not op.results or any(r.uses for r in op.results):
        return False
    op.erase()
    return True


def _matches(pattern: str | tuple[str, ...], op: Operation) -> bool:
    if pattern == ANY:
        return True
    return op.name == pattern if isinstance(pattern, str) else op.name in pattern


def canonicalize_module(module: Module, rewrites=REWRITES) -> int:
    """Apply `rewrites` until none fires; returns how many rewrites ran.

    Each sweep visits the ops in order and applies the first of an op's rewrites that fires,
    until a sweep changes nothing. With the default rewrites a later sweep visits only the ops
    that can fire in it (`_lean_sweeps`); the rewrites, their order and the result are those
    of full sweeps."""
    if rewrites is REWRITES:
        return _lean_sweeps(module)
    count = 0
    by_name: dict[str, list] = {}  # op name -> its rewrites, in `rewrites` order
    for func in module.functions.values():
        changed = True
        while changed:
            changed = False
            for op in list(func.body):
                if op.parent is None:
                    continue
                for rewrite in _rewrites_of(op, rewrites, by_name):
                    if rewrite(op):
                        count += 1
                        changed = True
                        break
    return count


def _rewrites_of(op: Operation, rewrites, by_name: dict[str, list]) -> list:
    mine = by_name.get(op.name)
    if mine is None:
        mine = by_name[op.name] = [r for p, r in rewrites if _matches(p, op)]
    return mine


def _lean_sweeps(module: Module) -> int:
    """`canonicalize_module` with `REWRITES`, whose sweeps after the first are mostly
    `erase_dead` taking one more op off each chain of dead ops (an 8-layer Llama step: 9
    sweeps of ~5,500 ops, 90 ops erased).

    Why a sweep may skip an op whose only rewrite is `erase_dead`: that rewrite fires iff the
    op's results have no uses when it is visited. Within a sweep, a rewrite of an op P before
    the op O cannot take a use from O: every `REWRITES` rewrite changes only P, the uses of
    P's results (moved to an earlier value, which may give O a use, never take one) and ops
    before P (its operands' producers), while O's users come after O. So O can fire in a
    sweep only if its results had no uses as the sweep began. After a sweep in which only
    `erase_dead` fired (no op was made, none moved), the ops that lost uses during it are the
    producers of the erased ops' operands; every other op that had uses at its visit still
    has them. After a sweep in which another rewrite fired, the next sweep visits every op."""
    count = 0
    by_name: dict[str, list] = {}
    for func in module.functions.values():
        order: list[Operation] = []
        position: dict[int, int] = {}
        always: list[int] = []  # positions in `order` of ops with a rewrite besides erase_dead
        visit: list[Operation] | None = None  # None: every op
        while True:
            full = visit is None
            if full:
                visit = order = list(func.body)
                position = {}
                always = []
            dropped: list[Value] = []  # operands of the ops erase_dead erased
            changed = other = False
            for i, op in enumerate(visit):
                if op.parent is None:
                    continue
                mine = _rewrites_of(op, REWRITES, by_name)
                if full and (len(mine) != 1 or mine[0] is not erase_dead):
                    always.append(i)
                for rewrite in mine:
                    if rewrite is erase_dead:
                        if not is_dead(op):  # (most ops: asked before copying the operands)
                            continue
                        dropped.extend(op.operands)
                        op.erase()
                    elif not rewrite(op):
                        continue
                    else:
                        other = True
                    count += 1
                    changed = True
                    break
            if not changed:
                break
            if other:
                visit = None
                continue
            if not position:
                position = {id(op): i for i, op in enumerate(order)}
            at = set(always)
            for v in dropped:
                d = v.defining_op
                if d is not None and d.parent is not None:
                    at.add(position[id(d)])
            visit = [order[i] for i in sorted(at)]
    return count


@register_pass("canonicalize")
@dataclass(frozen=True)
class Canonicalize(Pass):
    """Fold reshard chains, drop no-op collectives, fuse all_reduce+all_slice, erase dead ops.
    With `enable-patterns=sdy-reshard` or `sdy-collective`: MLIR's canonicalizer with only
    Shardy's patterns of that label (what Shardy's export pipeline runs)."""

    enable_patterns: str = ""

    def run(self, module: Module, ctx: PassContext) -> None:
        stats = ctx.data.setdefault("canonicalize", {"rewrites": 0})
        if not self.enable_patterns:
            stats["rewrites"] += canonicalize_module(module)
            return
        labels = [x.strip() for x in self.enable_patterns.strip("{}").split(",") if x.strip()]
        unknown = [x for x in labels if x not in LABELLED]
        if unknown:
            raise PassError(f"canonicalize: unknown pattern label '{unknown[0]}' (known: "
                            f"{', '.join(LABELLED)})")
        rows = [row for x in labels for row in LABELLED[x]]
        stats["rewrites"] += _mlir_canonicalize(module, rows)
