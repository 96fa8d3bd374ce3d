"""The propagation driver: a worklist over the whole module, to a fixed point.

It follows Shardy's `BasicPropagationPassImpl::propagate`:

1. push function result shardings into the returned values (an identity edge, both ways);
2. a greedy worklist: every op in top-down order; an op whose operand or result sharding
   changes puts its neighbours (the defining ops and users of the changed values, the call sites
   of a function whose returned value changed) back on the worklist, and they are visited next
   (LIFO, each op at most once in the list). Sweeps repeat until one changes nothing;
3. push returned values' shardings into the function result shardings.

Calls are data-flow edges: call operand i is identified with callee argument i and callee result
j with call result j (identity rules), so shardings flow both ways through private functions.
`while` and `case` have Shardy's data-flow edges between their operands, results and region
functions (regions.py).
A `manual_computation` has such edges too, across its manual axes (manual_edges.py).
Members of a `sharding_group` always share one sharding. A `propagation_barrier` lets shardings
through only in its allowed direction.

The direction along every factor comes from a `DirectionFn(op, rule)`: the op-priority stages
and user priorities (priorities.py) are just different direction functions and initial shardings.

Cost: a transformer stack is visited ~7 times per op over the five stages, and most visits
change nothing. So what propagation reads from an op and that never changes during it (its
rule, whether it is element-wise, its tensor sizes) is computed once per op and run (`OpInfo`),
visits with nothing sharded or nothing allowed to move return at once, and the outcome of
factor propagation, a pure function of (OpInfo, directions, shardings), is memoised per run:
a model's layers repeat the same ops with the same shardings, so most visits are a lookup
(benchmarks/propagation.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError, VerifyError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import ELEMENTWISE, attr, get_op_def
from shardc.ir.ops.control import region_functions
from shardc.ir.ops.manual import normalize as normalize_manual
from shardc.ir.ops.manual import sync_all as sync_manual
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.factor_propagation import propagate_shardings
from shardc.passes.propagation.manual_edges import ManualEdge, ManualEdges
from shardc.passes.propagation.origins import OriginTracker
from shardc.passes.propagation.regions import REGION_OPS, RegionEdge, Regions, build_regions
from shardc.passes.propagation.regions import live_uses as live_uses  # re-exported: priorities.py
from shardc.passes.propagation.strategy import PropagationStrategy
from shardc.passes.rules.registry import rule_for as registered_rule
from shardc.passes.rules.rule import OpShardingRule, parse_rule

# The direction of every factor of `rule` at an op (None: a call's data-flow edge).
DirectionFn = Callable[[Operation | None, OpShardingRule], Sequence[PropagationDirection]]

BOTH = PropagationDirection.BOTH
NONE = PropagationDirection.NONE
MAX_SWEEPS = 10


def rule_for(op: Operation) -> OpShardingRule | None:
    """The op's rule: a `sdy.sharding_rule` attribute written on it wins over the registry."""
    given = op.attributes.get("sdy.sharding_rule")
    if given is not None:
        text = given.text if hasattr(given, "text") else str(given)
        try:
            return parse_rule(text)
        except ShardcError as e:
            raise e.with_location(op.loc) from None
    return registered_rule(op)


@functools.lru_cache(maxsize=1 << 10)
def identity_rule(shape: tuple[int, ...], num_operands: int = 1) -> OpShardingRule:
    """`([i, j])->([i, j])`: each dim its own pass-through factor."""
    dims = tuple((d,) for d in range(len(shape)))
    return OpShardingRule(tuple(shape), tuple(dims for _ in range(num_operands)), (dims,))


# Ops Shardy never erases as dead: they have effects or pin shardings.
_NEVER_DEAD = (
    "return",
    "sharding_group",
    "sharding_constraint",
    "call",
    "custom_call",
    *REGION_OPS,
    "manual_computation",
)


def can_be_dead(op: Operation) -> bool:
    return op.name not in _NEVER_DEAD and bool(op.results)


def dead_ops(func: Function) -> set[int]:
    """Ops whose results nothing live uses (transitively): the ops propagation erases."""
    dead: set[int] = set()
    for op in reversed(func.body):
        if not can_be_dead(op):
            continue
        if all(id(u.op) in dead for r in op.results for u in r.uses):
            dead.add(id(op))
    return dead


