"""Reshard planning: the cheapest sequence of collectives from one sharding to another.

    plan_reshard((16, 64), "f32", <@mesh, [{"x"}, {}]>, <@mesh, [{}, {"x"}]>)
      -> sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]>

The search is A* over the layouts of `layout_graph.py` (neighbours generated lazily), each edge one
collective weighted by its per-device bytes under the cost model (`ring_cost.ring_cost` or
`ring_cost.buffer_cost`); an edge that would move an uneven dim's data outside its group is skipped.
Equal costs are broken deterministically: fewer steps, then the kinds in `steps.KIND_ORDER`, then
the parameters. Every mesh axis is in the universe, not only those src/dst use: slicing on a free
axis before a reduction can be cheaper (all_slice "y", all_reduce "x", all_gather "y").

NOTE: networkx is not used for the search itself: its shortest-path functions need the whole
graph up front, while a lazy A* that stops at the target expands a fraction of it. The tests build
the full graph with networkx as the independent oracle.
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.types import element_bytes
from shardc.passes.collectives.axes import cut_points, merge_refs, merge_set, mesh_atoms, split_refs
from shardc.passes.collectives.layout_graph import Edge, State, edge_target, layout_graph
from shardc.passes.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.collectives.shards import Shape, nested_ok
from shardc.passes.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
    same_layout,
)

COST_MODELS = ("ring", "bytes")


@dataclass(frozen=True)
class Plan:
    """A reshard as collectives: `layouts[i]` --`steps[i]`--> `layouts[i + 1]`.

    `cost` is the total under `cost_model`; `ring_bytes` and `comm_bytes` are the totals under
    both models (per device), whichever was optimised.
    """

    shape: Shape
    dtype: str
    steps: tuple[Step, ...]
    layouts: tuple[NamedMapping, ...]
    cost: int
    cost_model: str
    ring_bytes: int
    comm_bytes: int

    @property
    def src(self) -> NamedMapping:
        return self.layouts[0]

    @property
    def dst(self) -> NamedMapping:
        return self.layouts[-1]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(s.kind for s in self.steps)

    def step_costs(self) -> list[int]:
        return [
            s.ring_bytes(self.shape, self.dtype, m) if self.cost_model == "ring"
            else s.bytes_per_device(self.shape, self.dtype, m)
            for s, m in zip(self.steps, self.layouts, strict=False)
        ]

    def text(self, operand: str = "%0") -> str:
        """One `sdy.*` line per step, each reading the previous result."""
        lines = []
        for i, (step, mapping) in enumerate(zip(self.steps, self.layouts, strict=False)):
            name = operand if i == 0 else f"%r{i}"
            lines.append(f"%r{i + 1} = {step.text(mapping, name)}")
        return "\n".join(lines)


class _Problem:
    """One reshard: the shared layout graph plus this tensor's shape, dtype and cost model."""

    def __init__(self, shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping, cost: str):
        mesh = src.mesh
        self.mesh = mesh
        self.shape = shape
        self.dtype = dtype
        self.eb = element_bytes(dtype)
        self.cost_model = cost
        self.op = src.unreduced_op
        refs = [*src.used_axes(), *src.unreduced, *dst.used_axes(), *dst.unreduced]
        self.cuts = cut_points(refs, mesh)
        atoms = tuple(mesh_atoms(self.cuts, mesh))
        self.atoms = atoms
        self.index = {a: i for i, a in enumerate(atoms)}
        self.src = self.encode(src)
        self.dst = self.encode(dst)
        if self.dst[1] & ~self.src[1]:
            raise ShardingError(
                f"cannot reshard {src.text()} to {dst.text()}: the target has unreduced axes the "
                "source does not (a reshard never creates partial values)"
            )
        self.graph = layout_graph(mesh, atoms, len(shape), self.dst[1])
        self._nested: dict[tuple, bool] = {}
        self._weights: dict[tuple, int] = {}
        total = 1
        for n in shape:
            total *= n
        # Every collective but all_slice costs at least this (see `lower_bound`).
        divisor = 2 * mesh.num_devices if cost == "ring" else mesh.num_devices
        self.min_op = total * self.eb // divisor

    # ----- encoding ----------------------------------------------------------------------------

    def encode(self, mapping: NamedMapping) -> State:
        split = functools.partial(split_refs, cuts=self.cuts, mesh=self.mesh)
        dims = tuple(tuple(self.index[a] for a in split(d.axes)) for d in mapping.dims)
        unreduced = 0
        for a in split(mapping.unreduced):
            unreduced |= 1 << self.index[a]
        return dims, unreduced

    def refs(self, atoms) -> tuple[AxisRef, ...]:
        return merge_refs([self.atoms[i] for i in atoms], self.mesh)

    def unreduced_refs(self, mask: int) -> tuple[AxisRef, ...]:
        return merge_set([a for i, a in enumerate(self.atoms) if mask >> i & 1], self.mesh)

    def decode(self, state: State) -> NamedMapping:
        dims, unreduced = state
        return NamedMapping(
            self.mesh,
            tuple(DimSharding(self.refs(d), True) for d in dims),
            (),
            self.unreduced_refs(unreduced),
            self.op,
        )

    def step(self, edge: Edge) -> Step:
        kind, params = edge
        if kind == "all_gather":
            return AllGather(tuple(self.refs(d) for d in params))
        if kind == "all_slice":
            return AllSlice(tuple(self.refs(d) for d in params))
        if kind == "reduce_scatter":
            return ReduceScatter(tuple(self.refs(d) for d in params))
        if kind == "all_to_all":
            atoms, src, tgt = params
            return AllToAll(self.refs(atoms), src, tgt)
        if kind == "all_reduce":
            return AllReduce(self.unreduced_refs(sum(1 << i for i in params)))
        if kind == "collective_permute":
            return CollectivePermute(self.decode(params))
        raise AssertionError(kind)

    # ----- costs ------------------------------------------------------------------------------

    def nested(self, k0: tuple[int, ...], k1: tuple[int, ...]) -> bool:
        key = (k0, k1)
        ok = self._nested.get(key)
        if ok is None:
            ok = self._nested[key] = all(
                a == b or nested_ok(n, min(a, b), max(a, b))
                for n, a, b in zip(self.shape, k0, k1, strict=True)
            )
        return ok

    def weight(self, kind: str, k0, k1, group: int, tgt: int) -> int:
        key = (kind, k0, k1, group, tgt)
        w = self._weights.get(key)
        if w is None:
            if self.cost_model == "ring":
                w = ring_cost(kind, self.shape, self.eb, k0, k1, group, tgt)
            else:
                w = buffer_cost(kind, self.shape, self.eb, k0, k1)
            self._weights[key] = w
        return w

    def lower_bound(self, state: State) -> int:
        """An admissible, consistent estimate of the cost still to pay from `state`.

        Every collective but all_slice costs at least `min_op`: its buffer holds at least total/N
        elements (all_to_all: at least half that, one piece per moved shard). One such op must move
        an atom past a dim's common prefix with the target, and a different one must reduce the
        unreduced atoms the target does not keep (no single collective does both).
        """
        dims, unreduced = state
        goal_dims, keep = self.dst
        ops = 1 if unreduced & ~keep else 0
        for d, g in zip(dims, goal_dims, strict=True):
            if len(d) > len(g) or d != g[: len(d)]:
                ops += 1
                break
        return ops * self.min_op

    def search(self) -> list[Edge]:
        """A* from src to dst; the heap key (cost + estimate, cost, steps, edge keys) makes the
        result the cheapest plan, then the shortest, then the first in kind/parameter order."""
        start, goal = self.src, self.dst
        graph = self.graph
        heap: list[tuple] = [(self.lower_bound(start), 0, 0, (), start, ())]
        done: set[State] = set()
        best: dict[State, tuple] = {start: (0, 0, ())}
        while heap:
            _, cost, steps, keys, state, path = heapq.heappop(heap)
            if state in done:
                continue
            if state == goal:
                return list(path)
            done.add(state)
            k0 = graph.counts(state[0])
            for edge_key, edge, nxt, group, tgt in graph.edges(state):
                if nxt in done:
                    continue
                k1 = graph.counts(nxt[0])
                if k0 != k1 and not self.nested(k0, k1):
                    continue
                key = (cost + self.weight(edge[0], k0, k1, group, tgt), steps + 1,
                       (*keys, edge_key))
                old = best.get(nxt)
                if old is None or key < old:
                    best[nxt] = key
                    heapq.heappush(heap, (key[0] + self.lower_bound(nxt), *key, nxt,
                                          (*path, edge)))
        raise AssertionError("the target is always reachable: reduce, gather all, then slice")

    def plan(self, edges: list[Edge], src: NamedMapping, dst: NamedMapping) -> Plan:
        shape, dtype = self.shape, self.dtype
        steps: list[Step] = []
        layouts = [src]
        state = self.src
        for edge in edges:
            step = self.step(edge)
            nxt = step.apply(layouts[-1], shape)
            state = edge_target(state, edge)
            assert same_layout(nxt, self.decode(state)), (edge, nxt.text())
            steps.append(step)
            layouts.append(nxt)
        if steps:
            layouts[-1] = dst
        assert same_layout(layouts[-1], dst)
        ring = sum(s.ring_bytes(shape, dtype, m) for s, m in zip(steps, layouts, strict=False))
        comm = sum(
            s.bytes_per_device(shape, dtype, m) for s, m in zip(steps, layouts, strict=False)
        )
        cost = ring if self.cost_model == "ring" else comm
        return Plan(shape, dtype, tuple(steps), tuple(layouts), cost, self.cost_model, ring, comm)


