"""The propagation driver: a worklist over the whole module, to a fixed point.

It follows Shardy's `BasicPropagationPassImpl::propagate`:

1. push the entry function's result shardings into its returned values (an identity edge,
   both ways);
2. a greedy worklist: every op in top-down order; an op whose operand or result sharding
   changes puts its neighbours (the defining ops and users of the changed values, the edges
   they are sources or targets of) back on the worklist, and they are visited next
   (LIFO, each op at most once in the list). Sweeps repeat until one changes nothing;
3. push returned values' shardings into the entry function's result shardings.

`while`, `case`, `optimization_barrier` and `named_computation` are data-flow ops: Shardy's
data-flow edges link their operands, results and region or body functions (data_flow.py).
A `manual_computation` has such edges too, across its manual axes (manual_edges.py). A `call`
is opaque, as in Shardy's propagation passes: `propagate` first makes every call site a named
computation of its own (propagate.py: `import_call_sites`), as Shardy's pipeline does.
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
What the worklist keeps per op (queued, the last visit that changed nothing, a live user, the
stage's directions) is on the op's `Site` (state.py), not in tables keyed by `id(op)`: lookups in
tables as large as the program missed the caches, and the time per op grew with its size.

Here is the worklist; its sweeps are in sweeps.py, the edges it visits besides ops in edges.py,
the first walk's order in walk_order.py, the dead ops it replays in liveness.py, and what a run
shares in state.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heappush

from shardc.ir.core import Function, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import NamedMapping, interned
from shardc.ir.ops.manual import sync_all as sync_manual
from shardc.passes.propagation.data_flow import RegionEdge
from shardc.passes.propagation.direction import DirectionFn, PropagationDirection
from shardc.passes.propagation.edges import (
    sync_func_results,
    visit_manual_edge,
    visit_region_edge,
)
from shardc.passes.propagation.factor_propagation import propagate_shardings
from shardc.passes.propagation.liveness import all_uses_erased, can_be_dead
from shardc.passes.propagation.manual_edges import ManualEdge
from shardc.passes.propagation.state import (
    NO_RULE,
    NOTHING_SHARDED,
    RULE,
    OpInfo,
    Outcome,
    PropagationState,
    Site,
    mapping_of,
)
from shardc.passes.propagation.sweeps import Sweeps

NONE = PropagationDirection.NONE
MAX_SWEEPS = 10
_MISSING = object()
_NONES: dict[int, tuple[PropagationDirection, ...]] = {}


def _uniform_none(n: int) -> tuple[PropagationDirection, ...]:
    out = _NONES.get(n)
    if out is None:
        out = _NONES[n] = (NONE,) * n
    return out


class Driver(Sweeps):
    """Runs one propagation (one stage) over the module with a given direction function."""

    def __init__(self, state: PropagationState, direction: DirectionFn, stage: str = "",
                 pure_directions: bool = False):
        self.state = state
        self.direction = direction
        self.stage = stage
        # `direction` depends on the op alone, not on when it is asked (see `_first_sweep`).
        self.pure_directions = pure_directions
        self._stack: list[Site | RegionEdge | ManualEdge] = []
        self._current: Site | RegionEdge | ManualEdge | None = None
        self._erased = state.erased
        # A sweep of some items (`_sweep_some`): the walk orders put back ahead of its place in
        # the walk (a heap), and the order of the last item popped from the walk; the items the
        # last sweep changed.
        self._pending: list[int] | None = None
        self._cursor = -1
        self._revisit: list[Site | RegionEdge | ManualEdge] = []

    # ----- the worklist ----------------------------------------------------------------------

    def run(self) -> None:
        module = self.state.module
        sync_func_results(self)
        items = self.state.walk()
        partial = self.state.ordered
        # What a sweep pops (by walk order) when it need not pop every item (sweeps.py).
        some = self._first_sweep(items) if partial and self.pure_directions else None
        for sweep in range(MAX_SWEEPS):
            changed = self._sweep(items) if some is None else self._sweep_some(some)
            if not changed:
                break
            if sweep == MAX_SWEEPS - 1:
                raise PassError(
                    f"propagation did not converge after {MAX_SWEEPS} sweeps over the module "
                    f"({self.state.visits} op visits); this is a bug in shardc, please report it"
                )
            if partial:
                some = self._next_sweep()
            else:
                items = self.state.walk()
        sync_func_results(self)
        if self.state.manual is not None and self.state.manual.args:
            sync_manual(module)

    def _erase_if_dead(self, op: Operation) -> bool:
        """MLIR's driver erases an op nothing uses any more, then revisits its operands'
        defining ops that are left with at most one other user."""
        erased = self._erased
        if id(op) in erased:
            return True
        for r in op.results:
            for u in r.uses:
                if id(u.op) not in erased:
                    return False  # used: alive (the common case, decided first)
        if not can_be_dead(op) or not all_uses_erased(op, erased):
            return False
        self._erased.add(id(op))
        if self.state.audit is not None:
            self.state.audit.escaped("a dead op was erased")
        for v in op.operands:
            d = v.defining_op
            if d is not None and id(d) not in self._erased:
                others = {
                    id(u.op) for u in v.uses if u.op is not op and id(u.op) not in self._erased
                }
                if len(others) <= 1:
                    self._notify(d)
        return True

    def _notify(self, item: Operation | RegionEdge | ManualEdge | None) -> None:
        if item is None:
            return
        if item.__class__ is Operation:
            site = item.scratch  # type: ignore[union-attr]
            if site is None:
                site = self.state.site_of(item)  # type: ignore[arg-type]
            site.clean = None  # a value of it changed: it must be visited again
            if site is self._current or site.queued:
                return
            if site.data_flow:
                return  # Shardy visits a data-flow op to no effect; its edges are the items
            if id(item) in self._erased:
                return
            item = site
        else:
            if item.__class__ is RegionEdge:
                item.clean = None  # type: ignore[union-attr]  # a value of it changed
            if item is self._current or item.queued:  # type: ignore[union-attr]
                return
        item.queued = True  # type: ignore[union-attr]
        pending = self._pending
        if pending is not None and item.order > self._cursor:  # type: ignore[union-attr]
            heappush(pending, item.order)  # type: ignore[union-attr]  # (see _sweep_some)
        else:
            self._stack.append(item)  # type: ignore[arg-type]

    def _notify_value(self, v: Value) -> None:
        """Revisit the defining op and every user of `v` (the data-flow edge of a data-flow op's
        target, source or body return; of a manual_computation operand, result, body argument or
        result)."""
        regions = self.state.regions
        manual = self.state.manual
        d = v.defining_op
        target_edge = regions.edge_of_target.get(id(v))
        if target_edge is not None:
            self._notify(target_edge)
        elif manual is not None and id(v) in manual.explicit:
            self._notify(manual.explicit[id(v)])
        elif manual is not None and d is not None and d.name == "manual_computation":
            self._notify(manual.of_result(d, v.index))
        else:
            self._notify(d)
        for use in v.uses:
            user = use.op
            if user.name == "return":
                func = user.function
                if func is not None:
                    for edge in regions.return_edges(func, use.index):
                        self._notify(edge)
                    if manual is not None:
                        for mc in manual.bodies.get(func.name, ()):
                            self._notify(manual.of_result(mc, use.index))
            elif id(user) in regions.edges:
                self._notify(regions.edge_for_use(user, use.index))
            elif manual is not None and user.name == "manual_computation":
                self._notify(manual.of_operand(user, use.index))
            else:
                self._notify(user)
        if v.is_argument:
            func = v.owner
            assert isinstance(func, Function)
            if manual is not None:
                for mc in manual.bodies.get(func.name, ()):
                    self._notify(manual.of_operand(mc, v.index))

    def update(self, v: Value, mapping: NamedMapping, via: Operation | None) -> None:
        old = mapping_of(v)
        if old == mapping:
            return
        v.set_mapping(mapping)
        if self.state.origins is not None:
            current = self._current
            if current.__class__ is Site and via is current.op:  # type: ignore[union-attr]
                self.state.origins.record(v, old, mapping, via, self.stage,
                                          current.info.rule, current.values)  # type: ignore[union-attr]
            else:
                rule = current.info.rule if current.__class__ is Site else None  # type: ignore[union-attr]
                self.state.origins.record(v, old, mapping, via, self.stage, rule)
        self._notify_value(v)
        for linked in self.state.regions.linked(v):
            if linked is not v and mapping_of(linked) != mapping:
                linked.set_mapping(mapping)
                if self.state.origins is not None:
                    self.state.origins.copy(linked, v, via, self.stage)
                self._notify_value(linked)
        gid = self.state.group_of.get(id(v))
        if gid is not None:
            for member in self.state.groups[gid]:
                for m in self.state.regions.linked(member):  # a loop result is its body's too
                    if m is not v and mapping_of(m) != mapping:
                        m.set_mapping(mapping)
                        if self.state.origins is not None:
                            self.state.origins.copy(m, v, via, self.stage)
                        self._notify_value(m)

    # ----- one op ------------------------------------------------------------------------------

    def _visit(self, item: Site | RegionEdge | ManualEdge) -> bool:
        state = self.state
        if item.__class__ is not Site:
            state.visits += 1
            if item.__class__ is RegionEdge:
                # An identity rule between values none of which changed since this driver's
                # last visit changed nothing: the same outcome again (the sweeps pop every edge
                # each time; the visit is still counted, as Shardy makes it).
                if item.clean is self:  # type: ignore[union-attr]
                    return False
                self._current = item
                changed = visit_region_edge(self, item)  # type: ignore[arg-type]
                self._current = None
                if not changed and state.audit is None:
                    item.clean = self  # type: ignore[union-attr]
                return changed
            self._current = item
            changed = visit_manual_edge(self, item)  # type: ignore[arg-type]
            self._current = None
            return changed
        site: Site = item  # type: ignore[assignment]
        op = site.op
        kind = site.kind
        if kind is None:
            kind = state.describe(site)
        if kind is not RULE:
            state.visits += 1
            if kind is NO_RULE:
                state.no_rule.setdefault(op.name, op)
            site.clean = NOTHING_SHARDED  # nothing flows through it: skip it now on
            return False
        # An op none of whose values changed since a visit that changed nothing, asked with
        # the same directions, would change nothing again (the outcome is a pure function of
        # them): skip it. Its directions are asked where a visit would ask them, so the first
        # ask of a stage happens at the same point.
        last = site.clean
        if last is not None:
            if last is NOTHING_SHARDED or last is self:
                return False
            if site.barrier is not None or self._directions(site) is site.clean_directions:
                site.clean = self
                return False
        state.visits += 1
        in_ops = tuple([v.type.mapping for v in site.operands])
        in_res = tuple([v.type.mapping for v in site.results])
        if in_ops == site.unsharded_operands and in_res == site.unsharded_results:
            site.clean = NOTHING_SHARDED
            return False  # nothing sharded yet: nothing to propagate
        info: OpInfo = site.info  # type: ignore[assignment]
        if site.barrier is not None:
            directions: Sequence[PropagationDirection] = site.barrier
        else:
            directions = self._directions(site)
        self._current = site
        changed = self._propagate(op, site.operands, site.results, info, directions,
                                  in_ops, in_res)
        self._current = None
        if not changed:
            site.clean = self
            site.clean_directions = directions
        return changed

    def _directions(self, site: Site) -> tuple[PropagationDirection, ...]:
        """The directions this driver's stage gives the op, asked once per op and stage."""
        if site.asked_by is not self:
            site.directions = self.direction(site.op, site.info.rule)  # type: ignore[union-attr,arg-type]
            site.asked_by = self
        return site.directions  # type: ignore[return-value]

    def propagate(
        self,
        op: Operation,
        operands: Sequence[Value],
        results: Sequence[Value],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
    ) -> bool:
        # (any tensor type has a `mapping`: ir/types.py)
        in_ops = tuple([v.type.mapping for v in operands])
        in_res = tuple([v.type.mapping for v in results])
        return self._propagate(op, operands, results, info, directions, in_ops, in_res)

    def _propagate(
        self,
        op: Operation,
        operands: Sequence[Value],
        results: Sequence[Value],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
        in_ops: tuple[NamedMapping | None, ...],
        in_res: tuple[NamedMapping | None, ...],
    ) -> bool:
        if directions.__class__ is not tuple:
            directions = tuple(directions)
        if NONE in directions and directions == _uniform_none(len(directions)):
            return False  # nothing may drive propagation through this op in this stage
        key = (info, directions, in_ops, in_res)
        outcomes = self.state.outcomes
        outcome = outcomes.get(key, _MISSING)
        if outcome is _MISSING:
            outcome = outcomes[key] = self._outcome(op, in_ops, in_res, info, directions)
        if self.state.audit is not None:
            self._audit(key, op, info, directions, in_ops, in_res, outcome)
        if outcome is None:
            return False
        new_ops, new_res = outcome
        for v, new in zip(results, new_res):
            if new is not None:
                self.update(v, new, op)
        for v, new in zip(operands, new_ops):
            if new is not None:
                self.update(v, new, op)
        debug = self.state.debug
        if debug is not None:  # Shardy's debugging options: this visit is a step
            state = self.state
            debug.record_visit(self._current, op, operands, results, info.rule,  # type: ignore[arg-type]
                               directions, (in_ops, in_res), state.strategy, info.elementwise,
                               state.conservative, info.tensor_sizes)
        return True

    def _audit(self, key: tuple, op: Operation, info: OpInfo,
               directions: Sequence[PropagationDirection],
               in_ops: tuple[NamedMapping | None, ...], in_res: tuple[NamedMapping | None, ...],
               outcome: Outcome | None) -> None:
        """Tell the state's `ChoiceAudit` (audit.py) what this visit did."""
        new_ops, new_res = in_ops, in_res
        if outcome is not None:
            new_ops = tuple(o if n is None else n for o, n in zip(in_ops, outcome[0]))
            new_res = tuple(o if n is None else n for o, n in zip(in_res, outcome[1]))
        self.state.audit.visit(  # type: ignore[union-attr]
            key, op, info.rule, directions, (in_ops, in_res), (new_ops, new_res)  # type: ignore[arg-type]
        )

    def _outcome(
        self,
        op: Operation,
        in_ops: tuple[NamedMapping | None, ...],
        in_res: tuple[NamedMapping | None, ...],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
    ) -> Outcome | None:
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
            # (interned: the object the values' types will keep, so that setting it and
            # comparing with it are identity tests; ir/mapping.py)
            return tuple(
                interned(n) if n is not None and n is not o and n != o else None
                for o, n in zip(old, new)
            )

        out = changes(in_ops, new_ops), changes(in_res, new_res)
        if all(n is None for n in out[0] + out[1]):
            return None  # nothing changes
        return out