def walk_order(
    module: Module,
    erased: set[int] | frozenset[int] = frozenset(),
    regions: Regions | None = None,
    manual: ManualEdges | None = None,
) -> list:
    """Ops top-down (but `erased` ones), a callee's body right after its first call (as if
    inlined there, which is the order Shardy visits a call's named computation in); uncalled
    functions last. A `while`/`case` is its region functions' ops (first reference) then its
    data-flow edges (`regions`), as Shardy visits the regions then the `sdy.data_flow_edge`s;
    a manual_computation stands for its edges around its body (`manual`)."""
    out: list = []
    seen: set[str] = set()

    def visit_once(func: Function) -> None:
        if func.name not in seen:
            visit(func)

    def visit(func: Function) -> None:
        seen.add(func.name)
        for op in func.body:
            if id(op) in erased:
                continue
            if op.name in REGION_OPS and regions is not None:
                for name in region_functions(op):
                    callee = module.lookup_function(name)
                    if callee is not None and callee.name not in seen:
                        visit(callee)
                out.extend(regions.edges.get(id(op), ()))
                continue
            if manual is not None and op.name == "manual_computation":
                manual.walk(op, visit_once, out)
                continue
            out.append(op)
            if op.name == "call":
                callee = module.lookup_function(attr(op, "callee").name)
                if callee is not None and callee.name not in seen:
                    visit(callee)

    for func in module.functions.values():
        if not func.is_private and func.name not in seen:
            visit(func)
    for func in module.functions.values():
        if func.name not in seen:
            visit(func)
    return out


@dataclass
class Edge:
    """A data-flow edge: `sources` and `target` always agree (a call argument or result)."""

    sources: list[Value]
    target: Value


class OpInfo:
    """What propagation reads from an op that does not change while it runs: its rule, whether
    it is element-wise, and its tensor sizes (operands then results; the aggressive strategy
    ranks them). Interned per run (`PropagationState.info`): equal infos are one object, so an
    info hashes by identity, cheaply, inside the memo key of `Driver._propagate`."""

    __slots__ = ("rule", "elementwise", "tensor_sizes")

    def __init__(
        self, rule: OpShardingRule | None, elementwise: bool, tensor_sizes: tuple[int, ...]
    ):
        self.rule = rule
        self.elementwise = elementwise
        self.tensor_sizes = tensor_sizes


# What one propagation through an op decided: the new mapping of each operand and each result,
# None where it does not change.
Outcome = tuple[tuple[NamedMapping | None, ...], tuple[NamedMapping | None, ...]]


@dataclass
class PropagationState:
    """Everything the driver needs that does not change between stages."""

    module: Module
    strategy: PropagationStrategy
    conservative: bool = False
    groups: dict[int, list[Value]] = field(default_factory=dict)
    group_of: dict[int, int] = field(default_factory=dict)  # id(value) -> group id
    callers: dict[str, list[Operation]] = field(default_factory=dict)
    manual: ManualEdges | None = None
    origins: OriginTracker | None = None
    no_rule: dict[str, Operation] = field(default_factory=dict)
    regions: Regions = field(default_factory=Regions)
    visits: int = 0
    # Ops erased as dead so far. MLIR's rewrite driver (which runs Shardy's propagation)
    # erases an op with no uses when it pops it from the worklist, so a dead op is gone for the
    # ops after it, and its operands' uses drop; shardc keeps the op in the IR but replays that.
    erased: set[int] = field(default_factory=set)
    # id(op) -> its OpInfo, filled on first visit (ops outlive the state, so ids are stable).
    op_infos: dict[int, OpInfo] = field(default_factory=dict)
    interned_infos: dict[tuple, OpInfo] = field(default_factory=dict)
    # Memo of factor propagation: (OpInfo, directions, operand mappings, result mappings) ->
    # Outcome. Propagation through an op is a pure function of these, and a model's layers
    # repeat the same ops with the same shardings, so most visits are a lookup.
    outcomes: dict[tuple, Outcome] = field(default_factory=dict)

    def info(self, op: Operation) -> OpInfo:
        info = self.op_infos.get(id(op))
        if info is None:
            op_def = get_op_def(op.name)
            sizes = tuple(v.type.num_elements for v in op.operands) + tuple(
                v.type.num_elements for v in op.results
            )
            elementwise = op_def is not None and op_def.has(ELEMENTWISE)
            info = self.op_infos[id(op)] = self.interned_info(rule_for(op), elementwise, sizes)
        return info

    def interned_info(
        self, rule: OpShardingRule | None, elementwise: bool, tensor_sizes: tuple[int, ...]
    ) -> OpInfo:
        key = (rule, elementwise, tensor_sizes)
        info = self.interned_infos.get(key)
        if info is None:
            info = self.interned_infos[key] = OpInfo(rule, elementwise, tensor_sizes)
        return info