def _check_pair(shape: Shape, src: NamedMapping, dst: NamedMapping, cost: str) -> None:
    for m in (src, dst):
        for ref in (*m.used_axes(), *m.unreduced):
            if ref.axis_size(m.mesh) == 1:
                raise ShardingError(
                    f"reshard uses mesh axis {ref} of size 1, which shards nothing; drop it "
                    "(the remove-size-one-axes pass does) before lowering to collectives"
                )
    if cost not in COST_MODELS:
        raise ShardingError(f"unknown cost model {cost!r} (expected one of {list(COST_MODELS)})")
    if src.mesh != dst.mesh:
        raise ShardingError(
            f"cannot reshard between meshes @{src.mesh.name} and @{dst.mesh.name}; "
            "the planner needs one mesh"
        )
    for name, m in (("source", src), ("target", dst)):
        if m.rank != len(shape):
            raise ShardingError(
                f"{name} sharding {m.text()} has {m.rank} dims but the tensor has rank {len(shape)}"
            )
        if not m.is_fully_resolved:
            raise ShardingError(
                f"{name} sharding {m.text()} has open dims; close it before planning a reshard"
            )
    if src.unreduced and dst.unreduced and src.unreduced_op != dst.unreduced_op:
        raise ShardingError(
            f"unreduced op {src.unreduced_op.value} cannot become {dst.unreduced_op.value}"
        )


