"""Shardy's reshard algorithm (`sdy-reshard-to-collectives`), as a `Plan` of collective steps.

    shardy_plan((16, 8), "f32", <@mesh, [{"x"}, {}]>, <@mesh, [{}, {"x"}]>)
      -> sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]>

Unlike `plan_reshard` (a search for the cheapest plan), this is Shardy's fixed recipe, so that
shardc prints the collectives Shardy prints. The state is the diff between the current sharding
and the target: per dim, the axes of the current sharding past its common prefix with the target
(`in_axes`) and the target's axes past that prefix (`out_axes`); both start aligned so that sub-axes
are equal or disjoint. Up to twice: an `all_slice` (slice target axes that are free, in their own
dim when its capacity allows, else where there is room, or at a dim an `all_to_all` will move them
from), a `collective_permute` (replace or reorder axes, or move to another mesh's device order),
`all_to_all`s (first those that land in place), then an `all_gather` of what is left.

The steps are the planner's (`steps.py`), so costs and the cost report treat both planners alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.types import element_bytes
from shardc.passes.analysis.collectives.planner import Plan
from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.analysis.collectives.shards import Shape
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllSlice,
    AllToAll,
    CollectivePermute,
    Step,
)
from shardc.passes.analysis.collectives.sub_axes import (
    add_or_merge,
    align_per_dim,
    ordered,
    prefix_without_overlap,
    product,
    sort_key,
)

Axes = list[AxisRef]


def _divisible(a: int, b: int) -> bool:
    return a % b == 0 or b % a == 0


def _within_capacity(
    axis: AxisRef, capacity: int, mesh: DeviceMesh
) -> tuple[AxisRef | None, AxisRef | None, int]:
    """(the part of `axis` that fits `capacity`, the rest, the capacity left)."""
    size = axis.axis_size(mesh)
    if capacity <= 1 or not _divisible(size, capacity):
        return None, None, capacity
    if capacity >= size:
        return axis, None, capacity // size
    within = AxisRef(axis.name, axis.pre, capacity)
    rest = AxisRef(axis.name, axis.pre * capacity, size // capacity)
    return within, rest, 1


def _pop_back(current: Axes, to_pop: Sequence[AxisRef]) -> None:
    """Remove `to_pop` from the back of `current` (a popped ref may be part of the last one)."""
    for axis in reversed(to_pop):
        prefix = prefix_without_overlap(current[-1], axis)
        if prefix is None:
            current.pop()
        else:
            current[-1] = prefix


class _Inserter:
    """One reshard's state while Shardy's algorithm picks collectives."""

    def __init__(self, shape: Shape, src: NamedMapping, dst: NamedMapping):
        self.shape = tuple(shape)
        self.mesh = src.mesh
        self.cur_mesh, self.out_mesh = src.mesh, dst.mesh
        self.dst = dst
        rank = src.rank
        self.in_axes: list[Axes] = [list(d.axes) for d in src.dims]
        self.out_axes: list[Axes] = [list(d.axes) for d in dst.dims]
        self.current: list[Axes] = [list(d.axes) for d in src.dims]
        self.capacity = [1] * rank
        ordered_in, ordered_out = ordered(self.in_axes), ordered(self.out_axes)
        align_per_dim(self.in_axes, ordered_out, self.mesh)
        align_per_dim(self.out_axes, ordered_in, self.mesh)
        for ins, outs in zip(self.in_axes, self.out_axes, strict=True):
            while ins and outs and ins[0] == outs[0]:
                ins.pop(0)
                outs.pop(0)
        self.in_set = {a for axes in self.in_axes for a in axes}
        self.index_out()
        self.steps: list[Step] = []
        self.layouts: list[NamedMapping] = [src]

    # ----- state ---------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.in_axes)

    def index_out(self) -> None:
        """Where each target axis still has to go: (dim, index in `out_axes[dim]`)."""
        self.out_index: dict[AxisRef, tuple[int, int]] = {}
        for d, axes in enumerate(self.out_axes):
            for i, a in enumerate(axes):
                self.out_index.setdefault(a, (d, i))

    def done(self) -> bool:
        return (
            self.cur_mesh == self.out_mesh
            and not any(self.in_axes)
            and not any(self.out_axes)
        )

    def current_sharding(self) -> NamedMapping:
        dims = tuple(DimSharding(tuple(a), True) for a in self.current)
        return NamedMapping(
            self.cur_mesh, dims, (), self.dst.unreduced, self.dst.unreduced_op,
            self.dst.memory_kind,
        )

    def emit(self, step: Step) -> None:
        self.steps.append(step)
        self.layouts.append(self.current_sharding())

    def size(self, axis: AxisRef) -> int:
        return axis.axis_size(self.mesh)

    # ----- the algorithm -------------------------------------------------------------------

    def run(self) -> None:
        for _ in range(2):
            if self.done():
                break
            self.try_all_slice()
            self.try_collective_permute()
            self.try_all_to_alls(out_of_order=False)
            self.try_all_to_alls(out_of_order=True)
            self.try_all_gather()
        if not self.done():
            raise ShardingError(
                f"Shardy's reshard algorithm does not reach {self.dst} from "
                f"{self.layouts[0]} (axes that do not divide each other)"
            )

    def distribute(
        self,
        front: bool,
        available: Callable[[int], Axes],
        consume: Callable[[AxisRef, int], None] = lambda a, d: None,
    ) -> None:
        """Per dim with capacity left, move axes from `available(dim)` into `in_axes[dim]` (at
        its front or back), splitting an axis bigger than the capacity."""
        split: list[AxisRef] = []
        for dim in range(self.rank):
            ins = self.in_axes[dim]
            capacity = self.capacity[dim]
            pos = 0 if front else len(ins)
            avail = available(dim)
            i = 0
            while i < len(avail) and capacity > 1:
                within, rest, capacity = _within_capacity(avail[i], capacity, self.mesh)
                if within is None:
                    i += 1
                    continue
                del avail[i]
                ins.insert(pos, within)
                pos += 1
                self.in_set.add(within)
                consume(within, dim)
                if rest is not None:
                    split.append(within)
                    avail.insert(0, rest)
                    i += 1
            self.capacity[dim] = capacity
        split.sort(key=sort_key)
        align_per_dim(self.out_axes, split, self.mesh)

    def axes_to_slice_for_all_to_all(self, src: int) -> tuple[int, int, int] | None:
        """(target dim, [start, end) in its out axes) to slice at `src` now, so that a later
        all_to_all moves them to the target dim in order (saving a collective_permute)."""
        src_in = self.in_axes[src]
        if not src_in or self.out_axes[src]:
            return None
        entry = self.out_index.get(src_in[-1])
        if entry is None:
            return None
        tgt = entry[0]
        if self.in_axes[tgt]:
            return None
        tgt_out = self.out_axes[tgt]
        start = tgt_out.index(src_in[-1]) + 1 if src_in[-1] in tgt_out else 0
        if start >= len(tgt_out) or tgt_out[start] in self.in_set:
            return None
        i, j, common = len(src_in) - 1, start - 1, 1
        while i >= 0 and j >= 0 and src_in[i] == tgt_out[j]:
            common *= self.size(src_in[i])
            i -= 1
            j -= 1
        for k in range(i, -1, -1):
            e = self.out_index.get(src_in[k])
            if e is not None and e[0] == tgt:
                return None
        end, added = start, 1
        while end < len(tgt_out) and tgt_out[end] not in self.in_set:
            added *= self.size(tgt_out[end])
            end += 1
        if self.shape[src] % (product(self.current[src], self.mesh) * added):
            return None
        self.capacity[tgt] //= common * added
        return tgt, start, end

    def slicing_axes(self) -> list[Axes] | None:
        slicing: list[Axes] = [[] for _ in range(self.rank)]
        found = False
        for d, (ins, outs) in enumerate(zip(self.in_axes, self.out_axes, strict=True)):
            n_in, n_out = product(ins, self.mesh), product(outs, self.mesh)
            self.capacity[d] = n_out // math.gcd(n_in, n_out)
        # 1. Slice at a source dim the axes a later all_to_all moves to their target dim.
        for src in range(self.rank):
            r = self.axes_to_slice_for_all_to_all(src)
            if r is None:
                continue
            found = True
            tgt, start, end = r
            for a in self.out_axes[tgt][start:end]:
                self.in_axes[src].append(a)
                self.in_set.add(a)
                add_or_merge(slicing[src], a, self.mesh)
                add_or_merge(self.current[src], a, self.mesh)
        # 2. Slice free target axes in their own dim, within its capacity.
        leftover: Axes = []
        for d in range(self.rank):
            ins, outs, cur = self.in_axes[d], self.out_axes[d], self.current[d]
            capacity = self.capacity[d]
            k = 0
            while k < len(outs):
                axis = outs[k]
                if axis in self.in_set:
                    k += 1
                    continue
                within, rest, capacity = _within_capacity(axis, capacity, self.mesh)
                if within is None:
                    leftover.append(axis)
                    k += 1
                    continue
                found = True
                add_or_merge(slicing[d], within, self.mesh)
                add_or_merge(cur, within, self.mesh)
                if not ins and k == 0:
                    del outs[0]
                else:
                    self.in_set.add(within)
                    ins.append(within)
                    outs[k] = within
                    k += 1
                if rest is not None:
                    outs.insert(k, rest)
                    k += 1
                    leftover.append(rest)
            self.capacity[d] = capacity

        # 3. Slice the rest in the first dim with room.
        def consume(axis: AxisRef, dim: int) -> None:
            nonlocal found
            found = True
            add_or_merge(slicing[dim], axis, self.mesh)
            add_or_merge(self.current[dim], axis, self.mesh)

        self.distribute(False, lambda d: leftover, consume)
        self.index_out()
        return slicing if found else None

    def try_all_slice(self) -> None:
        slicing = self.slicing_axes()
        if slicing is not None:
            self.emit(AllSlice(tuple(tuple(a) for a in slicing)))

    def should_permute(self) -> bool:
        avail_in: AxisRef | None = None
        avail_out: AxisRef | None = None
        for dim, (ins, outs) in enumerate(zip(self.in_axes, self.out_axes, strict=True)):
            if ins and outs and _divisible(self.size(ins[0]), self.size(outs[0])):
                return True
            for a in outs:
                if a not in self.in_set:
                    avail_out = a
            last_dim: int | None = None
            last_index = 0
            seen: set[int] = set()
            for a in ins:
                cur_dim: int | None = None
                entry = self.out_index.get(a)
                if entry is not None:
                    cur_dim, index = entry
                    if (cur_dim == dim or cur_dim in seen) and (
                        last_dim != cur_dim or index != last_index + 1
                    ):
                        return True
                    seen.add(cur_dim)
                    last_index = index
                elif last_dim is not None and not outs:
                    return True
                else:
                    avail_in = a
                last_dim = cur_dim
        return (
            avail_out is not None
            and avail_in is not None
            and _divisible(self.size(avail_out), self.size(avail_in))
        )

    def permute(self) -> None:
        available_out: Axes = []
        available_in: list[Axes] = [[] for _ in range(self.rank)]
        self.in_set.clear()
        for d in range(self.rank):
            ins, outs, cur = self.in_axes[d], self.out_axes[d], self.current[d]
            capacity = product(ins, self.mesh)
            used = capacity
            _pop_back(cur, ins)
            # 1. Target axes that fit go to their place.
            while capacity > 1 and outs:
                within, rest, capacity = _within_capacity(outs[0], capacity, self.mesh)
                if within is None:
                    break
                outs.pop(0)
                add_or_merge(cur, within, self.mesh)
                if rest is not None:
                    outs.insert(0, rest)
            available_out.extend(outs)
            used //= capacity
            # What was not replaced by target axes goes back first, in its place.
            kept = [a for a in ins if a not in self.out_index]
            taken: Axes = []
            while used > 1 and kept:
                within, rest, used = _within_capacity(kept[0], used, self.mesh)
                if within is None:
                    break
                kept.pop(0)
                taken.append(within)
                if rest is not None:
                    kept.insert(0, rest)
            available_in[d] = kept + taken
            ins.clear()
            self.capacity[d] = capacity
        # 2. Other target axes wherever there is room; 3. former axes in their dim; 4. anywhere.
        self.distribute(False, lambda d: available_out)
        self.distribute(True, lambda d: available_in[d])
        rest_in = [a for axes in available_in for a in axes]
        self.distribute(True, lambda d: rest_in)
        self.index_out()
        for ins, cur in zip(self.in_axes, self.current, strict=True):
            for a in ins:
                add_or_merge(cur, a, self.mesh)

    def try_collective_permute(self) -> None:
        if self.should_permute():
            self.permute()
        elif self.cur_mesh == self.out_mesh:
            return
        self.cur_mesh = self.out_mesh
        self.emit(CollectivePermute(self.current_sharding()))

    def all_to_all_info(self, src: int, out_of_order: bool) -> tuple[Axes, int] | None:
        src_in = self.in_axes[src]
        k = len(src_in)
        tgt: int | None = None
        while k > 0:
            entry = self.out_index.get(src_in[k - 1])
            if entry is None or entry[0] == src or (tgt is not None and entry[0] != tgt):
                break
            tgt = entry[0]
            k -= 1
        if tgt is None:
            return None
        tgt_out = self.out_axes[tgt]
        moving = src_in[k:]
        if not out_of_order and tgt_out[: len(moving)] != moving:
            return None
        axes: Axes = []
        _pop_back(self.current[src], moving)
        tgt_in = self.in_axes[tgt]
        del src_in[k:]
        for a in moving:
            add_or_merge(axes, a, self.mesh)
            add_or_merge(self.current[tgt], a, self.mesh)
            self.in_set.discard(a)
            if not tgt_in and tgt_out and tgt_out[0] == a:
                tgt_out.pop(0)
            else:
                tgt_in.append(a)
                self.in_set.add(a)
        return axes, tgt

    def try_all_to_alls(self, out_of_order: bool) -> None:
        for src in range(self.rank):
            while (info := self.all_to_all_info(src, out_of_order)) is not None:
                axes, tgt = info
                self.emit(AllToAll(tuple(axes), src, tgt))

    def gathering_axes(self, dim: int) -> Axes:
        ins = self.in_axes[dim]
        if not ins:
            return []
        # NOTE: Shardy gathers the whole remaining dim once its last axis has no target place
        # (and nothing when it has one); we do the same so the collectives match.
        if ins[-1] in self.out_index:
            return []
        self.in_set.discard(ins[-1])
        _pop_back(self.current[dim], ins)
        gathered: Axes = []
        for a in ins:
            add_or_merge(gathered, a, self.mesh)
        ins.clear()
        return gathered

    def try_all_gather(self) -> None:
        gathering = [self.gathering_axes(d) for d in range(self.rank)]
        if any(gathering):
            self.emit(AllGather(tuple(tuple(a) for a in gathering)))


def shardy_plan(shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping) -> Plan:
    """The collectives Shardy's `sdy-reshard-to-collectives` turns a reshard from `src` to `dst`
    into. Both must be on meshes with the same axes; `dst`'s unreduced axes are kept throughout.
    Raises `ShardingError` when the algorithm does not reach `dst`."""
    if src.mesh.axes != dst.mesh.axes:
        raise ShardingError(
            f"cannot reshard between meshes @{src.mesh.name} and @{dst.mesh.name} with "
            "different axes"
        )
    inserter = _Inserter(shape, src, dst)
    inserter.run()
    steps, layouts = tuple(inserter.steps), tuple(inserter.layouts)
    ring, comm = plan_costs(tuple(shape), dtype, steps, layouts)
    return Plan(tuple(shape), dtype, steps, layouts, ring, "ring", ring, comm)


def plan_costs(
    shape: Shape, dtype: str, steps: Sequence[Step], layouts: Sequence[NamedMapping]
) -> tuple[int, int]:
    """(ring bytes, buffer bytes) per device of `steps` taking `layouts[i]` to `layouts[i+1]`
    (costed from the layouts, so a collective_permute to another mesh costs its block too)."""
    eb = element_bytes(dtype)
    ring = comm = 0
    for i, step in enumerate(steps):
        a, b = layouts[i].shard_counts(), layouts[i + 1].shard_counts()
        tgt = step.tgt_dim if isinstance(step, AllToAll) else -1
        group = step.group_size(layouts[i].mesh)
        ring += ring_cost(step.kind, shape, eb, a, b, group, tgt)
        comm += buffer_cost(step.kind, shape, eb, a, b)
    return ring, comm
