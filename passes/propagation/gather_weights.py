"""`gather-weights`: FSDP's plan, a weight gathered once where it is defined for all its uses.

When a mesh axis shards both a weight's contracted dim (FSDP: every weight's first dim on
"dp") and another argument (the batch on "dp"), propagation can give the activations only one
of the two. Shardy lets the weights win on some programs (the JAX GPT step: every activation
sharded along d_model), and each product then pays a collective on the forward/backward chain,
where one depends on the next and no combiner can merge them. XLA's partitioner instead
gathers every weight (independent of each other, so one combined all_gather), computes on
batch-sharded activations and reduces the gradients once. This pass writes that plan: each such
weight argument of `main` is resharded, right after its definition, to its sharding without the
conflicting axes, and every use reads the gathered value; propagation then shards the
activations by the batch.

    func @main(%w: tensor<64x256xf32, <@mesh, [{"dp"}, {}]>>,      (w contracted by the dot,
               %x: tensor<8x64xf32, <@mesh, [{"dp"}, {}]>>) {        x on the same axis)
      %y = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
  ->
      %g = reshard %w : tensor<64x256xf32, <@mesh, [{}, {}]>>
      %y = dot_general %x, %g {...}

A weight is an argument one of whose sharded dims a `dot_general` contracts or a `gather`
indexes (looking into the functions it is passed to), directly as the operand. Whether the
gathered plan is cheaper is a whole-program question (it trades activation collectives for
weight and gradient ones): `compile` with `CompileOptions.gather_weights="auto"` compiles both
and keeps the cheaper (docs/spmd.md, "Gathering weights (FSDP)"); this pass always gathers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.passes.manager import Pass, PassContext, register_pass


def _sharded_dims(m: NamedMapping) -> set[int]:
    return {i for i, d in enumerate(m.dims) if d.axes}


def _consumed_dims(op: Operation, index: int) -> set[int]:
    """The dims of operand `index` that `op` contracts (dot_general) or indexes (gather's
    operand): sharding one of them makes the result partial or needs the operand whole."""
    if op.name == "dot_general" and index < 2:
        key = "lhs_contracting_dims" if index == 0 else "rhs_contracting_dims"
        return set(op.attributes.get(key) or ())
    if op.name == "gather" and index == 0:
        return set(op.attributes.get("start_index_map") or ())
    return set()


def _uses(module: Module, value: Value, seen: frozenset[int]) -> list[tuple[Operation, int]]:
    """(op, operand index) for every use of `value`, looking through the calls it is passed to
    (the callee's argument's uses)."""
    found = []
    for use in value.uses:
        user, i = use.op, use.index
        if user.name == "return":
            continue
        found.append((user, i))
        if user.name == "call":
            callee = module.lookup_function(user.attr("callee").name)
            if callee is not None and id(callee) not in seen and i < len(callee.args):
                found += _uses(module, callee.args[i], seen | {id(callee)})
    return found


def _without(m: NamedMapping, axes: set[str]) -> NamedMapping:
    """`m` with `axes` taken out of every dim (a closed dim left empty drops its priority)."""
    dims = []
    for d in m.dims:
        kept = tuple(a for a in d.axes if a.name not in axes)
        keep_priority = kept or not d.is_closed
        dims.append(DimSharding(kept, d.is_closed, d.priority if keep_priority else None))
    return m.with_dims(dims)


def _entry(module: Module) -> Function | None:
    """The entry point (`Module.main`), or None for a module of private functions only."""
    if "main" in module.functions or any(not f.is_private for f in module.functions.values()):
        return module.main
    return None


CONTRACTIONS = ("dot_general", "gather")


def _reaches(module: Module, arg: Value) -> list[tuple[Operation, int, bool]]:
    """(product or gather, operand index, whether `arg` itself is that operand) for every one
    that `arg` flows into through other ops and calls; the flow stops at each product or
    gather (what comes out of one is an activation, no longer the argument)."""
    found: list[tuple[Operation, int, bool]] = []
    seen: set[int] = set()
    work = [(arg, True)]
    while work:
        value, direct = work.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        for use in value.uses:
            user, i = use.op, use.index
            if user.name == "return":  # (the entry's returns thousands: never a product)
                continue
            if user.name in CONTRACTIONS:
                found.append((user, i, direct))
            elif user.name == "call":
                # into the callee, and on from what it returns (not followed to the result it
                # came from: any result may carry it)
                callee = module.lookup_function(user.attr("callee").name)
                if callee is not None and i < len(callee.args):
                    work.append((callee.args[i], direct))
                work += [(r, False) for r in user.results]
            else:
                work += [(r, False) for r in user.results]
    return found


class Gather(NamedTuple):
    arg: Value  # an argument of the entry point
    target: NamedMapping  # its sharding without the conflicting axes
    table: bool  # only `gather`s index it on those axes (no product contracts them)


def weight_gathers(module: Module) -> list[Gather]:
    """Every argument whose contracted or indexed dims are sharded on an axis that, at some
    product or gather, also shards another argument flowing into it (the weight's dim against
    the batch's axis); [] when no op has such a conflict (then the pass changes nothing)."""
    main = _entry(module)
    if main is None:
        return []
    sharded = [(a, a.type.mapping, dims) for a in main.args if a.type.mapping is not None
               for dims in [_sharded_dims(a.type.mapping)] if dims]
    # per product or gather, the axes of the weights it reads directly that shard a dim it
    # consumes; per weight, all such axes
    at_op: dict[int, dict[int, set[str]]] = {}
    consumed: dict[int, set[str]] = {}
    contracted: dict[int, set[str]] = {}  # the axes of those a product (not a gather) consumes
    for a, m, dims in sharded:
        for op, i in _uses(module, a, frozenset()):
            axes = {x.name for d in _consumed_dims(op, i) & dims
                    for x in m.dims[d].axes}
            if axes:
                at_op.setdefault(id(op), {}).setdefault(i, set()).update(axes)
                consumed.setdefault(id(a), set()).update(axes)
                if op.name != "gather":
                    contracted.setdefault(id(a), set()).update(axes)
    weight_axes = set().union(*consumed.values())
    conflict: set[str] = set()
    if not consumed:
        return []
    for a, m, dims in sharded:
        mine = {x.name for x in m.used_axes()} & weight_axes
        if not mine or id(a) in consumed:
            continue
        for op, i, direct in _reaches(module, a):
            # read directly, only the argument's dims the op keeps count; through other ops
            # its dims are not followed, so any of its axes does
            axes = mine if not direct else {
                x.name for d in dims - _consumed_dims(op, i)
                for x in m.dims[d].axes} & mine
            for j, wanted in at_op.get(id(op), {}).items():
                if j != i:
                    conflict |= axes & wanted
    return [Gather(a, _without(m, conflict), not contracted.get(id(a), set()) & conflict)
            for a, m, _ in sharded if consumed.get(id(a), set()) & conflict]


def gather_weights(module: Module, tables: bool = True) -> int:
    """Reshard each weight `weight_gathers` names (with `tables=False`, not the tables only
    gathers index) where it is defined; every use but a `return` reads the gathered value.
    Returns how many were gathered."""
    main = _entry(module)
    gathers = [(g.arg, g.target) for g in weight_gathers(module) if tables or not g.table]
    assert main is not None or not gathers
    anchor = main.body.first if main is not None else None  # the reshards in argument order
    for arg, target in gathers:
        assert isinstance(main, Function)
        uses = [(u, i) for u in arg.users if u.name != "return"
                for i, o in enumerate(u.operands) if o is arg]
        op = Operation("reshard", [arg], [arg.type.with_mapping(target)], {})
        reshard = (main.body.insert_before(anchor, op) if anchor is not None
                   else main.body.append(op))
        for user, i in uses:
            user.set_operand(i, reshard.result)
    return len(gathers)


@register_pass("gather-weights")
@dataclass(frozen=True)
class GatherWeights(Pass):
    """Gather each weight whose contracted dim shares a mesh axis with another argument once,
    where it is defined (FSDP's plan; before propagation)."""

    # false: leave sharded the tables only a `gather` indexes (an embedding's lookup moves
    # the rows it reads, a gathered table all of them)
    tables: bool = True

    def run(self, module: Module, ctx: PassContext) -> None:
        gather_weights(module, self.tables)