def _problem(
    shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping, cost: str
) -> _Problem:
    _check_pair(shape, src, dst, cost)
    return _Problem(shape, dtype, src, dst, cost)


@functools.lru_cache(maxsize=4096)
def _plan_cached(shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping,
                 cost: str) -> Plan:
    problem = _problem(shape, dtype, src, dst, cost)
    edges = [] if problem.src == problem.dst else problem.search()
    return problem.plan(edges, src, dst)


def plan_reshard(
    shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping, *, cost: str = "ring"
) -> Plan:
    """The cheapest collectives turning layout `src` into `dst` for a `shape`/`dtype` tensor.

    `cost="ring"` weighs steps by `Step.ring_bytes`, `"bytes"` by `Step.bytes_per_device`.
    Raises `ShardingError` for different meshes, open dims, a rank mismatch, or a target with
    unreduced axes the source lacks. Memoised per arguments.
    """
    return _plan_cached(tuple(shape), dtype, src, dst, cost)


def greedy_plan(
    shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping, *, cost: str = "ring"
) -> Plan:
    """The obvious plan, for comparison: all_reduce every unreduced axis the target does not keep,
    all_gather every dim down to its common prefix with the target (the whole dim when an uneven
    dim would not nest), then one all_slice to the target.
    """
    shape = tuple(shape)
    problem = _problem(shape, dtype, src, dst, cost)
    (dims, unreduced), (goal_dims, keep) = problem.src, problem.dst
    graph = problem.graph
    edges: list[Edge] = []
    reducible = unreduced & ~keep
    if reducible:
        atoms = tuple(i for i in range(len(problem.atoms)) if reducible >> i & 1)
        edges.append(("all_reduce", atoms))
    prefix = []
    for n, d, g in zip(shape, dims, goal_dims, strict=True):
        p = 0
        while p < min(len(d), len(g)) and d[p] == g[p]:
            p += 1
        k_prefix = graph.group(d[:p])
        if not (nested_ok(n, k_prefix, graph.group(d)) and nested_ok(n, k_prefix, graph.group(g))):
            p = 0
        prefix.append(p)
    gathered = tuple(d[p:] for d, p in zip(dims, prefix, strict=True))
    if any(gathered):
        edges.append(("all_gather", gathered))
    added = tuple(g[p:] for g, p in zip(goal_dims, prefix, strict=True))
    if any(added):
        edges.append(("all_slice", added))
    return problem.plan(edges, src, dst)