def build_state(
    module: Module,
    strategy: PropagationStrategy,
    *,
    conservative: bool = False,
    origins: OriginTracker | None = None,
) -> PropagationState:
    state = PropagationState(module, strategy, conservative, origins=origins)
    normalize_manual(module)
    state.manual = ManualEdges(module)
    for op in module.walk():
        if op.name == "sharding_group":
            gid = attr(op, "group_id")
            v = op.operand(0)
            members = state.groups.setdefault(gid, [])
            if all(m is not v for m in members):
                members.append(v)
            state.group_of[id(v)] = gid
        elif op.name == "call":
            state.callers.setdefault(attr(op, "callee").name, []).append(op)
    state.regions = build_regions(module)
    _unify_groups(state)
    return state


def all_uses_erased(op: Operation, erased: set[int]) -> bool:
    """Nothing but `erased` ops uses any result of `op` (a plain loop: it runs on every visit)."""
    for r in op.results:
        for u in r.uses:
            if id(u.op) not in erased:
                return False
    return True


def _unify_groups(state: PropagationState) -> None:
    """Shardy's sharding-group import: members start with the one sharding any of them has."""
    for gid, members in state.groups.items():
        shardings = {m.mapping for m in members if m.mapping is not None}
        if len(shardings) > 1:
            texts = ", ".join(sorted(str(s) for s in shardings))
            op = next(u.op for u in members[0].uses if u.op.name == "sharding_group")
            raise VerifyError(
                f"sharding group {gid} has members with different shardings ({texts}); "
                "members of a group must share one sharding",
                op.loc,
            )
        if shardings:
            (mapping,) = shardings
            for m in members:
                m.set_mapping(mapping)


# ----- reading and writing shardings ---------------------------------------------------------


def _mapping(v: Value) -> NamedMapping | None:
    t = v.type
    return t.mapping if isinstance(t, DistributedTensorType) else None


