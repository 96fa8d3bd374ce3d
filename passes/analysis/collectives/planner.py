"""Reshard planning: the cheapest sequence of collectives from one sharding to another, in
bounded time and memory.

    plan_reshard((16, 64), "f32", <@mesh, [{"x"}, {}]>, <@mesh, [{}, {"x"}]>)
      -> sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]>

Three tiers, each bounded by `budget` edges generated (search.py):

1. the greedy plan (`greedy_plan`, linear in the axes): reduce, gather, slice; it is the
   incumbent the searches must beat;
2. A* over every layout (layout_graph.py), each edge one collective weighted by its per-device
   bytes under the cost model (`ring_cost.ring_cost` or `ring_cost.buffer_cost`). When it
   finishes within the budget the plan is optimal (`Plan.search == "optimal"`);
3. when the budget cuts it (or one layout alone has more all_slice edges than the budget), A*
   over the few-atom moves of axis_moves.py, again within the budget; the plan is the cheapest
   of the three (`Plan.search == "bounded"`), never worse than the greedy one.

Equal costs are broken deterministically: fewer steps, then the kinds in `steps.KIND_ORDER`, then
the parameters. The budget counts edges, not seconds, so a plan never depends on the machine.

NOTE: networkx is not used for the search itself: its shortest-path functions need the whole
graph up front, while a lazy A* that stops at the target expands a fraction of it. The tests build
the full graph with networkx as the independent oracle.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import NamedMapping
from shardc.passes.analysis.collectives.axis_moves import AxisMoves
from shardc.passes.analysis.collectives.layout_graph import Edge, edge_target, slice_count
from shardc.passes.analysis.collectives.problem import ReshardProblem
from shardc.passes.analysis.collectives.search import PlanKey, bounded_search
from shardc.passes.analysis.collectives.shards import Shape, nested_ok
from shardc.passes.analysis.collectives.steps import Step, same_layout

COST_MODELS = ("ring", "bytes")
# Edges generated per search tier (about 0.3 s and 30 MB each on a 2020s core; docs/cost.md).
DEFAULT_BUDGET = 50_000
FULL_SEARCH_STATES = 16


@dataclass(frozen=True)
class Plan:
    """A reshard as collectives: `layouts[i]` --`steps[i]`--> `layouts[i + 1]`.

    `cost` is the total under `cost_model`; `ring_bytes` and `comm_bytes` are the totals under
    both models (per device), whichever was optimised. `search` says how it was found:
    "optimal" (the full search finished), "bounded" (the budget cut it: the cheapest plan found
    within it), "greedy" (`greedy_plan`); `greedy_cost` is the greedy plan's cost and `searched`
    the edges the searches generated.
    """

    shape: Shape
    dtype: str
    steps: tuple[Step, ...]
    layouts: tuple[NamedMapping, ...]
    cost: int
    cost_model: str
    ring_bytes: int
    comm_bytes: int
    search: str = "optimal"
    greedy_cost: int = 0
    searched: int = 0

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
) -> ReshardProblem:
    _check_pair(shape, src, dst, cost)
    return ReshardProblem(shape, dtype, src, dst, cost)


def _build(
    problem: ReshardProblem, edges, src: NamedMapping, dst: NamedMapping, **info
) -> Plan:
    """The `Plan` of `edges`, each step applied (and so checked) on the real layouts."""
    shape, dtype = problem.shape, problem.dtype
    steps: list[Step] = []
    layouts = [src]
    state = problem.src
    for edge in edges:
        step = problem.step(edge)
        nxt = step.apply(layouts[-1], shape)
        state = edge_target(state, edge)
        assert same_layout(nxt, problem.decode(state)), (edge, nxt.text())
        steps.append(step)
        layouts.append(nxt)
    if steps:
        layouts[-1] = dst
    assert same_layout(layouts[-1], dst)
    ring = sum(s.ring_bytes(shape, dtype, m) for s, m in zip(steps, layouts, strict=False))
    comm = sum(
        s.bytes_per_device(shape, dtype, m) for s, m in zip(steps, layouts, strict=False)
    )
    cost = ring if problem.cost_model == "ring" else comm
    return Plan(shape, dtype, tuple(steps), tuple(layouts), cost, problem.cost_model, ring, comm,
                **info)


def _greedy_edges(problem: ReshardProblem) -> list[Edge]:
    """Reduce what the target does not keep, gather each dim back to its common prefix with the
    target (to nothing when an uneven dim would not nest), slice to the target."""
    (dims, unreduced), (goal_dims, keep) = problem.src, problem.dst
    graph = problem.graph
    edges: list[Edge] = []
    reducible = unreduced & ~keep
    if reducible:
        atoms = tuple(i for i in range(len(problem.atoms)) if reducible >> i & 1)
        edges.append(("all_reduce", atoms))
    prefix = []
    for n, d, g in zip(problem.shape, dims, goal_dims, strict=True):
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
    return edges


def _search(problem: ReshardProblem, budget: int) -> tuple[tuple[Edge, ...], str, int, int]:
    """(edges, "optimal" | "bounded", greedy cost, edges generated): module docstring's tiers."""
    greedy = tuple(_greedy_edges(problem))
    greedy_key: PlanKey = problem.path_key(greedy)
    if problem.src == problem.dst:
        return (), "optimal", 0, 0
    graph, lower_bound = problem.graph, problem.lower_bound
    moves = AxisMoves(graph, problem.dst)
    few = bounded_search(problem.src, problem.dst, problem.neighbours(moves.edges), lower_bound,
                         (greedy_key, greedy), budget)
    left = budget - few.generated
    # The full graph is worth searching only if what is left covers many layouts' slices.
    if slice_count(len(graph.free(problem.src)), graph.rank) * FULL_SEARCH_STATES > left:
        return few.edges, "bounded", greedy_key[0], few.generated
    full = bounded_search(problem.src, problem.dst, problem.neighbours(graph.edges),
                          lower_bound, (few.key, few.edges), left)
    how = "optimal" if full.complete else "bounded"
    return full.edges, how, greedy_key[0], few.generated + full.generated


