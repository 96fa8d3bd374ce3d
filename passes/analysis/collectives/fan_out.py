"""Many reshards from one source: one search of the layout graph answers every target.

    plans = FanOut()
    plans.plan(shape, dtype, src, dst)   # == plan_reshard(shape, dtype, src, dst): same steps

A cost table (auto-shard's) asks for the plan from each layout a producer makes to each layout
its consumers need: a few dozen targets per source. `plan_reshard` runs its A* once per pair;
here one lexicographic Dijkstra from the source labels every layout of the full graph
(layout_graph.py) with the least (cost, steps, edge keys) path to it, and each target reads its
plan off the labels. On Llama-3-8B's 256-device mesh a rank-5 source reaches 316 layouts over
5.7k edges: about three of the A* searches it replaces (docs/autoshard.md).

**The same plan, or no answer.** The plan `plan_reshard` returns is the least path in the full
graph whenever neither of its two searches is cut by the budget and the full one runs: the order
(cost, steps, keys) is total, strictly increased by every edge and kept by extending two paths
with the same edge, so A* with its consistent lower bound and the Dijkstra here find the same
least path (the incumbents A* starts from are paths of the same graph). Two slices in a row are
one slice at the same cost in a step fewer, so skipping a slice after a slice (as both searches
do) never drops the least path. Whether A* would be cut is decided from the labelled graph
without running it: each search expands a layout at most once, so its edges are at most the sum,
over the layouts the source reaches, of what one layout can generate (all of the full graph's
edges with its slices, or the few-atom graph's, bounded by `_few_bound`). When the two sums fit
the budget, and the slices of the source leave room for the full search, the labels are the
planner's answer; otherwise (partial sums over several axes on a large mesh, say) the pair goes
to `plan_reshard`. Tests compare the two on random meshes and layouts.

The searches are kept per (shape, dtype, source, atoms, kept unreduced axes) for the last
`capacity` sources, so the memory stays a few hundred layouts' labels each.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import dataclass

from shardc.ir.mapping import NamedMapping
from shardc.passes.analysis.collectives.layout_graph import (
    Edge,
    LayoutGraph,
    State,
    edge_target,
    slice_count,
)
from shardc.passes.analysis.collectives.planner import (
    DEFAULT_BUDGET,
    FULL_SEARCH_STATES,
    Plan,
    _build,
    _greedy_edges,
    _problem,
    plan_reshard,
)
from shardc.passes.analysis.collectives.problem import ReshardProblem
from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.analysis.collectives.search import PlanKey
from shardc.passes.analysis.collectives.shards import Shape, local_elements
from shardc.passes.analysis.collectives.steps import KIND_ORDER


@dataclass(frozen=True)
class Summary:
    """A plan's bytes per device (`comm`: the report's `bytes_per_device`, `ring`: the ring
    model's) and the local buffer bytes of each layout it passes through, source first."""

    comm: int
    ring: int
    held: tuple[int, ...]


@dataclass(frozen=True)
class _Labels:
    """The least path key to every layout the source reaches, or `exact=False` when a target's
    plan could come from a search the budget cuts (module docstring)."""

    best: dict[State, PlanKey]
    exact: bool
    generated: int


# One layout's edges without prices: (tie-break key, edge, next layout, price class)
_Out = list[tuple[tuple, Edge, State, int]]


class _Structure:
    """The edges of one layout graph (atoms of these sizes, a rank, the unreduced atoms kept),
    generated once for every tensor and source: what an edge costs depends on the tensor only
    through its price class (kind, shard counts before and after, group, target dim)."""

    def __init__(self, graph: LayoutGraph) -> None:
        self.graph = graph
        self.classes: dict[tuple, int] = {}
        self.class_list: list[tuple] = []
        self._out: dict[tuple[State, bool], tuple[_Out, int]] = {}

    def out(self, state: State, sliced: bool) -> tuple[_Out, int]:
        """The layout's edges, and at most how many edges both of the planner's searches may
        generate from it (`_bound`)."""
        found = self._out.get((state, sliced))
        if found is None:
            graph, classes = self.graph, self.classes
            k0 = graph.counts(state[0])
            edges: _Out = []
            for edge_key, edge, nxt, group, tgt in graph.edges(state, sliced):
                price = (edge[0], k0, graph.counts(nxt[0]), group, tgt)
                cid = classes.get(price)
                if cid is None:
                    cid = classes[price] = len(self.class_list)
                    self.class_list.append(price)
                edges.append((edge_key, edge, nxt, cid))
            found = self._out[(state, sliced)] = (edges, _bound(graph, state, sliced, edges))
        return found


def _bound(graph: LayoutGraph, state: State, sliced: bool, edges: _Out) -> int:
    """At most how many edges A* over the full graph (reaching `state` by a slice or not: its
    slices counted before the uneven-dim filter) and over the few-atom graph (axis_moves.py,
    for any target) generate from `state`. The few-atom graph's: its slices (every target-prefix
    run at once, each alone, each free atom onto each dim), single-dim and prefix gathers,
    all_to_alls, a permute to the target and one per position, and the all/each-atom
    reductions onto nothing or one dim."""
    rank = graph.rank
    dims, unreduced = state
    placed = sum(len(d) for d in dims)
    free = len(graph.free(state))
    full = len(edges) + (slice_count(free, rank) - 1 if sliced else 0)
    few = (1 + rank + free * rank) + (placed + 1) + placed * (rank - 1) + (placed + 1)
    reducible = sum(
        1 for i in range(len(graph.atoms)) if unreduced >> i & 1 and not graph.keep >> i & 1
    )
    if reducible:
        few += (1 + (reducible if reducible > 1 else 0)) * (1 + rank)
    return full + few


