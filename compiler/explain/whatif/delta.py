"""How much a change to the region's collectives changes the whole program: bytes moved, and
the peak of live memory.

    index = BaselineIndex(base)             # once: the baseline's collectives by edge, timeline
    delta = index.measure(region, U, anchor) # after re-propagating and running `Region`

The collectives on the region's edges (region.py) replace the baseline's on the same edges:
the difference of their bytes is the change in bytes moved. For the peak, the program after
the change is the baseline with those collectives swapped and the region's values re-sized:
`Timeline.peak_with` (memory.py) evaluates that edit. The collectives in front of one op keep
the order insert-reshards gives them (its operands' in order, a constraint's before the op
after it), so where new ones join old ones in front of an op, all of them are put in that order.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from shardc.explain.whatif.baseline import Baseline
from shardc.explain.whatif.memory import GAP, Edit, GapOverflow, Timeline
from shardc.explain.whatif.region import Chain, Region, chains_of
from shardc.ir.core import Operation, Value
from shardc.passes.analysis.cost import local_bytes


@dataclass(frozen=True)
class Delta:
    """The change in bytes moved per device (and ring-model bytes), the peak after it, and the
    bytes now on the edge a collective served (`edge_after`)."""

    comm: int
    ring: int
    peak: int
    edges: dict[tuple[int, int], int]


class BaselineIndex:
    """What every measurement reads of the baseline (see the module docstring)."""

    def __init__(self, base: Baseline):
        assert base.propagated is not None
        self.base = base
        func = base.propagated.main
        self.order: dict[int, int] = {id(op): k for k, op in enumerate(func.body)}

        def order_of(op: Operation) -> int | None:
            copy = base.copy_op(op)
            return None if copy is None else self.order.get(id(copy))

        self.order_of = order_of
        self.timeline = Timeline(base.module.main, order_of)
        chains = chains_of(base.module.main, base.copy_op, lambda op: order_of(op) is not None)
        self.by_consumer: dict[int, list[Chain]] = {}
        self.by_gap: dict[int, list[Chain]] = {}
        for c in chains:
            self.by_consumer.setdefault(id(c.consumer), []).append(c)
            self.by_gap.setdefault(self.timeline.position[id(c.op)] // GAP, []).append(c)
        self.surviving = sorted(
            self.order_of(op) for op in base.module.main.body  # type: ignore[type-var]
            if self.order_of(op) is not None
        )

    def anchor(self, op: Operation, constraint: Operation | None) -> float:
        """The place of `op` (of the propagated program) in program order; the change's own
        constraint sits right after the value it constrains."""
        if op is constraint:
            d = op.operand(0).defining_op
            return (self.order[id(d)] if d is not None else -1) + 0.5
        return self.order[id(op)]

    def gap(self, anchor: float) -> int:
        """The original op a collective for an op at `anchor` stands in front of: the first one
        at or after it that the back end keeps."""
        i = bisect.bisect_left(self.surviving, anchor)
        return self.surviving[i]

    def position(self, op: Operation) -> int:
        """The baseline position of an op of the propagated program."""
        work = self.base.work_op(op)
        assert work is not None
        return self.timeline.position[id(work)]

    def measure(self, region: Region, values: dict[int, Value], constraint: Operation | None
                ) -> Delta:
        """The change the region's back end makes (see the module docstring); `values` is `U`
        by id, `constraint` the change's constraint op (None if it adds none)."""

        def on_edge(c: Chain) -> bool:
            op, i = c.consumer, c.operand
            return i < op.num_operands and id(op.operand(i)) in values

        new = [c for c in region.chains() if on_edge(c)]
        consumers = {id(c.consumer): c.consumer for c in new}
        for op in region.original.values():
            consumers[id(op)] = op
        old = [c for cid in consumers for c in self.by_consumer.get(cid, ()) if on_edge(c)]
        comm = sum(c.comm for c in new) - sum(c.comm for c in old)
        ring = sum(c.ring for c in new) - sum(c.ring for c in old)
        edges: dict[tuple[int, int], int] = {}
        for c in new:
            key = (id(c.consumer), c.operand)
            edges[key] = edges.get(key, 0) + c.comm
        peak = self._peak(region, values, constraint, new, old)
        return Delta(comm, ring, peak, edges)

    def _peak(self, region: Region, values: dict[int, Value], constraint: Operation | None,
              new: list[Chain], old: list[Chain]) -> int:
        line = self.timeline
        removed_ops = {id(c.op) for c in old}
        gaps: dict[int, list[tuple[tuple, Chain, bool]]] = {}
        for c in new:
            anchor = self.anchor(c.consumer, constraint)
            gaps.setdefault(self.gap(anchor), []).append(((anchor, c.operand, c.seq), c, True))
        for c in old:
            gaps.setdefault(line.position[id(c.op)] // GAP, [])
        moved: list[Chain] = []
        moved_ids: set[int] = set()
        for g, items in gaps.items():
            for c in self.by_gap.get(g, ()):
                if id(c.op) not in removed_ops:
                    anchor = self.anchor(c.consumer, None)
                    items.append(((anchor, c.operand, c.seq), c, False))
                    moved.append(c)
                    moved_ids.add(id(c.op))
        place: dict[int, int] = {}  # id(op) -> position, for the ops put in a gap
        for g, items in gaps.items():
            if len(items) > GAP - 1:
                raise GapOverflow
            items.sort(key=lambda t: t[0])
            for j, (_, c, _) in enumerate(items):
                place[id(c.op)] = g * GAP + j
        edit = Edit(removed_points={line.position[id(c.op)] for c in (*old, *moved)},
                    new_points=sorted(place.values()))

        def where(op: Operation) -> int | None:
            """Position of an op of the region copy or of the baseline after the edit."""
            if id(op) in place:
                return place[id(op)]
            original = region.original.get(id(op))
            if original is not None:
                return None if original is constraint else self.position(original)
            return line.position.get(id(op))

        def ends(v: Value, start: int) -> int:
            spots = [where(u.op) for u in v.uses]
            return max((s for s in spots if s is not None), default=start)

        for c in old:
            edit.removed += [id(r) for r in c.op.results]
        for c in (*new, *moved):
            for r in c.op.results:
                if id(c.op) in moved_ids:
                    edit.removed.append(id(r))
                edit.added.append((place[id(c.op)], ends(r, place[id(c.op)]), local_bytes(r)))
        readers = {id(x): x for c in moved for x in c.op.operands
                   if x.defining_op is None or id(x.defining_op) not in place}
        for x in readers.values():
            start, _, size = line.intervals[id(x)]
            edit.removed.append(id(x))
            edit.added.append((start, ends(x, start), size))
        for vid, v in values.items():
            work = self.base.work_value(v)
            if work is not None and id(work) in line.intervals:
                edit.removed.append(id(work))
            copy = region.to_copy.get(vid)
            d = v.defining_op
            if copy is None or (constraint is not None and d is constraint):
                continue
            start = -1 if d is None else self.position(d)
            edit.added.append((start, ends(copy, start), local_bytes(copy)))
        return line.peak_with(edit)
