"""The graph the reshard planner searches: layouts as compact states, collectives as edges.

A layout places *atoms* (mesh axes cut into the sub-axes a problem names, see `axes.py`) into the
tensor dims (ordered, major to minor) or into the unreduced set. A state is

    ((atoms of dim 0, atoms of dim 1, ...), bitmask of unreduced atoms)

and an edge is one collective, with its parameters in atom indices::

    ("all_gather", ((), (2,)))        gather atom 2 off the minor end of dim 1
    ("all_to_all", ((0,), 0, 1))      move atom 0 from the end of dim 0 to the end of dim 1
    ("collective_permute", state)     same shard counts, different layout

Edges here carry no cost and no shape: the same structure serves every tensor of a rank on a mesh.
They are generated lazily and never stored: a layout of a large mesh has more all_slice and
collective_permute neighbours than fit in memory, so the search (search.py) takes them one at a
time under its budget, and `slice_count` says up front when even one layout's slices exceed it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.steps import KIND_ORDER

Dims = tuple[tuple[int, ...], ...]
State = tuple[Dims, int]
Edge = tuple[str, tuple]
# (tie-break key, edge, next state, group size, target dim of an all_to_all or -1)
GraphEdge = tuple[tuple, Edge, State, int, int]

_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}


class LayoutGraph:
    """The structural edges between the layouts over `atoms` for tensors of `rank`, generated
    on demand.

    `keep` is the bitmask of unreduced atoms the target keeps: they are never reduced.
    """

    def __init__(self, mesh: DeviceMesh, atoms: tuple[AxisRef, ...], rank: int, keep: int):
        self.mesh = mesh
        self.atoms = atoms
        self.sizes = tuple(a.axis_size(mesh) for a in atoms)
        self.rank = rank
        self.keep = keep
        self._counts: dict[tuple[int, ...], int] = {}

    def counts(self, dims: Dims) -> tuple[int, ...]:
        """Shards per dim (memoised per dim: the search asks for the same runs again and again)."""
        cache = self._counts
        out = []
        for d in dims:
            k = cache.get(d)
            if k is None:
                k = 1
                for a in d:
                    k *= self.sizes[a]
                cache[d] = k
            out.append(k)
        return tuple(out)

    def group(self, atoms) -> int:
        n = 1
        for a in atoms:
            n *= self.sizes[a]
        return n

    def free(self, state: State) -> list[int]:
        """The atoms `state` uses in no dim and not as unreduced."""
        dims, used = state
        for d in dims:
            for a in d:
                used |= 1 << a
        return [i for i in range(len(self.atoms)) if not used >> i & 1]

    def edges(self, state: State, after_slice: bool = False) -> Iterator[GraphEdge]:
        """Every single collective from `state`, lazily, in a fixed order (all_slice first;
        none when `after_slice`: a slice after a slice is one slice of both)."""
        dims, unreduced = state
        n = len(self.atoms)
        if not after_slice:
            for added in _distributions(self.free(state), self.rank, require_all=False):
                if any(added):
                    new = tuple(d + a for d, a in zip(dims, added, strict=True))
                    yield self.make_edge("all_slice", added, (new, unreduced), 1)
        yield from self._gathers(dims, unreduced)
        yield from self.all_to_alls(dims, unreduced)
        yield from self._permutes(dims, unreduced)
        reducible = [i for i in range(n) if unreduced >> i & 1 and not self.keep >> i & 1]
        if reducible:
            yield from self._reductions(dims, unreduced, reducible)

    def edge_group(self, edge: Edge) -> tuple[int, int]:
        """The group size and all_to_all target dim (-1 for the others) `edges` gives `edge`:
        what its ring cost is computed with."""
        kind, params = edge
        if kind == "all_to_all":
            return self.group(params[0]), params[2]
        if kind == "collective_permute":
            return 2, -1
        if kind == "all_slice":
            return 1, -1
        atoms = params if kind == "all_reduce" else [a for d in params for a in d]
        return self.group(atoms), -1

    @staticmethod
    def make_edge(kind: str, params: tuple, nxt: State, group: int, tgt: int = -1) -> GraphEdge:
        return ((_RANK[kind], params), (kind, params), nxt, group, tgt)

    def _gathers(self, dims: Dims, unreduced: int) -> Iterator[GraphEdge]:
        for cut in itertools.product(*(range(len(d) + 1) for d in dims)):
            if any(cut):
                gathered = tuple(d[len(d) - c:] for d, c in zip(dims, cut, strict=True))
                new = tuple(d[: len(d) - c] for d, c in zip(dims, cut, strict=True))
                group = self.group(a for g in gathered for a in g)
                yield self.make_edge("all_gather", gathered, (new, unreduced), group)

    def all_to_alls(self, dims: Dims, unreduced: int) -> Iterator[GraphEdge]:
        for src, d in enumerate(dims):
            for c in range(1, len(d) + 1):
                moved = d[len(d) - c:]
                for tgt in range(self.rank):
                    if tgt != src:
                        new = list(dims)
                        new[src] = d[: len(d) - c]
                        new[tgt] = dims[tgt] + moved
                        params = (moved, src, tgt)
                        yield self.make_edge(
                            "all_to_all", params, (tuple(new), unreduced), self.group(moved), tgt
                        )

    def _permutes(self, dims: Dims, unreduced: int) -> Iterator[GraphEdge]:
        available = [i for i in range(len(self.atoms)) if not unreduced >> i & 1]
        for target in _with_counts(available, self.counts(dims), self.sizes):
            if target != dims:
                nxt = (target, unreduced)
                yield self.make_edge("collective_permute", nxt, nxt, 2)

    def _reductions(self, dims: Dims, unreduced: int, reducible: list[int]):
        for r in range(1, len(reducible) + 1):
            for subset in itertools.combinations(reducible, r):
                mask = unreduced
                for a in subset:
                    mask &= ~(1 << a)
                group = self.group(subset)
                yield self.make_edge("all_reduce", subset, (dims, mask), group)
                for added in _distributions(list(subset), self.rank, require_all=True):
                    new = tuple(d + a for d, a in zip(dims, added, strict=True))
                    yield self.make_edge("reduce_scatter", added, (new, mask), group)


def slice_count(free: int, rank: int) -> int:
    """How many all_slice edges leave a layout with `free` unused atoms and `rank` dims (the
    empty slice included): k chosen atoms in k! orders, cut into `rank` runs."""
    if rank == 0:
        return 1
    return sum(
        math.comb(free, k) * math.factorial(k) * math.comb(k + rank - 1, rank - 1)
        for k in range(free + 1)
    )


def edge_target(state: State, edge: Edge) -> State:
    """The layout `edge` leads to from `state` (the inverse of generation, for cross-checks)."""
    dims, unreduced = state
    kind, params = edge
    if kind == "collective_permute":
        return params
    if kind == "all_gather":
        return tuple(d[: len(d) - len(g)] for d, g in zip(dims, params, strict=True)), unreduced
    if kind == "all_to_all":
        moved, src, tgt = params
        new = list(dims)
        new[src], new[tgt] = dims[src][: len(dims[src]) - len(moved)], dims[tgt] + moved
        return tuple(new), unreduced
    if kind == "all_reduce":
        return dims, unreduced & ~sum(1 << a for a in params)
    removed = sum(1 << a for d in params for a in d) if kind == "reduce_scatter" else 0
    return tuple(d + a for d, a in zip(dims, params, strict=True)), unreduced & ~removed


def _arrangements(atoms: list[int]) -> Iterator[tuple[int, ...]]:
    """Every ordered selection of distinct `atoms`, the empty one included."""
    for r in range(len(atoms) + 1):
        yield from itertools.permutations(atoms, r)


def _distributions(atoms: list[int], rank: int, require_all: bool) -> Iterator[tuple]:
    """Ways to append ordered runs of distinct `atoms` to `rank` dims (all of them if asked)."""
    if rank == 0:
        if not require_all or not atoms:
            yield ()
        return
    for first in _arrangements(atoms):
        rest = [a for a in atoms if a not in first]
        for tail in _distributions(rest, rank - 1, require_all):
            yield (first, *tail)


def _with_counts(available: list[int], counts, sizes) -> Iterator[Dims]:
    """Every placement of distinct `available` atoms into dims with the given shard counts."""
    if not counts:
        yield ()
        return

    def runs(pool: list[int], k: int) -> Iterator[tuple[int, ...]]:
        if k == 1:
            yield ()
            return
        for i, a in enumerate(pool):
            if k % sizes[a] == 0:
                for tail in runs(pool[:i] + pool[i + 1:], k // sizes[a]):
                    yield (a, *tail)

    for first in runs(available, counts[0]):
        rest = [a for a in available if a not in first]
        for tail in _with_counts(rest, counts[1:], sizes):
            yield (first, *tail)