def _prices(problem: ReshardProblem, structure: _Structure, prices: list[int]) -> list[int]:
    """`prices` extended to every class of `structure`: the edge's weight for this tensor, or
    -1 when the edge would move an uneven dim's data outside its group (problem.neighbours)."""
    for kind, k0, k1, group, tgt in structure.class_list[len(prices):]:
        if k0 != k1 and not problem.nested(k0, k1):
            prices.append(-1)
        else:
            prices.append(problem.weight(kind, k0, k1, group, tgt))
    return prices


def _label(problem: ReshardProblem, structure: _Structure, prices: list[int],
           budget: int) -> _Labels:
    """Dijkstra from the source over the full graph, with search.py's path order."""
    start = problem.src
    best: dict[State, PlanKey] = {start: (0, 0, ())}
    heap: list[tuple] = [(0, 0, (), start, False)]
    done: set[State] = set()
    generated = bound = 0
    while heap:
        cost, steps, keys, state, sliced = heapq.heappop(heap)
        if state in done:
            continue
        done.add(state)
        edges, most = structure.out(state, sliced)
        bound += most
        if bound > budget:
            return _Labels({}, False, generated)
        if len(prices) < len(structure.class_list):
            _prices(problem, structure, prices)
        for edge_key, edge, nxt, cid in edges:
            weight = prices[cid]
            if weight < 0:
                continue
            generated += 1
            if nxt in done:
                continue
            key = (cost + weight, steps + 1, (*keys, edge_key))
            old = best.get(nxt)
            if old is not None and not key < old:
                continue
            best[nxt] = key
            heapq.heappush(heap, (*key, nxt, edge[0] == "all_slice"))
    # the few-atom search generates at most `bound` minus the full search's share; the full
    # search runs when the source's slices fit what the few-atom one leaves
    graph = structure.graph
    slices = slice_count(len(graph.free(start)), graph.rank) * FULL_SEARCH_STATES
    return _Labels(best, slices <= budget - bound, generated)


def _edges(key: PlanKey) -> tuple[Edge, ...]:
    return tuple((KIND_ORDER[rank], params) for rank, params in key[2])


class FanOut:
    """`plan_reshard`'s plans, one search per source (module docstring)."""

    def __init__(self, capacity: int = 256, budget: int = DEFAULT_BUDGET) -> None:
        self.capacity = capacity
        self.budget = budget
        self._labels: OrderedDict[tuple, _Labels] = OrderedDict()
        self._structures: dict[tuple, _Structure] = {}
        self._prices: dict[tuple, list[int]] = {}
        self.searches = 0  # sources labelled
        self.fallbacks = 0  # pairs sent to plan_reshard

    def plan(self, shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping,
             cost: str = "ring") -> Plan:
        """The plan `plan_reshard(shape, dtype, src, dst, cost=cost)` returns (same steps,
        layouts and costs; `searched` counts the shared search's edges). Raises as it does."""
        problem, found, greedy, generated = self._find(shape, dtype, src, dst, cost)
        if found is None:
            return plan_reshard(shape, dtype, src, dst, cost=cost, budget=self.budget)
        return _build(problem, _edges(found), src, dst, search="optimal", greedy_cost=greedy,
                      searched=generated)

    def summary(self, shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping,
                cost: str = "ring") -> Summary:
        """What `plan(...)` moves and holds, without building its steps: its bytes under both
        cost models and the local buffer of each layout it passes through (src first)."""
        problem, found, _, _ = self._find(shape, dtype, src, dst, cost)
        if found is None:
            plan = plan_reshard(shape, dtype, src, dst, cost=cost, budget=self.budget)
            held = tuple(local_elements(plan.shape, m.shard_counts()) * problem.eb
                         for m in plan.layouts)
            return Summary(plan.comm_bytes, plan.ring_bytes, held)
        counts = problem.graph.counts
        shape, eb = problem.shape, problem.eb
        state = problem.src
        k0 = counts(state[0])
        held = [local_elements(shape, k0) * eb]
        comm = ring = 0
        for edge in _edges(found):
            nxt = edge_target(state, edge)
            k1 = counts(nxt[0])
            kind = edge[0]
            ring += ring_cost(kind, shape, eb, k0, k1, *problem.graph.edge_group(edge))
            comm += buffer_cost(kind, shape, eb, k0, k1)
            held.append(local_elements(shape, k1) * eb)
            state, k0 = nxt, k1
        return Summary(comm, ring, tuple(held))

    def _find(self, shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping,
              cost: str) -> tuple[ReshardProblem, PlanKey | None, int, int]:
        """The pair's problem, its least path key (None: ask the planner), the greedy plan's
        cost and the edges the shared search generated."""
        shape = tuple(shape)
        problem = _problem(shape, dtype, src, dst, cost)
        graph = problem.graph
        form = (graph.sizes, graph.rank, graph.keep)
        key = (shape, dtype, src, problem.atoms, form, cost)
        labels = self._labels.get(key)
        if labels is None:
            structure = self._structures.get(form)
            if structure is None:
                structure = self._structures[form] = _Structure(graph)
            prices = self._prices.setdefault((shape, dtype, cost, form), [])
            labels = _label(problem, structure, prices, self.budget)
            self.searches += 1
            self._labels[key] = labels
            if len(self._labels) > self.capacity:
                self._labels.popitem(last=False)
        else:
            self._labels.move_to_end(key)
        found = labels.best.get(problem.dst) if labels.exact else None
        greedy = problem.path_key(_greedy_edges(problem))
        if found is None or greedy < found:
            # Not provably the planner's answer (a cut search, an unreached target, or the
            # greedy incumbent ahead of the graph)
            self.fallbacks += 1
            return problem, None, greedy[0], labels.generated
        return problem, found, greedy[0], labels.generated
