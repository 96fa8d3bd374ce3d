"""A layered (Sugiyama-style) layout of a DAG, for drawing programs top to bottom.

    lay = layered_layout(["a", "b", "c"], [("a", "b"), ("a", "c"), ("b", "c")], widths)
    lay.layer["c"], lay.x["c"]          # row index, horizontal centre in pixels
    lay.route("a", "c")                 # [(x, layer), ...] bends of a long edge

1. Layers: longest path from the sources, then every node with users moves down to just above
   its first user (a weight, a constant or a broadcast sits next to where it is used).
2. An edge spanning several layers gets a thin dummy node in each layer it crosses; one chain
   per source, shared by all its far users, so long edges route between nodes, not through them.
3. Order within a layer: program order, then barycentre sweeps (down, up), which keep crossings
   few on compiler graphs.
4. Coordinates: each node is pulled towards the mean of its neighbours, every row keeping its
   order and gaps (an isotonic regression per row), which straightens chains and long edges.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import networkx as nx

DUMMY_WIDTH = 14.0


@dataclass
class Layout:
    layer: dict[str, int]  # real nodes and dummies
    x: dict[str, float]  # horizontal centre, >= 0
    width: float
    depth: int
    chains: dict[str, dict[int, str]] = field(default_factory=dict)  # source -> layer -> dummy

    def route(self, src: str, dst: str) -> list[tuple[float, int]]:
        """The (x, layer) points an edge passes between its ends (empty for adjacent layers)."""
        chain = self.chains.get(src, {})
        return [(self.x[chain[li]], li) for li in range(self.layer[src] + 1, self.layer[dst])]


def layered_layout(
    keys: list[str],
    edges: Iterable[tuple[str, str]],
    widths: Mapping[str, float],
    gap: float = 24.0,
    sweeps: int = 6,
) -> Layout:
    """Lay out the DAG `keys`/`edges` (keys in program order); `widths[key]` in pixels."""
    g = nx.DiGraph()
    g.add_nodes_from(keys)
    g.add_edges_from(edges)
    order = list(nx.topological_sort(g))
    layer: dict[str, int] = {}
    for k in order:
        layer[k] = max((layer[p] + 1 for p in g.predecessors(k)), default=0)
    for k in reversed(order):
        if g.out_degree(k) > 0:
            layer[k] = min(layer[s] for s in g.successors(k)) - 1

    # Dummy chains: src -> d1 -> d2 ... ; a far user hangs off the dummy just above it.
    h = nx.DiGraph()
    h.add_nodes_from(keys)
    chains: dict[str, dict[int, str]] = {}
    size = dict(widths)
    for s in keys:
        far = [d for d in g.successors(s) if layer[d] - layer[s] > 1]
        for d in g.successors(s):
            if layer[d] - layer[s] == 1:
                h.add_edge(s, d)
        if not far:
            continue
        chain: dict[int, str] = {}
        prev = s
        for li in range(layer[s] + 1, max(layer[d] for d in far)):
            dummy = f"\0{s}\0{li}"
            chain[li], layer[dummy], size[dummy] = dummy, li, DUMMY_WIDTH
            h.add_edge(prev, dummy)
            prev = dummy
        for d in far:
            h.add_edge(chain[layer[d] - 1], d)
        chains[s] = chain

    depth = max(layer.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    for k in keys:  # program order, each chain right after its source
        rows[layer[k]].append(k)
        for li, dummy in chains.get(k, {}).items():
            rows[li].append(dummy)
    x: dict[str, float] = {}
    for row in rows:
        x.update(_pack(row, size, gap))
    for _ in range(sweeps):
        for li_order, neighbours in (
            (range(depth), h.predecessors),
            (reversed(range(depth)), h.successors),
        ):
            for li in li_order:
                row = rows[li]
                bary = {}
                for k in row:
                    ns = [x[n] for n in neighbours(k)]
                    bary[k] = statistics.fmean(ns) if ns else x[k]
                row.sort(key=lambda k: bary[k])
                x.update(_pack(row, size, gap))
    # Coordinates: pull each node towards the mean of its neighbours (straightening chains),
    # keeping every row's order and gaps.
    for _ in range(sweeps):
        for li_order, neighbours in (
            (range(depth), h.predecessors),
            (reversed(range(depth)), h.successors),
        ):
            for li in li_order:
                row = rows[li]
                want = [statistics.fmean([x[n] for n in neighbours(k)] or [x[k]]) for k in row]
                x.update(zip(row, _closest(row, want, size, gap)))
    lo = min((x[k] - size[k] / 2 for k in x), default=0.0)
    hi = max((x[k] + size[k] / 2 for k in x), default=0.0)
    for k in x:
        x[k] -= lo
    return Layout(layer, x, hi - lo, depth, chains)


def _closest(
    row: list[str], want: list[float], size: Mapping[str, float], gap: float
) -> list[float]:
    """Positions as close (least squares) to `want` as the row's order and gaps allow.

    With offsets o_i (the least distance from the first node), y_i = x_i - o_i must be
    non-decreasing: an isotonic regression, solved by pooling adjacent violators.
    """
    offsets, acc = [], 0.0
    for i, k in enumerate(row):
        if i:
            acc += (size[row[i - 1]] + size[k]) / 2 + gap
        offsets.append(acc)
    pools: list[list[float]] = []  # [mean, count]
    for w, o in zip(want, offsets):
        pools.append([w - o, 1.0])
        while len(pools) > 1 and pools[-2][0] > pools[-1][0]:
            m2, c2 = pools.pop()
            m1, c1 = pools[-1]
            pools[-1] = [(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2]
    ys = [m for m, c in pools for _ in range(int(c))]
    return [y + o for y, o in zip(ys, offsets)]


def _row_width(row: list[str], size: Mapping[str, float], gap: float) -> float:
    return sum(size[k] for k in row) + gap * max(len(row) - 1, 0)


def _pack(row: list[str], size: Mapping[str, float], gap: float) -> dict[str, float]:
    """Centres of `row`'s nodes placed left to right, the row centred on 0."""
    out, left = {}, -_row_width(row, size, gap) / 2
    for k in row:
        out[k] = left + size[k] / 2
        left += size[k] + gap
    return out