class Driver:
    """Runs one propagation (one stage) over the module with a given direction function."""

    def __init__(self, state: PropagationState, direction: DirectionFn, stage: str = ""):
        self.state = state
        self.direction = direction
        self.stage = stage
        self._stack: list[Operation | RegionEdge] = []
        self._queued: set[int] = set()
        self._current: Operation | RegionEdge | None = None
        self._erased = state.erased

    # ----- the worklist ----------------------------------------------------------------------

    def run(self) -> None:
        module = self.state.module
        self._sync_func_results()
        ops = walk_order(module, self._erased, self.state.regions, self.state.manual)
        for sweep in range(MAX_SWEEPS):
            self._stack = list(reversed(ops))
            self._queued = {id(op) for op in ops}
            changed = False
            while self._stack:
                op = self._stack.pop()
                self._queued.discard(id(op))
                if self._erase_if_dead(op):
                    continue
                if self._visit(op):
                    changed = True
            if not changed:
                break
            if sweep == MAX_SWEEPS - 1:
                raise PassError(
                    f"propagation did not converge after {MAX_SWEEPS} sweeps over the module "
                    f"({self.state.visits} op visits); this is a bug in shardc, please report it"
                )
            ops = walk_order(module, self._erased, self.state.regions, self.state.manual)
        self._sync_func_results()
        if self.state.manual is not None and self.state.manual.args:
            sync_manual(module)

    def _erase_if_dead(self, op: Operation | RegionEdge | ManualEdge) -> bool:
        """MLIR's driver erases an op nothing uses any more, then revisits its operands'
        defining ops that are left with at most one other user."""
        if isinstance(op, (RegionEdge, ManualEdge)):
            return False
        if id(op) in self._erased:
            return True
        if not can_be_dead(op) or not all_uses_erased(op, self._erased):
            return False
        self._erased.add(id(op))
        for v in op.operands:
            d = v.defining_op
            if d is not None and id(d) not in self._erased:
                others = {
                    id(u.op) for u in v.uses if u.op is not op and id(u.op) not in self._erased
                }
                if len(others) <= 1:
                    self._notify(d)
        return True

    def _notify(self, op: Operation | RegionEdge | ManualEdge | None) -> None:
        if op is None or op is self._current or id(op) in self._queued:
            return
        if isinstance(op, Operation) and op.name in REGION_OPS:
            return  # Shardy visits the op itself to no effect; its edges are the items
        if id(op) in self._erased:
            return
        self._queued.add(id(op))
        self._stack.append(op)

    def _notify_value(self, v: Value) -> None:
        """Revisit the defining op and every user of `v` (call sites for returned values; the
        data-flow edge of a `while`/`case` target, source or region return; of a
        manual_computation operand, result, body argument or result)."""
        regions = self.state.regions
        manual = self.state.manual
        d = v.defining_op
        target_edge = regions.edge_of_target.get(id(v))
        if target_edge is not None:
            self._notify(target_edge)
        elif manual is not None and d is not None and d.name == "manual_computation":
            self._notify(manual.of_result(d, v.index))
        else:
            self._notify(d)
        for use in v.uses:
            user = use.op
            if user.name == "return":
                func = user.function
                if func is not None:
                    for call in self.state.callers.get(func.name, ()):
                        self._notify(call)
                    for edge in regions.return_edges(func, use.index):
                        self._notify(edge)
                    if manual is not None:
                        for mc in manual.bodies.get(func.name, ()):
                            self._notify(manual.of_result(mc, use.index))
            elif user.name in REGION_OPS:
                self._notify(regions.edge_for_use(user, use.index))
            elif manual is not None and user.name == "manual_computation":
                self._notify(manual.of_operand(user, use.index))
            else:
                self._notify(user)
        if v.is_argument:
            func = v.owner
            assert isinstance(func, Function)
            for call in self.state.callers.get(func.name, ()):
                self._notify(call)
            if manual is not None:
                for mc in manual.bodies.get(func.name, ()):
                    self._notify(manual.of_operand(mc, v.index))

    def _set(self, v: Value, mapping: NamedMapping, via: Operation | None) -> None:
        old = _mapping(v)
        if old == mapping:
            return
        v.set_mapping(mapping)
        if self.state.origins is not None:
            self.state.origins.record(v, old, mapping, via, self.stage)
        self._notify_value(v)
        for linked in self.state.regions.linked(v):
            if linked is not v and _mapping(linked) != mapping:
                linked.set_mapping(mapping)
                if self.state.origins is not None:
                    self.state.origins.copy(linked, v, via, self.stage)
                self._notify_value(linked)
        gid = self.state.group_of.get(id(v))
        if gid is not None:
            for member in self.state.groups[gid]:
                if member is not v and _mapping(member) != mapping:
                    member.set_mapping(mapping)
                    if self.state.origins is not None:
                        self.state.origins.copy(member, v, via, self.stage)
                    self._notify_value(member)

    # ----- one op ------------------------------------------------------------------------------

    def _visit(self, op: Operation | RegionEdge) -> bool:
        self.state.visits += 1
        self._current = op
        try:
            if isinstance(op, RegionEdge):
                return self._visit_region_edge(op)
            if isinstance(op, ManualEdge):
                return self._visit_manual_edge(op)
            name = op.name
            if name in ("return", "sharding_group", "manual_computation"):
                return False
            if name == "call":
                return self._visit_call(op)
            info = self.state.info(op)
            rule = info.rule
            if rule is None:
                self.state.no_rule.setdefault(name, op)
                return False
            if all(r.mapping is None for r in op.results) and all(
                v.mapping is None for v in op.operands
            ):
                return False  # nothing sharded yet: nothing to propagate
            if name == "propagation_barrier":
                allowed = PropagationDirection[attr(op, "allowed_direction").word]
                directions: Sequence[PropagationDirection] = (allowed,) * rule.num_factors
            else:
                directions = self.direction(op, rule)
            return self._propagate(op, op.operands, op.results, info, directions)
        finally:
            self._current = None

    def _visit_call(self, call: Operation) -> bool:
        callee = self.state.module.lookup_function(attr(call, "callee").name)
        if callee is None:
            return False
        changed = False
        for operand, arg in zip(call.operands, callee.args):
            changed |= self._edge(call, operand, arg)
        ret = callee.return_op
        if ret is not None:
            for returned, result in zip(ret.operands, call.results):
                changed |= self._edge(call, returned, result)
        return changed

    def _visit_region_edge(self, edge: RegionEdge) -> bool:
        """Shardy's `sdy.data_flow_edge`: an identity rule from the sources to the targets."""
        sources = edge.sources(self.state.module)
        target = edge.target
        rule = identity_rule(target.type.shape, len(sources))
        size = target.type.num_elements
        info = self.state.interned_info(rule, False, (size,) * (len(sources) + 1))
        return self._propagate(edge.op, sources, [target], info, self.direction(None, rule))

    def _visit_manual_edge(self, edge: ManualEdge) -> bool:
        """An identity rule between the edge's source and its target seen from the source's
        side, over the target's shape (Shardy's PropagateDataFlowEdgeOp)."""
        ends = edge.endpoints()
        if ends is None:
            return False
        source, target = ends
        view, src = edge.target_view(target), _mapping(source)
        if src is None and view is None:
            return False
        rule = identity_rule(target.type.shape)
        directions = self.direction(None, rule)
        if all(d is NONE for d in directions):
            return False
        size = target.type.num_elements
        try:
            new_ops, new_res = propagate_shardings(
                [src],
                [view],
                rule,
                direction=directions,
                strategy=self.state.strategy,
                tensor_sizes=(size, size),
            )
        except ShardcError as e:
            raise e.with_location(edge.op.loc) from None
        changed = False
        if new_res[0] is not None and new_res[0] != view:
            self._set(target, edge.target_value(new_res[0], target), edge.op)
            changed = True
        if new_ops[0] is not None and new_ops[0] != src:
            self._set(source, new_ops[0], edge.op)
            changed = True
        return changed

    def _edge(self, op: Operation, source: Value, target: Value) -> bool:
        rule = identity_rule(source.type.shape)
        size = source.type.num_elements
        info = self.state.interned_info(rule, False, (size, size))
        return self._propagate(op, [source], [target], info, self.direction(None, rule))

    def _propagate(
        self,
        op: Operation,
        operands: Sequence[Value],
        results: Sequence[Value],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
    ) -> bool:
        if all(d is NONE for d in directions):
            return False  # nothing may drive propagation through this op in this stage
        in_ops = tuple(_mapping(v) for v in operands)
        in_res = tuple(_mapping(v) for v in results)
        key = (info, tuple(directions), in_ops, in_res)
        outcome = self.state.outcomes.get(key)
        if outcome is None:
            outcome = self.state.outcomes[key] = self._outcome(op, in_ops, in_res, info, directions)
        new_ops, new_res = outcome
        if all(new is None for new in new_ops + new_res):
            return False
        for v, new in zip(results, new_res):
            if new is not None:
                self._set(v, new, op)
        for v, new in zip(operands, new_ops):
            if new is not None:
                self._set(v, new, op)
        return True

    def _outcome(
        self,
        op: Operation,
        in_ops: tuple[NamedMapping | None, ...],
        in_res: tuple[NamedMapping | None, ...],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
    ) -> Outcome:
        try:
            new_ops, new_res = propagate_shardings(
                in_ops,
                in_res,
                info.rule,  # type: ignore[arg-type]
                direction=directions,
                strategy=self.state.strategy,
                elementwise=info.elementwise,
                conservative=self.state.conservative,
                tensor_sizes=info.tensor_sizes,
            )
        except ShardcError as e:
            raise e.with_location(op.loc) from None

        def changes(old: Sequence, new: Sequence) -> tuple[NamedMapping | None, ...]:
            return tuple(
                n if n is not None and n is not o and n != o else None for o, n in zip(old, new)
            )

        return changes(in_ops, new_ops), changes(in_res, new_res)

    # ----- function results ---------------------------------------------------------------------

    def _sync_func_results(self) -> None:
        """Identity edges between each returned value and the function's declared result. A
        region function's results are not values of their own: they take the shardings of the
        edge targets they feed (body result k: the carried value k; branch result k: result k
        of the case); a manual body's results are its op's out_shardings (edges)."""
        regions = self.state.regions
        manual = self.state.manual
        for func in self.state.module.functions.values():
            ret = func.return_op
            if ret is None or (manual is not None and manual.is_body(func)):
                continue
            if func.name in regions.functions:
                for edge in regions.returns.get(func.name, ()):
                    mapping = _mapping(edge.target)
                    t = func.result_types[edge.index]
                    if mapping is not None:
                        func.result_types[edge.index] = DistributedTensorType(
                            t.shape, t.dtype, mapping
                        )
                continue
            for i, v in enumerate(ret.operands):
                declared = func.result_types[i]
                res_mapping = (
                    declared.mapping if isinstance(declared, DistributedTensorType) else None
                )
                rule = identity_rule(v.type.shape)
                new_ops, new_res = propagate_shardings(
                    [_mapping(v)],
                    [res_mapping],
                    rule,
                    direction=BOTH,
                    strategy=self.state.strategy,
                    tensor_sizes=(v.type.num_elements,) * 2,
                )
                if new_ops[0] is not None and new_ops[0] != _mapping(v):
                    self._set(v, new_ops[0], ret)
                if new_res[0] is not None and new_res[0] != res_mapping:
                    func.result_types[i] = DistributedTensorType(
                        declared.shape, declared.dtype, new_res[0]
                    )
                    if self.state.origins is not None:
                        self.state.origins.record_result(func, i, res_mapping, new_res[0], v)
