"""The driver's sweeps over the walk (driver.py's `Driver` is a `Sweeps`).

A sweep pops every item of the walk in order (ops erased as dead left out), each item it puts
back meanwhile popped first (LIFO). Most pops do nothing: an op whose last visit changed nothing
(`Site.clean`) is skipped, and a dead op was erased when its last user was (`_erase_if_dead`
puts it back). So after the first sweep of a stage, a sweep need only pop what the last one
changed (and the edges, always visited): `_sweep_some` pops those by walk order, and an item put
back that is still ahead of the sweep's place in the walk (`_cursor`) waits for that place
(`_pending`, see `Driver._notify`), as it would in the whole walk, so the visits are the same,
in the same order. So is a stage's first sweep when its directions are a pure function of the
op (`pure_directions`): an op whose directions are those of a visit that changed nothing is
skipped without popping it (`_visit` would only mark it clean).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop

from shardc.ir.core import Operation
from shardc.passes.propagation.data_flow import RegionEdge
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.liveness import live_user
from shardc.passes.propagation.manual_edges import ManualEdge
from shardc.passes.propagation.state import NOTHING_SHARDED, PropagationState, Site

Item = Site | RegionEdge | ManualEdge


class Sweeps:
    """The sweeps of `Driver` (a mixin: what it reads below is the driver's)."""

    state: PropagationState
    _stack: list[Item]
    _pending: list[int] | None
    _cursor: int
    _revisit: list[Item]
    _erased: set[int]
    _visit: Callable[[Item], bool]
    _erase_if_dead: Callable[[Operation], bool]
    _directions: Callable[[Site], tuple[PropagationDirection, ...]]

    def _sweep(self, items: list) -> bool:
        """Pop every item of the walk; True if a visit changed something."""
        stack = self._stack = list(reversed(items))
        for item in items:
            item.queued = True
        pop = stack.pop
        changed = False
        revisit = self._revisit = []
        while stack:
            item = pop()
            item.queued = False
            if self._pop(item):
                changed = True
                revisit.append(item)
        return changed

    def _sweep_some(self, queued: list[int]) -> bool:
        """Pop the items whose walk orders are in `queued` (ascending) by walk order, what is put
        back meanwhile as `_notify` says; True if a visit changed something.

        What is put back ahead of the cursor goes to a heap of its own (`_pending`) and the
        next pop takes the smaller of its least and the next order of `queued`: the same order
        as one heap of both, without a pop from a heap as large as the walk for every item
        (log N comparisons each, the one cost of propagation that grew faster than the program,
        by ~2.5% of its instructions at 65k ops: benchmarks/propagation.py --instructions)."""
        stack = self._stack = []
        pushed = self._pending = []  # (no order is in both: an item is queued once)
        self._cursor = -1
        by_order = self.state.by_order
        revisit = self._revisit = []
        changed = False
        i, end = 0, len(queued)
        try:
            while True:
                if stack:
                    item = stack.pop()
                else:
                    if pushed and (i == end or pushed[0] < queued[i]):
                        order = heappop(pushed)
                    elif i < end:
                        order = queued[i]
                        i += 1
                    else:
                        break
                    self._cursor = order
                    item = by_order[order]
                item.queued = False
                if self._pop(item):
                    changed = True
                    revisit.append(item)
        finally:
            self._pending = None
        return changed

    def _first_sweep(self, items: list) -> list[int]:
        """The walk orders a stage's first sweep pops (`pure_directions`): all but the ops
        nothing flows through and those whose directions are what a visit that changed nothing
        had (`_visit` would only mark them clean). (The walk has no erased op.)"""
        queued = []
        for item in items:
            if item.__class__ is Site:
                last = item.clean
                if last is not None:
                    if last is NOTHING_SHARDED or last is self:
                        continue
                    if item.barrier is not None or (
                            self._directions(item) is item.clean_directions):
                        continue
            item.queued = True
            queued.append(item.order)
        return queued  # (in walk order: ascending)

    def _next_sweep(self) -> list[int]:
        """The walk orders the next sweep pops: the items a visit changed (a site stays dirty
        after a visit that changed something) and the edges (visited at every pop)."""
        out = set()
        for item in self._revisit:
            out.add(item.order)
        for item in self.state.walk_edges:
            out.add(item.order)
        out.discard(-1)
        queued = sorted(out)
        by_order = self.state.by_order
        for order in queued:
            by_order[order].queued = True
        return queued

    def _pop(self, item: Item) -> bool:
        """What a sweep does with an item it pops; True if visiting it changed something."""
        if item.__class__ is Site:
            op = item.op
            erased = self._erased
            if id(op) in erased:
                return False
            # A used op is alive: the common case, decided by a user found alive
            # before and still not erased.
            user = item.witness
            if user is None or user in erased:
                user = live_user(op, erased)
                if user is None:
                    if self._erase_if_dead(op):
                        return False
                else:
                    item.witness = user
            last = item.clean
            if last is not None and (last is NOTHING_SHARDED or last is self):
                return False  # see _visit
        return self._visit(item)
