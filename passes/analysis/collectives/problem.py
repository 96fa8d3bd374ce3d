"""One reshard as a search problem: layouts encoded as atom states, edges priced, a lower bound.

    problem = ReshardProblem((16, 8), "f32", src, dst, "ring")
    problem.src, problem.dst                       # ((atoms per dim), unreduced bitmask)
    problem.neighbours(problem.graph.edges)        # (key, edge, next, cost) for search.py

Every mesh axis is in the universe, not only those src/dst use: slicing on a free axis before a
reduction can be cheaper (all_slice "y", all_reduce "x", all_gather "y"). An edge that would move
an uneven dim's data outside its group is skipped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.types import element_bytes
from shardc.passes.analysis.collectives.axes import (
    cut_points,
    merge_refs,
    merge_set,
    mesh_atoms,
    split_refs,
)
from shardc.passes.analysis.collectives.layout_graph import (
    Edge,
    GraphEdge,
    LayoutGraph,
    State,
    edge_target,
)
from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.analysis.collectives.search import Neighbour, PlanKey
from shardc.passes.analysis.collectives.shards import Shape, local_elements, nested_ok
from shardc.passes.analysis.collectives.steps import (
    KIND_ORDER,
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
)


class ReshardProblem:
    """One reshard: the layout graph of its universe plus this tensor's shape, dtype and cost."""

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
        self.graph = LayoutGraph(mesh, atoms, len(shape), self.dst[1])
        self._nested: dict[tuple, bool] = {}
        self._weights: dict[tuple, int] = {}
        total = 1
        for n in shape:
            total *= n
        # Every collective but all_slice costs at least this (see `lower_bound`).
        divisor = 2 * mesh.num_devices if cost == "ring" else mesh.num_devices
        self.min_op = total * self.eb // divisor
        goal_local = local_elements(shape, self.graph.counts(self.dst[0])) * self.eb
        self.last_op = max(goal_local // 2 if cost == "ring" else goal_local, self.min_op)

    # ----- encoding ----------------------------------------------------------------------------

    def encode(self, mapping: NamedMapping) -> State:
        split = functools.partial(split_refs, cuts=self.cuts, mesh=self.mesh)
        dims = tuple(tuple(self.index[a] for a in split(d.axes)) for d in mapping.dims)
        unreduced = 0
        for a in split(mapping.unreduced):
            unreduced |= 1 << self.index[a]
        return dims, unreduced

    def refs(self, atoms: Iterable[int]) -> tuple[AxisRef, ...]:
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

        Two facts. (1) Unless `state` is the target up to slices (every dim a prefix of its
        target, nothing left to reduce), some collective is the plan's last but slices; its
        output is such a prefix layout, whose local buffer is at least the target's, and every
        collective costs at least half its output buffer in the ring model (all of it in the
        bytes model): `last_op`. (2) Moving an atom off a dim's common prefix with the target and
        reducing unreduced atoms the target does not keep take two different collectives (none
        does both), the other costing at least `min_op` (a buffer of total/N elements).
        """
        dims, unreduced = state
        goal_dims, keep = self.dst
        ops = 1 if unreduced & ~keep else 0
        for d, g in zip(dims, goal_dims, strict=True):
            if len(d) > len(g) or d != g[: len(d)]:
                ops += 1
                break
        return 0 if ops == 0 else self.last_op + (ops - 1) * self.min_op

    def neighbours(
        self, edges: Callable[[State, bool], Iterable[GraphEdge]]
    ) -> Callable[[State, bool], Iterator[Neighbour]]:
        """`edges` priced, without those that would move uneven data outside a group."""
        counts = self.graph.counts

        def priced(state: State, after_slice: bool) -> Iterator[Neighbour]:
            k0 = counts(state[0])
            for edge_key, edge, nxt, group, tgt in edges(state, after_slice):
                k1 = counts(nxt[0])
                if k0 != k1 and not self.nested(k0, k1):
                    continue
                yield edge_key, edge, nxt, self.weight(edge[0], k0, k1, group, tgt)

        return priced

    def path_key(self, edges: Iterable[Edge]) -> PlanKey:
        """The search key (cost, steps, edge keys) of a plan given as edges from `src`."""
        state, cost, keys = self.src, 0, []
        counts = self.graph.counts
        for kind, params in edges:
            nxt = edge_target(state, (kind, params))
            k0, k1 = counts(state[0]), counts(nxt[0])
            cost += self.weight(kind, k0, k1, *self.graph.edge_group((kind, params)))
            keys.append((KIND_ORDER.index(kind), params))
            state = nxt
        return cost, len(keys), tuple(keys)
