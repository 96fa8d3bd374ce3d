"""Bounded best-first search for the reshard planner: A* with a budget and an incumbent.

    outcome = bounded_search(start, goal, neighbours, lower_bound, incumbent, budget=20_000)
    outcome.edges, outcome.complete      # the cheapest plan found; True when it is optimal

Nodes are layouts (`layout_graph.State`); `neighbours(state, after_slice)` yields
`(key, edge, next, cost)` for every collective from `state` (`after_slice`: the state was reached
by an all_slice, so a second one can be skipped: two slices in a row are one slice of both, at
the same cost and one step fewer). Plans are ordered by (cost, steps, edge keys): the cheapest,
then the shortest, then the first in kind/parameter order.

The incumbent (the greedy plan) bounds the search from the start: a partial plan whose cost plus
`lower_bound` (admissible) exceeds the best complete plan known, or equals it with more steps,
is never pushed. `budget` counts
edges generated, the unit of both time and memory (every heap entry is one generated edge): when
it runs out the search stops and returns the best complete plan seen (`complete=False`). The
count is deterministic, so a plan never depends on the machine's speed or load.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from shardc.passes.analysis.collectives.layout_graph import Edge, State

# (tie-break key, edge, next state, edge cost)
Neighbour = tuple[tuple, Edge, State, int]
PlanKey = tuple[int, int, tuple]  # (cost, steps, edge keys)


@dataclass(frozen=True)
class SearchOutcome:
    """The best plan found (`edges`, `key`); `complete` when the search proved it optimal."""

    edges: tuple[Edge, ...]
    key: PlanKey
    complete: bool
    generated: int
    expanded: int


def bounded_search(
    start: State,
    goal: State,
    neighbours: Callable[[State, bool], Iterable[Neighbour]],
    lower_bound: Callable[[State], int],
    incumbent: tuple[PlanKey, tuple[Edge, ...]],
    budget: int,
) -> SearchOutcome:
    """A* from `start` to `goal` over at most `budget` generated edges (module docstring)."""
    best_key, best_path = incumbent
    if start == goal:
        return SearchOutcome((), (0, 0, ()), True, 0, 0)
    # Heap entries: (estimate, cost, steps, keys, state, reached by a slice, path).
    heap: list[tuple] = [(lower_bound(start), 0, 0, (), start, False, ())]
    best: dict[State, PlanKey] = {start: (0, 0, ()), goal: best_key}
    done: set[State] = set()
    generated = expanded = 0
    while heap:
        _, cost, steps, keys, state, sliced, path = heapq.heappop(heap)
        if state == goal:
            return SearchOutcome(path, (cost, steps, keys), True, generated, expanded)
        if state in done:
            continue
        done.add(state)
        expanded += 1
        for edge_key, edge, nxt, weight in neighbours(state, sliced):
            generated += 1
            if generated > budget:
                return SearchOutcome(best_path, best_key, False, generated - 1, expanded)
            if nxt in done:
                continue
            new_cost = cost + weight
            if new_cost > best_key[0]:
                continue
            key = (new_cost, steps + 1, (*keys, edge_key))
            old = best.get(nxt)
            if old is not None and not key < old:
                continue
            at_goal = nxt == goal
            estimate = new_cost + (0 if at_goal else lower_bound(nxt))
            # Past the best plan: costlier, or as costly with more steps (a step still to go).
            if (estimate, steps + 1 + (not at_goal)) > best_key[:2]:
                continue
            best[nxt] = key
            new_path = (*path, edge)
            if at_goal:
                best_key, best_path = key, new_path
            heapq.heappush(
                heap, (estimate, *key, nxt, edge[0] == "all_slice", new_path)
            )
    # Nothing left under the incumbent's cost: it is optimal.
    return SearchOutcome(best_path, best_key, True, generated, expanded)