@functools.lru_cache(maxsize=4096)
def _plan_cached(shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping,
                 cost: str, budget: int) -> Plan:
    problem = _problem(shape, dtype, src, dst, cost)
    edges, how, greedy_cost, generated = _search(problem, budget)
    return _build(problem, edges, src, dst, search=how, greedy_cost=greedy_cost,
                  searched=generated)


def plan_reshard(
    shape: Shape,
    dtype: str,
    src: NamedMapping,
    dst: NamedMapping,
    *,
    cost: str = "ring",
    budget: int = DEFAULT_BUDGET,
) -> Plan:
    """The cheapest collectives turning layout `src` into `dst` for a `shape`/`dtype` tensor,
    found within `budget` edges per search tier (module docstring; `Plan.search` says whether
    the plan is proven optimal).

    `cost="ring"` weighs steps by `Step.ring_bytes`, `"bytes"` by `Step.bytes_per_device`.
    Raises `ShardingError` for different meshes, open dims, a rank mismatch, a target with
    unreduced axes the source lacks, or a budget below 1. Memoised per arguments.
    """
    if budget < 1:
        raise ShardingError(f"the planner's budget must be at least 1 edge, not {budget}")
    return _plan_cached(tuple(shape), dtype, src, dst, cost, budget)


def greedy_plan(
    shape: Shape, dtype: str, src: NamedMapping, dst: NamedMapping, *, cost: str = "ring"
) -> Plan:
    """The obvious plan, for comparison and as the searches' first incumbent: all_reduce every
    unreduced axis the target does not keep, all_gather every dim down to its common prefix with
    the target (the whole dim when an uneven dim would not nest), then one all_slice to the
    target. Time linear in the axes.
    """
    problem = _problem(tuple(shape), dtype, src, dst, cost)
    edges = _greedy_edges(problem)
    plan = _build(problem, edges, src, dst, search="greedy")
    return dataclasses.replace(plan, greedy_cost=plan.cost)
