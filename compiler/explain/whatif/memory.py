"""Peak live memory of a program, and of the same program with a few values and ops changed,
without walking it again.

    line = Timeline(func, order)         # order(op): the op's place among the original ops
    line.peak                            # == passes/analysis/cost.py's peak_memory(func)
    line.peak_with(Edit(...))            # the peak after an edit, in O(edit * log program)

The cost report's peak (passes/analysis/cost.py) is the maximum, over the points before the
first op and at each op, of the bytes of the values live there: a value is live from the op
that makes it (an argument: from the start) to its last use (an unused one only at its op).
So each value is an interval of positions and the peak is the largest sum of intervals over a
point. The *original* ops (those of the program as propagation left it) get position
`k * GAP + GAP - 1` for the k-th; the ops the back end put in front of original op k (the
collectives of its operands) get `k * GAP + 0, 1, ...` in program order.

An `Edit` removes some values' intervals and some op points and adds others; the new peak is
the largest of: the old sums at the old points that stay, plus the change there (a step
function over the edit's interval ends); and the sums at the new points. Range maxima come from
a sparse table, sums at new points from prefix sums over the sorted interval ends.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from shardc.ir.core import Function, Operation, Value
from shardc.passes.analysis.cost import local_bytes

GAP = 64  # positions per original op: the collectives in front of it, then the op


class GapOverflow(Exception):
    """More ops in front of one original op than a gap has positions (the caller measures
    another way)."""


def gap_positions(ops: Iterable[Operation], order: Callable[[Operation], int | None]
                  ) -> dict[int, int]:
    """id(op) -> position (see the module docstring); `order(op)` is None for an op the back
    end made, which belongs to the gap of the next original op."""
    out: dict[int, int] = {}
    pending: list[Operation] = []
    for op in ops:
        k = order(op)
        if k is None:
            pending.append(op)
            continue
        if len(pending) > GAP - 1:
            raise GapOverflow
        for j, p in enumerate(pending):
            out[id(p)] = k * GAP + j
        pending.clear()
        out[id(op)] = k * GAP + GAP - 1
    if pending:
        raise GapOverflow
    return out


def interval(v: Value, position: dict[int, int], size: int | None = None) -> tuple[int, int, int]:
    """(start, end, bytes) of `v` under `position` (id(op) -> position)."""
    d = v.defining_op
    start = -1 if d is None else position[id(d)]
    ends = [position[id(u.op)] for u in v.uses if id(u.op) in position]
    return start, max(ends, default=start), local_bytes(v) if size is None else size


@dataclass
class Edit:
    """Intervals and op points taken out of a timeline and put in."""

    removed: list[int] = field(default_factory=list)  # ids of the timeline's values
    added: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, bytes)
    removed_points: set[int] = field(default_factory=set)
    new_points: list[int] = field(default_factory=list)


class Timeline:
    """One function's values as intervals and its ops as points (see the module docstring)."""

    def __init__(self, func: Function, order: Callable[[Operation], int | None]):
        self.position = gap_positions(func.body, order)
        self.intervals: dict[int, tuple[int, int, int]] = {}
        for v in func.args:
            self.intervals[id(v)] = interval(v, self.position)
        for op in func.body:
            for r in op.results:
                self.intervals[id(r)] = interval(r, self.position)
        self.points = sorted({-1, *self.position.values()})
        starts = sorted((s, b) for s, _, b in self.intervals.values())
        ends = sorted((e, b) for _, e, b in self.intervals.values())
        self._starts = [s for s, _ in starts]
        self._ends = [e for e, _ in ends]
        self._start_sums = _prefix([b for _, b in starts])
        self._end_sums = _prefix([b for _, b in ends])
        self.sums = [self.live_at(p) for p in self.points]
        self._table = _sparse_table(self.sums)

    @property
    def peak(self) -> int:
        return max(self.sums, default=0)

    def live_at(self, x: int) -> int:
        """Bytes of the intervals over position `x`."""
        started = self._start_sums[bisect.bisect_right(self._starts, x)]
        ended = self._end_sums[bisect.bisect_left(self._ends, x)]
        return started - ended

    def _range_max(self, lo: int, hi: int) -> int | None:
        """Max of `sums[lo:hi]` (None if empty)."""
        if lo >= hi:
            return None
        k = (hi - lo).bit_length() - 1
        row = self._table[k]
        return max(row[lo], row[hi - (1 << k)])

    def peak_with(self, edit: Edit) -> int:
        """The peak after `edit` (see the module docstring)."""
        events: dict[int, int] = {}
        for start, end, size in edit.added:
            events[start] = events.get(start, 0) + size
            events[end + 1] = events.get(end + 1, 0) - size
        for vid in edit.removed:
            start, end, size = self.intervals[vid]
            events[start] = events.get(start, 0) - size
            events[end + 1] = events.get(end + 1, 0) + size
        marks = sorted(events)
        running, steps = 0, []
        for m in marks:
            running += events[m]
            steps.append(running)

        def delta(x: int) -> int:
            i = bisect.bisect_right(marks, x) - 1
            return steps[i] if i >= 0 else 0

        cuts = set(marks) | edit.removed_points
        best = max((self.live_at(x) + delta(x) for x in edit.new_points), default=0)
        points = self.points
        bounds = sorted(cuts | {points[0] - 1, points[-1] + 1})
        for lo, hi in zip(bounds, bounds[1:]):
            i = bisect.bisect_left(points, lo)
            if i < len(points) and points[i] == lo and lo in edit.removed_points:
                i += 1
            j = bisect.bisect_left(points, hi)
            top = self._range_max(i, j)
            if top is not None:
                best = max(best, top + delta(lo))
        return best


def _prefix(xs: list[int]) -> list[int]:
    out = [0]
    for x in xs:
        out.append(out[-1] + x)
    return out


def _sparse_table(xs: list[int]) -> list[list[int]]:
    table = [list(xs)]
    k = 1
    while (1 << k) <= len(xs):
        prev = table[-1]
        half = 1 << (k - 1)
        table.append([max(prev[i], prev[i + half]) for i in range(len(xs) - (1 << k) + 1)])
        k += 1
    return table
