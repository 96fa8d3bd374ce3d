"""The planner's second graph: collectives that move a few atoms, for meshes too large to search
every layout (layout_graph.py).

A layout with f unused atoms has `slice_count(f, rank)` all_slice neighbours alone (over 10^9 for
12 atoms and rank 2), and as many collective_permute ones. This graph keeps, per layout, a number
of edges polynomial in the atoms (n) and the rank (r):

- all_slice: the next atoms of the target in every dim that is a prefix of its target (all such
  dims at once, and each alone), and any one unused atom onto the minor end of one dim (n·r;
  slicing before a collective shrinks the buffers it moves);
- all_gather: each minor suffix of one dim, and every dim cut back to its common prefix with the
  target at once;
- all_to_all: each minor suffix of a dim to each other dim;
- collective_permute: to the target when the shard counts match, and each swap that puts the
  target's atom in a position of a dim (with the atom there, or an unused one, of its size);
- all_reduce: all reducible atoms, and each alone; reduce_scatter: each reducible atom onto each
  dim, and all of them onto each dim.

Every edge is an edge of the full graph, with its key and group, so a plan found here is a valid
plan with the same cost; it is the cheapest within this graph and the budget, not necessarily
overall.
"""

from __future__ import annotations

from collections.abc import Iterator

from shardc.passes.analysis.collectives.layout_graph import Dims, GraphEdge, LayoutGraph, State


class AxisMoves:
    """The few-atom edges of `graph` toward the target layout `goal` (module docstring)."""

    def __init__(self, graph: LayoutGraph, goal: State):
        self.graph = graph
        self.goal = goal[0]

    def edges(self, state: State, after_slice: bool = False) -> Iterator[GraphEdge]:
        dims, unreduced = state
        graph, rank = self.graph, self.graph.rank
        if not after_slice:
            yield from self._slices(state)
        for d, atoms in enumerate(dims):
            for c in range(1, len(atoms) + 1):
                gathered = tuple(atoms[len(atoms) - c:] if i == d else () for i in range(rank))
                new = tuple(x[: len(x) - len(g)] for x, g in zip(dims, gathered, strict=True))
                yield graph.make_edge("all_gather", gathered, (new, unreduced), graph.group(
                    gathered[d]))
        prefix = self._prefixes(dims)
        off = tuple(d[p:] for d, p in zip(dims, prefix, strict=True))
        if sum(1 for x in off if x) > 1:
            new = tuple(d[:p] for d, p in zip(dims, prefix, strict=True))
            group = graph.group(a for x in off for a in x)
            yield graph.make_edge("all_gather", off, (new, unreduced), group)
        yield from graph.all_to_alls(dims, unreduced)
        yield from self._permutes(dims, unreduced)
        reducible = [i for i in range(len(graph.atoms)) if unreduced >> i & 1
                     and not graph.keep >> i & 1]
        if reducible:
            yield from self._reductions(dims, unreduced, reducible)

    def _prefixes(self, dims: Dims) -> list[int]:
        out = []
        for d, g in zip(dims, self.goal, strict=True):
            p = 0
            while p < min(len(d), len(g)) and d[p] == g[p]:
                p += 1
            out.append(p)
        return out

    def _slices(self, state: State) -> Iterator[GraphEdge]:
        dims, unreduced = state
        graph, rank = self.graph, self.graph.rank
        free = graph.free(state)
        free_set = set(free)
        runs: list[tuple[int, ...]] = []
        for d, g in zip(dims, self.goal, strict=True):
            run: tuple[int, ...] = ()
            if g[: len(d)] == d:
                for a in g[len(d):]:
                    if a not in free_set:
                        break
                    run += (a,)
            runs.append(run)
        seen = set()

        def edge(added: tuple[tuple[int, ...], ...]) -> Iterator[GraphEdge]:
            if any(added) and added not in seen:
                seen.add(added)
                new = tuple(d + a for d, a in zip(dims, added, strict=True))
                yield graph.make_edge("all_slice", added, (new, unreduced), 1)

        yield from edge(tuple(runs))
        for d in range(rank):
            yield from edge(tuple(runs[d] if i == d else () for i in range(rank)))
        for a in free:
            for d in range(rank):
                yield from edge(tuple((a,) if i == d else () for i in range(rank)))

    def _permutes(self, dims: Dims, unreduced: int) -> Iterator[GraphEdge]:
        graph = self.graph
        if self.goal != dims and graph.counts(self.goal) == graph.counts(dims) and not any(
            unreduced >> a & 1 for g in self.goal for a in g
        ):
            target = (self.goal, unreduced)
            yield graph.make_edge("collective_permute", target, target, 2)
        where = {a: (d, i) for d, atoms in enumerate(dims) for i, a in enumerate(atoms)}
        free = set(graph.free((dims, unreduced)))
        sizes = graph.sizes
        for d, (atoms, goal) in enumerate(zip(dims, self.goal, strict=True)):
            for i, (a, b) in enumerate(zip(atoms, goal)):
                if a == b or sizes[a] != sizes[b]:
                    continue
                if b in where:
                    yield self._permute(dims, unreduced, {(d, i): b, where[b]: a})
                elif b in free:
                    yield self._permute(dims, unreduced, {(d, i): b})

    def _permute(self, dims: Dims, unreduced: int, changes: dict) -> GraphEdge:
        new = tuple(
            tuple(changes.get((d, i), a) for i, a in enumerate(atoms))
            for d, atoms in enumerate(dims)
        )
        target = (new, unreduced)
        return self.graph.make_edge("collective_permute", target, target, 2)

    def _reductions(self, dims: Dims, unreduced: int, reducible: list[int]):
        graph, rank = self.graph, self.graph.rank
        subsets = [tuple(reducible)] + ([(a,) for a in reducible] if len(reducible) > 1 else [])
        for subset in subsets:
            mask = unreduced
            for a in subset:
                mask &= ~(1 << a)
            group = graph.group(subset)
            yield graph.make_edge("all_reduce", subset, (dims, mask), group)
            for d in range(rank):
                added = tuple(subset if i == d else () for i in range(rank))
                new = tuple(x + a for x, a in zip(dims, added, strict=True))
                yield graph.make_edge("reduce_scatter", added, (new, mask), group)
