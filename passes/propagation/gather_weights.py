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
indexes (looking into the functions it is passed to), directly as the operand. It conflicts
when, at such an op, another argument's sharding on the same axis reaches a dim the op keeps
(a batch or free dim), following that argument through ops that keep its dims apart
(elementwise ops, broadcasts, transposes, size-preserving reshapes, calls) up to the op. Whether the
gathered plan is cheaper is a whole-program question (it trades activation collectives for
weight and gradient ones): `compile` with `CompileOptions.gather_weights="auto"` compiles both
and keeps the cheaper (docs/spmd.md, "Gathering weights (FSDP)"); this pass always gathers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from shardc.ir.core import Cause, Function, Module, Operation, Value
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
# Ops whose result keeps each operand dim where it was (whatever their shapes do).
SAME_DIMS = frozenset({"slice", "pad", "dynamic_slice", "dynamic_update_slice", "concatenate",
                       "reverse", "sort", "clamp", "select", "iota"})

Dims = frozenset[int]


def _result_dims(op: Operation, index: int, dims: Dims) -> Dims | None:
    """Where operand `index`'s `dims` are in `op`'s (first) result; None: not followed (a
    reduction, a shuffle of dims this walk does not model)."""
    operand, result = op.operand(index).type, op.results[0].type
    if op.name == "broadcast_in_dim":
        return frozenset(op.attributes["broadcast_dimensions"][d] for d in dims)
    if op.name == "transpose":
        perm = list(op.attributes["permutation"])
        return frozenset(perm.index(d) for d in dims)
    if op.name == "reshape":
        # a dim keeps its identity where the sizes before it multiply to the same number
        # and it keeps its size (a [8,16] -> [8,16,1] reshape, say)
        before, where = 1, {}
        for j, n in enumerate(result.shape):
            where.setdefault((before, n), j)
            before *= n
        before, out = 1, set()
        for i, n in enumerate(operand.shape):
            if i in dims:
                if (before, n) not in where:
                    return None
                out.add(where[(before, n)])
            before *= n
        return frozenset(out)
    if operand.shape == result.shape or op.name in SAME_DIMS:
        return dims if len(result.shape) == len(operand.shape) else None
    return None


def _reaches(module: Module, value: Value, dims: Dims,
             seen: set[tuple[int, Dims]] | None = None,
             escapes: list[tuple[int, Dims]] | None = None) -> list[tuple[Operation, int, Dims]]:
    """(product or gather, operand index, the operand's dims carrying `value`'s `dims`) for
    every one `value` flows into through ops that keep its dims apart and through calls;
    the flow stops at each product or gather (what comes out of one is an activation, no
    longer the argument). Inside a callee, what reaches its `return` goes to `escapes`."""
    seen = set() if seen is None else seen
    found: list[tuple[Operation, int, Dims]] = []
    work = [(value, dims)]
    while work:
        v, ds = work.pop()
        if not ds or (id(v), ds) in seen:
            continue
        seen.add((id(v), ds))
        for use in v.uses:
            user, i = use.op, use.index
            if user.name == "return":  # (the entry's returns thousands: never a product)
                if escapes is not None:
                    escapes.append((i, ds))
            elif user.name in CONTRACTIONS:
                found.append((user, i, ds))
            elif user.name == "call":
                callee = module.lookup_function(user.attr("callee").name)
                if callee is None or i >= len(callee.args):
                    continue
                out: list[tuple[int, Dims]] = []
                found += _reaches(module, callee.args[i], ds, seen, out)
                work += [(user.results[k], d) for k, d in out if k < len(user.results)]
            elif user.results:
                moved = _result_dims(user, i, ds)
                if moved is not None:
                    work += [(r, moved) for r in user.results if r.type.shape ==
                             user.results[0].type.shape]
    return found


@dataclass(frozen=True, slots=True, eq=False)
class GatheredWeight(Cause):
    """The cause of a reshard this pass made: `arg` gathered off `axes` (what insert-reshards
    records for it, and what `shardc explain --collectives` says)."""

    arg: Value
    axes: tuple[str, ...]


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
        carrying = frozenset(d for d in dims if {x.name for x in m.dims[d].axes} & mine)
        for op, i, at in _reaches(module, a, carrying):
            # the argument's axis on a dim the op keeps (a batch dim) against a weight's on a
            # dim it consumes: the two claims propagation cannot both keep
            if at - _consumed_dims(op, i):
                for j, wanted in at_op.get(id(op), {}).items():
                    if j != i:
                        conflict |= mine & wanted
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
    position = {id(op): i for i, op in enumerate(main.body)} if gathers and main else {}
    for arg, target in gathers:
        assert isinstance(main, Function)
        uses = [(u, i) for u in arg.users if u.name != "return"
                for i, o in enumerate(u.operands) if o is arg]
        result = [arg.type.with_mapping(target)]
        # at the first use's location: where the weight is gathered in the source
        first = min((u for u, _ in uses), key=lambda u: position.get(id(u), len(position)),
                    default=None)
        op = (Operation.at(first, "reshard", [arg], result) if first is not None
              else Operation("reshard", [arg], result, {}))
        dropped = {a.name for a in arg.type.mapping.used_axes()} - {
            a.name for a in target.used_axes()}
        op.cause = GatheredWeight(arg, tuple(sorted(dropped)))
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
