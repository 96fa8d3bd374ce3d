"""The integer program: Alpa's intra-operator formulation over shardc's costs.

    problem = formulate(graph, space, model)
    problem.objective, problem.rows, ...        # handed to `solve.py`

Variables:

- `x[g, a]` binary: group `g` takes choice `a`; one choice per group (`sum_a x[g, a] = 1`).
  A group with one choice is a constant and has no variable.
- `e[r, c]` in [0, 1] for each edge between two groups with several choices: the producer's
  choices are grouped into row classes by the layout they produce, the consumer's into column
  classes by the layouts they need, and `e` is the product of the two one-hot rows:
  `sum_c e[r, c] = sum_{a in r} x[g, a]` and `sum_r e[r, c] = sum_{b in c} x[h, b]`. With the
  `x` binary, these marginals force `e` to the one cell of the chosen pair, so `e` needs no
  integrality (a transportation polytope with 0/1 margins). Classes whose costs are equal for
  every choice on the other side are merged into one.

Objective: the bytes (or ring bytes) of every reshard the choice implies, as the planner would
lower it: on each edge, from the layout the producer makes to each distinct layout the consumer
needs (a consumer reading a value at several operands shares one reshard per target, as
`insert-reshards` does); at each return, to the declared result sharding (or to the reduced
layout when the producer leaves partial sums; an open declared dim may keep what the producer
made). Edges inside one group are linear in its `x`.
Tied blocks give identical edges; each is built once and counted as often as it occurs.

Memory: for each op of the program, the bytes one device holds while it runs, as the report
counts them (docs/cost.md): every value live across the op (constant expressions too, in the
layout propagation gives them: memory.py), the op's results, and the target buffer of every
reshard feeding it; a value whose last reader is this op and which reaches it only through
reshards is dead by then (its last use is the reshard). A second row per op with reshards
bounds the collectives just before it: the live values, the source, and what each plan holds
while it runs. Rows with the same live terms (the same point of different layers) are merged
into their upper envelope, exact when one dominates, as when earlier layers' weights die.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardc.ir.mapping import NamedMapping
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.propagation.autoshard.candidates import reduced
from shardc.passes.propagation.autoshard.costs import NO_RESHARD, UNPLANNABLE, CostModel, Reshard
from shardc.passes.propagation.autoshard.graph import RESHARDING, CostGraph, Node, Return, Use
from shardc.passes.propagation.autoshard.memory import memory_rows
from shardc.passes.propagation.autoshard.merge import merge_blocks
from shardc.passes.propagation.autoshard.parts import EdgeBlock, Linear, Row, Term, TermKey
from shardc.passes.propagation.autoshard.shares import (
    Hits,
    Pair,
    Share,
    attach_shares,
    pooled,
    share_plan,
)
from shardc.passes.propagation.autoshard.simplify import ChoiceSpace


@dataclass
class Problem:
    graph: CostGraph
    space: ChoiceSpace
    model: CostModel
    x_offset: list[int]  # group -> index of x[g, 0] (-1: one choice, no variable)
    blocks: list[EdgeBlock]
    num_vars: int
    comm: np.ndarray  # per variable: bytes per device it adds (objective `bytes`)
    ring: np.ndarray  # per variable: ring bytes
    forbidden: np.ndarray  # per variable: True if it may not be taken (unplannable)
    const_comm: int = 0
    const_ring: int = 0
    # memory: each term a linear function of the variables, each row a sum of terms (memory.py)
    terms: list[Term] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    # reshards several consumers of a value share, each priced once (shares.py)
    shares: list[Share] = field(default_factory=list)

    @property
    def objective(self) -> np.ndarray:
        return self.comm if self.model.objective == "bytes" else self.ring

    def var(self, group: int, choice: int) -> int:
        return self.x_offset[group] + choice

    def peak(self, v: np.ndarray) -> float:
        """The largest memory row at the point `v` (0 without rows)."""
        if not self.rows:
            return 0.0
        values = np.array([t.value(v) for t in self.terms])
        return max(float(r.counts @ values[r.ids]) for r in self.rows)


class _Builder:
    def __init__(self, graph: CostGraph, space: ChoiceSpace, model: CostModel,
                 share: bool) -> None:
        self.graph, self.space, self.model = graph, space, model
        self.share_plan = share_plan(graph, model) if share else {}
        # value -> the edges of its pooled consumers (shares.py), in use order
        self.pooled: dict[tuple[int, int], list[TermKey]] = {}
        self.hits: dict[TermKey, Linear | np.ndarray] = {}  # edge -> its reads of each pair
        self.linear_comm = [np.zeros(n) for n in space.sizes]
        self.linear_ring = [np.zeros(n) for n in space.sizes]
        self.blocks: dict[TermKey, EdgeBlock] = {}
        self.edge_terms: dict[int, list[TermKey]] = {}  # consumer node -> its edges
        # costs, held, freed, peak
        self.linear: dict[TermKey, tuple[Linear, Linear, Linear, Linear]] = {}
        self.return_terms: list[TermKey] = []  # the reshards before the return

    def group(self, node: Node) -> int:
        return self.space.group_of[node.index]

    def rep(self, node: Node) -> int:
        return self.space.representative[node.index]

    def cost(
        self, v, src: NamedMapping, targets: tuple, last: bool, alias: bool,
        pairs: tuple[Pair, ...] = (),
    ) -> tuple[Reshard, int]:
        """The reshards from `src` to each of `targets`, and the bytes freed at the consumer
        when it is the value's last reader and reads it only through reshards. With `alias`
        the consumer is a `sharding_constraint`/`reshard`: the reshard is the op, its target
        buffer is the op's result (counted as such), and with no reshard the result is the
        source itself. A reshard of `pairs` moves nothing here: its shared `z` pays for it
        (shares.py); its buffers are still held."""
        shape, dtype = v.type.shape, v.type.dtype
        shared = set(pairs) if pairs else ()
        total = NO_RESHARD
        for t in targets:
            r = self.model.reshard(shape, dtype, src, t)
            if pairs and (src, t) in shared:
                r = Reshard(0, 0, r.held, r.peak)
            total = total + r
        freed = 0
        if last and (alias or all(not same_layout(src, t) for t in targets)):
            freed = self.model.held(shape, dtype, src)
        if alias:
            total = Reshard(total.comm, total.ring, 0, max(total.peak - total.held, 0))
        return total, freed

    def add_use(self, u: Use) -> None:
        p, c = u.producer, u.consumer
        gp, gc = self.group(p), self.group(c)
        v = p.values[u.result]
        last = self.graph.last_use.get((p.index, u.result)) == c.position
        pairs = self.share_plan.get((p.index, u.result), ()) if pooled(u) else ()
        key = ("edge", self.rep(p), u.result, self.rep(c), u.operands, last, pairs)
        self.edge_terms.setdefault(c.index, []).append(key)
        if pairs:
            self.pooled.setdefault((p.index, u.result), []).append(key)
        if key in self.blocks:
            self.blocks[key].count += 1
            return
        if key in self.linear:
            costs = self.linear[key][0]
            self.linear_comm[costs.group] += costs.values[0]
            self.linear_ring[costs.group] += costs.values[1]
            return
        srcs = [s.results[u.result] for s in p.strategies]
        tgts = [tuple(dict.fromkeys(s.operands[i] for i in u.operands)) for s in c.strategies]
        alias = c.op is not None and c.op.name in RESHARDING

        hits = Hits(pairs)

        def cost(src: NamedMapping, targets: tuple) -> tuple[Reshard, int, np.ndarray]:
            return (*self.cost(v, src, targets, last, alias, pairs), hits(src, targets))

        self._edge(key, gp, gc, srcs, tgts, cost)

    def _edge(self, key, gp: int, gc: int, srcs, tgts, cost) -> None:
        """The term of an edge from group `gp`'s sources to group `gc`'s targets: linear in one
        group when the two are one group or one side has a single choice, else a block."""
        sizes = self.space.sizes
        if gp == gc:
            self._linear(key, gp, [cost(srcs[a], tgts[a]) for a in range(len(srcs))])
        elif sizes[gp] == 1:
            self._linear(key, gc, [cost(srcs[0], t) for t in tgts])
        elif sizes[gc] == 1:
            self._linear(key, gp, [cost(s, tgts[0]) for s in srcs])
        else:
            self._block(key, gp, gc, srcs, tgts, cost)

    def _block(self, key, gp: int, gc: int, srcs, tgts, cost) -> None:
        row_of: dict[NamedMapping, list[int]] = {}
        for a, s in enumerate(srcs):
            row_of.setdefault(s, []).append(a)
        col_of: dict[tuple, list[int]] = {}
        for b, t in enumerate(tgts):
            col_of.setdefault(t, []).append(b)
        shape = (len(row_of), len(col_of))
        cells: np.ndarray | None = None  # comm, ring, held, freed, peak, then the reads
        for r, s in enumerate(row_of):
            for ci, t in enumerate(col_of):
                plan, freed, read = cost(s, t)
                if cells is None:
                    cells = np.zeros((5 + len(read), *shape))
                cells[:, r, ci] = (plan.comm, plan.ring, plan.held, -freed, plan.peak, *read)
        assert cells is not None
        rows, cells = _merge_equal(list(row_of.values()), cells, axis=1)
        cols, cells = _merge_equal(list(col_of.values()), cells, axis=2)
        self.blocks[key] = EdgeBlock(gp, gc, rows, cols, *cells[:5], count=1)
        if len(cells) > 5:
            self.hits[key] = cells[5:]

    def _linear(self, key: TermKey, group: int, costs: list[tuple]) -> None:
        comm = np.array([c[0].comm for c in costs], dtype=float)
        ring = np.array([c[0].ring for c in costs], dtype=float)
        held = np.array([c[0].held for c in costs], dtype=float)
        freed = np.array([-c[1] for c in costs], dtype=float)
        peak = np.array([c[0].peak for c in costs], dtype=float)
        if len(costs[0]) > 2 and len(costs[0][2]):
            self.hits[key] = Linear(group, np.stack([c[2] for c in costs], axis=1))
        self.linear[key] = (
            Linear(group, np.stack([comm, ring])),
            Linear(group, held),
            Linear(group, freed),
            Linear(group, peak),
        )
        self.linear_comm[group] += comm
        self.linear_ring[group] += ring

    def _reads(self, key: TermKey, x_offset: list[int]) -> list[Term | None]:
        """Per pair, edge `key`'s indicator of reading it: its block cells, or `x` of its
        linear group (a constant when that group has one choice); None when it never does."""
        found = self.hits[key]
        if isinstance(found, Linear):
            flat, base = found.values, x_offset[found.group]
            if self.space.sizes[found.group] == 1:
                return [Term(np.zeros(0, np.int64), np.zeros(0), 1.0) if h[0] else None
                        for h in flat]
        else:
            flat, base = found.reshape(len(found), -1), self.blocks[key].offset
        out: list[Term | None] = [None] * len(flat)
        rows, cols = np.nonzero(flat)
        bounds = np.searchsorted(rows, np.arange(len(flat) + 1))
        for j in np.nonzero(np.diff(bounds))[0]:
            nz = cols[bounds[j]: bounds[j + 1]]
            out[j] = Term(base + nz, np.ones(len(nz)), 0.0)
        return out

    def shares(self, x_offset: list[int]) -> list[Share]:
        """One share per pair of each value its pooled consumers may read (shares.py); tied
        values, whose pooled edges are the same, share theirs and count them."""
        found: dict[tuple, list[Share]] = {}
        for (p, k), keys in self.pooled.items():
            signature = (self.space.representative[p], k, tuple(keys))
            if signature in found:
                for share in found[signature]:
                    share.count += 1
                continue
            v = self.graph.nodes[p].values[k]
            group: list[Share] = []
            per_key = [self._reads(key, x_offset) for key in dict.fromkeys(keys)]
            for j, (src, t) in enumerate(self.share_plan[(p, k)]):
                r = self.model.reshard(v.type.shape, v.type.dtype, src, t)
                reads = [found[j] for found in per_key if found[j] is not None]
                if reads:
                    group.append(Share(r.comm, r.ring, 1, reads))
            found[signature] = group
        return [share for group in found.values() for share in group]

    def add_carry(self, ret: Return, arg: Node) -> None:
        """A returned state must come back in its argument's layout: an edge from the producer
        to the argument, the reshard before the return."""
        p, k = ret.producer, ret.result
        v = p.values[k]
        key = ("carry", ret.index)
        srcs = [s.results[k] for s in p.strategies]
        tgts = [(s.results[0],) for s in arg.strategies]

        def cost(src: NamedMapping, targets: tuple) -> tuple[Reshard, int, np.ndarray]:
            return (*self.cost(v, reduced(src), targets, False, False), np.zeros(0))

        self._edge(key, self.group(p), self.group(arg), srcs, tgts, cost)
        self.return_terms.append(key)

    def add_return(self, ret: Return) -> None:
        p, k = ret.producer, ret.result
        v = p.values[k]
        g = self.group(p)
        peak = np.zeros(len(p.strategies))
        for a, s in enumerate(p.strategies):
            src = s.results[k]
            r = self.model.reshard(v.type.shape, v.type.dtype, src, ret.target(src))
            self.linear_comm[g][a] += r.comm
            self.linear_ring[g][a] += r.ring
            peak[a] = r.peak
        key = ("return", ret.index)
        zeros = np.zeros(len(peak))
        self.linear[key] = (
            Linear(g, np.zeros((2, len(peak)))), Linear(g, peak), Linear(g, zeros), Linear(g, peak)
        )
        self.return_terms.append(key)


def _merge_equal(
    classes: list[list[int]], cells: np.ndarray, axis: int
) -> tuple[list[list[int]], np.ndarray]:
    """Classes whose cells are equal along `axis` (rows: 1, columns: 2) merged into one: which
    of them is chosen changes nothing on this edge, so one transportation cell serves both."""
    keep: dict[bytes, int] = {}
    merged: list[list[int]] = []
    picked: list[int] = []
    for i, members in enumerate(classes):
        line = np.take(cells, i, axis=axis).tobytes()
        j = keep.get(line)
        if j is None:
            keep[line] = len(merged)
            merged.append(list(members))
            picked.append(i)
        else:
            merged[j].extend(members)
    return merged, np.take(cells, picked, axis=axis)


def formulate(
    graph: CostGraph, space: ChoiceSpace, model: CostModel, kept: frozenset[int] = frozenset(),
    share: bool = False,
) -> Problem:
    """The variables, objective and memory rows of the choice (see the module docstring);
    arguments at the positions in `kept` are not donated: they live to the end. With `share`
    a reshard several consumers read is priced once (shares.py)."""

    b = _Builder(graph, space, model, share)
    for u in graph.uses:
        b.add_use(u)
    carried = {ret.index: arg for ret, arg in graph.carries}
    for ret in graph.returns:
        if ret.index in carried:
            b.add_carry(ret, carried[ret.index])
        else:
            b.add_return(ret)
    x_offset, n = [], 0
    for size in space.sizes:
        x_offset.append(n if size > 1 else -1)
        n += size if size > 1 else 0
    blocks = list(b.blocks.values())
    for block in blocks:
        block.offset = n
        n += block.size
    comm, ring = np.zeros(n), np.zeros(n)
    forbidden = np.zeros(n, dtype=bool)
    problem = Problem(graph, space, model, x_offset, blocks, n, comm, ring, forbidden)
    for g, size in enumerate(space.sizes):
        lc, lr = b.linear_comm[g], b.linear_ring[g]
        if size == 1:
            problem.const_comm += int(lc[0]) if lc[0] < UNPLANNABLE else 0
            problem.const_ring += int(lr[0]) if lr[0] < UNPLANNABLE else 0
            continue
        sl = slice(x_offset[g], x_offset[g] + size)
        comm[sl], ring[sl] = lc, lr
        forbidden[sl] = lc >= UNPLANNABLE
    for block in blocks:
        sl = slice(block.offset, block.offset + block.size)
        comm[sl] = block.comm.ravel() * block.count
        ring[sl] = block.ring.ravel() * block.count
        forbidden[sl] = block.comm.ravel() >= UNPLANNABLE
    comm[forbidden] = 0
    ring[forbidden] = 0
    problem.terms, problem.rows = memory_rows(
        graph, space, model, x_offset, b.blocks, b.edge_terms, b.linear, b.return_terms, kept
    )
    problem.shares = b.shares(x_offset)
    # one block per pair of groups: exact, smaller and tighter (merge.py)
    problem = merge_blocks(problem)
    attach_shares(problem)
    return problem
