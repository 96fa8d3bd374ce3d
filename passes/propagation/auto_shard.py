"""`auto-shard`: choose the shardings nobody wrote, within a per-device memory budget.

    shardc opt model.mlir -p 'auto-shard{memory-budget=1048576}'
    shardc compile model.mlir --auto-shard --memory-budget 1048576

An integer program over per-op strategies (Alpa's intra-operator pass): every op of the entry
function picks one way to compute locally (which factors each mesh axis splits), every argument
one layout; each edge pays the planner's cost of resharding what the producer makes into what
the consumer needs; each point of the program holds no more than the budget. scipy's `milp`
(HiGHS) solves it within `time-limit` seconds, keeping the best plan so far. User shardings are
constraints. The choice is written as ordinary closed shardings (plus `sharding_constraint`s
where a consumer needs another layout), so the default pipeline after it is unchanged.

The parts are in `shardc.passes.propagation.autoshard`: inline (calls), candidates, graph, repeats
and simplify (fewer choices), costs, formulation, solve, apply. The formulation and its decisions:
docs/autoshard.md.

With `verify=true` (the default) the plan is compiled with the default pipeline's passes and
measured; if its real peak memory exceeds the budget (reshard buffers the model approximates),
the budget the solver sees is lowered by the excess and the program solved again, up to
`rounds` times. The figures go to `ctx.data["auto_shard"]` (the report's `auto_shard` key).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError
from shardc.passes.manager import Pass, PassContext, PassManager, parse_pipeline, register_pass
from shardc.passes.propagation.autoshard.apply import write_choice
from shardc.passes.propagation.autoshard.costs import OBJECTIVES, CostModel
from shardc.passes.propagation.autoshard.formulation import Problem, formulate
from shardc.passes.propagation.autoshard.graph import build_graph, single_mesh
from shardc.passes.propagation.autoshard.inline import inline_calls
from shardc.passes.propagation.autoshard.simplify import FOLLOW, simplify

if TYPE_CHECKING:
    from shardc.passes.propagation.autoshard.solve import SolveResult

# What `shardc compile` runs after auto-shard (shardc.pipeline.DEFAULT_PIPELINE; a test keeps
# the two equal): the plan is measured with it.
MEASURE_PIPELINE = (
    "propagation-pipeline,close-shardings,insert-reshards,lower-collectives,canonicalize"
)


@register_pass("auto-shard")
@dataclass(frozen=True)
class AutoShard(Pass):
    """Choose every sharding nobody wrote: an integer program minimising communication within
    a per-device memory budget (Alpa's intra-operator pass)."""

    memory_budget: int = 0  # bytes per device; 0: no budget
    objective: str = "bytes"  # bytes: the report's total_comm_bytes; ring: total_ring_bytes
    time_limit: float = 60.0  # seconds for the solver; the best plan so far is kept
    follow: str = "none"  # element-wise ops follow: none | chains (of element-wise ops) | all
    repeats: bool = True  # repeated layers share their choices
    tie_break: bool = True  # of plans moving as much, take the one with the lowest peak
    verify: bool = True  # measure the plan; tighten the budget if it does not fit
    rounds: int = 3  # solves at most, with verify and a budget
    inline: bool = True  # inline calls first, so the ops inside them are chosen for too

    def __post_init__(self) -> None:
        if self.follow not in FOLLOW:
            raise PassError(
                f"auto-shard: follow must be one of {', '.join(FOLLOW)} (got {self.follow!r})"
            )
        if self.objective not in OBJECTIVES:
            raise PassError(
                f"auto-shard: objective must be one of {', '.join(OBJECTIVES)} "
                f"(got {self.objective!r})"
            )
        if self.memory_budget < 0 or self.time_limit <= 0 or self.rounds < 1:
            raise PassError(
                "auto-shard: memory-budget must be >= 0, time-limit > 0 and rounds >= 1"
            )

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.ingest.remove_size_one_axes import remove_size_one_axes
        from shardc.passes.ingest.split_constants import split_function

        times: dict[str, float] = {}
        start = time.perf_counter()
        mesh = single_mesh(module)
        func = module.main
        remove_size_one_axes(module)
        if self.inline:
            inline_calls(module, func)
        split_function(func)
        graph = build_graph(module, func, mesh)
        space = simplify(graph, follow=self.follow, repeats=self.repeats)
        times["graph"] = time.perf_counter() - start
        start = time.perf_counter()
        model = CostModel(self.objective)
        problem = formulate(graph, space, model)
        times["formulate"] = time.perf_counter() - start
        budget = self.memory_budget or None
        rounds = self._solve(module, graph, problem, budget, times, func.loc)
        result, chosen, measured = (rounds[-1][k] for k in ("result", "chosen", "measured"))
        if budget is not None and measured is not None and measured["peak"] > budget:
            message = (
                f"auto-shard: the plan holds {measured['peak']} bytes per device at its peak, "
                f"over memory-budget={budget}, after {len(rounds)} solve(s) (the cost model "
                "under-estimates this program's reshard buffers); raise the budget"
            )
            if ctx.strict:
                raise PassError(message + " (--strict)", func.loc)
            ctx.warn(message, func.loc)
        sources = write_choice(module, graph, chosen)
        ctx.data["auto_shard_axes"] = sources
        ctx.data["auto_shard"] = _summary(problem, result, rounds, budget, measured, times, self)


    def _solve(self, module: Module, graph, problem: Problem, budget: int | None,
               times: dict[str, float], loc) -> list[dict[str, Any]]:
        """Solve; with `verify` and a budget, while the measured peak is over the budget, solve
        again with the solver's budget lowered by the excess (at most `rounds` solves). A
        lowered budget no plan meets ends the rounds with the last plan found."""
        space = problem.space
        target = budget
        rounds: list[dict[str, Any]] = []
        deadline = time.perf_counter() + self.time_limit
        while True:
            start = time.perf_counter()
            left = max(deadline - time.perf_counter(), 1.0)
            # scipy (half a second to import) only when a program is auto-sharded
            from shardc.passes.propagation.autoshard.solve import solve

            result = solve(problem, target, left, tie_break=self.tie_break)
            times["solve"] = times.get("solve", 0.0) + time.perf_counter() - start
            if rounds and not result.choices:
                break
            _check(result, budget, self.time_limit, loc)
            chosen = [n.strategies[result.choices[space.group_of[n.index]]] for n in graph.nodes]
            measured = None
            if self.verify:
                start = time.perf_counter()
                measured = _measure(module, graph, chosen)
                times["verify"] = times.get("verify", 0.0) + time.perf_counter() - start
            rounds.append({"budget": target, "measured": measured, "result": result,
                           "chosen": chosen})
            over = 0 if budget is None or measured is None else measured["peak"] - budget
            if over <= 0 or len(rounds) >= self.rounds or time.perf_counter() > deadline:
                break
            target = (target or 0) - over
        return rounds


def _check(result: SolveResult, budget: int | None, time_limit: float, loc) -> None:
    if result.choices:
        return
    if result.status == "infeasible":
        least = "" if result.min_peak is None else (
            f"; the smallest peak the cost model allows is {int(np.ceil(result.min_peak))} bytes"
        )
        raise PassError(
            f"no plan fits memory-budget={budget} bytes per device{least}; raise the budget "
            "or use a larger mesh",
            loc,
        )
    raise PassError(
        f"the solver found no plan within time-limit={time_limit:g} s (status "
        f"{result.status}); raise the time limit",
        loc,
    )


def _measure(module: Module, graph, chosen) -> dict[str, int]:
    """Compile a copy of `module` with `chosen` written in; the report's figures."""
    from shardc.passes.analysis.cost import collective_report

    copy = module.clone()
    write_choice(copy, graph, chosen)
    PassManager(parse_pipeline(MEASURE_PIPELINE), verify_each=False).run(copy, PassContext())
    report = collective_report(copy)
    return {
        "comm_bytes": report["total_comm_bytes"],
        "ring_bytes": report["total_ring_bytes"],
        "peak": report["peak_memory_bytes_per_device"],
    }


def _predicted(problem: Problem, x: np.ndarray) -> dict[str, int]:
    peak = 0.0
    for index, coef, const in problem.rows:
        peak = max(peak, float(coef @ x[index]) + const)
    return {
        "comm_bytes": int(round(problem.const_comm + problem.comm @ x)),
        "ring_bytes": int(round(problem.const_ring + problem.ring @ x)),
        "peak_memory_bytes_per_device": int(round(peak)),
    }


def _summary(
    problem: Problem,
    result: SolveResult,
    rounds: list[dict[str, Any]],
    budget: int | None,
    measured: dict[str, int] | None,
    times: dict[str, float],
    options: AutoShard,
) -> dict[str, Any]:
    """The report's `auto_shard` object (docs/cost.md lists its keys)."""
    first = result.phases[0]
    space, graph = problem.space, problem.graph
    repeat = space.repeat
    assert result.x is not None
    out: dict[str, Any] = {
        "status": result.status,
        "objective": options.objective,
        "objective_value": first.objective,
        "dual_bound": first.bound,
        "gap": first.gap,
        "solve_time_s": round(sum(r["result"].seconds for r in rounds), 4),
        "phases": [
            {
                "name": p.name,
                "status": p.status,
                "objective": p.objective,
                "dual_bound": p.bound,
                "gap": p.gap,
                "time_s": round(p.seconds, 4),
            }
            for p in result.phases
        ],
        "memory_budget": budget,
        "solver_budget": rounds[-1]["budget"],
        "solves": len(rounds),
        "predicted": _predicted(problem, result.x),
        "graph": {
            "nodes": len(graph.nodes),
            "ops": len(graph.ops),
            "groups": len(space.sizes),
            "free_groups": space.num_free_groups,
            "followers": len(space.followed),
            "repeat": None
            if repeat is None
            else {"start": repeat.start, "period": repeat.period, "count": repeat.count},
            "variables": problem.num_vars,
            "binary_variables": int(sum(n for n in space.sizes if n > 1)),
            "edge_blocks": len(problem.blocks),
            "memory_rows": len(problem.rows),
            "planned_reshards": problem.model.planned,
        },
        "time_s": {k: round(v, 4) for k, v in times.items()},
    }
    if measured is not None:
        out["measured"] = {
            "comm_bytes": measured["comm_bytes"],
            "ring_bytes": measured["ring_bytes"],
            "peak_memory_bytes_per_device": measured["peak"],
        }
        out["fits_budget"] = budget is None or measured["peak"] <= budget
    return out
