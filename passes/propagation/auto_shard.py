"""`auto-shard`: choose the shardings nobody wrote, within a per-device memory budget.

    shardc opt model.mlir -p 'auto-shard{memory-budget=1048576}'
    shardc compile model.mlir --auto-shard --memory-budget 1048576

An integer program over per-op strategies (Alpa's intra-operator pass): every op of the entry
function picks one way to compute locally (which factors each mesh axis splits), every argument
one layout; each edge pays the planner's cost of resharding what the producer makes into what
the consumer needs; each point of the program holds no more than the budget. HiGHS (highspy)
solves it within a budget of work (`effort`), never returning a plan worse than one it started
from, the same plan in every process and under any load (solve.py). User shardings are
constraints. The choice is written as ordinary closed shardings (plus `sharding_constraint`s
where a consumer needs another layout), so the default pipeline after it is unchanged.

The parts are in `shardc.passes.propagation.autoshard`: inline (calls), candidates, graph, repeats
and simplify (fewer choices), costs, formulation (and merge: one edge block per pair of groups),
solve, apply. The formulation and its decisions:
docs/autoshard.md.

With `verify=true` (the default) the plan is compiled with the default pipeline's passes and
measured; if its real peak memory exceeds the budget (reshard buffers the model approximates),
the budget the solver sees is lowered by the excess and the program solved again, up to
`rounds` times. The figures go to `ctx.data["auto_shard"]` (the report's `auto_shard` key).
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError
from shardc.passes.manager import Pass, PassContext, PassManager, parse_pipeline, register_pass
from shardc.passes.propagation.autoshard.apply import write_choice
from shardc.passes.propagation.autoshard.costs import OBJECTIVES, CostModel
from shardc.passes.propagation.autoshard.formulation import Problem, formulate
from shardc.passes.propagation.autoshard.graph import build_graph, single_mesh
from shardc.passes.propagation.autoshard.inline import inline_calls
from shardc.passes.propagation.autoshard.plans import evaluate, plan_vector
from shardc.passes.propagation.autoshard.simplify import FOLLOW, simplify

if TYPE_CHECKING:
    from shardc.passes.propagation.autoshard.solve import Effort, SolveResult

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
    effort: int = 4000  # solver work per MIP solve, in ticks (deterministic; solve.py)
    # a budgeted solve stops at a plan proven within this relative gap of its bound (0: optimal)
    gap: float = 0.01
    time_limit: float = 0.0  # seconds per solve, a safety net only (0: none; not reproducible)
    follow: str = "none"  # element-wise ops follow: none | chains (of element-wise ops) | all
    repeats: bool = True  # repeated layers share their choices
    tie_rounds: int = 3  # nodes alike after this many rounds of colour refinement share choices
    tie_above: int = 1000  # ... in programs of more nodes than this (small ones need no tying)
    tie_break: bool = True  # of plans moving as much, take the one with the lowest peak
    verify: bool = True  # measure the plan; tighten the budget if it does not fit
    rounds: int = 3  # solves at most, with verify and a budget
    inline: bool = True  # inline calls first, so the ops inside them are chosen for too
    # Arguments whose buffers the step may reuse after their last read: all | none | the
    # argument indices, quoted ('0,3,5'); the others live to the end of the step
    donate: str = "all"
    # Axis pairs restricting the space on meshes of 3+ axes: 'outer:inner', the outer axis only
    # joins its inner one (or stays unused); 'outer+inner', always (one axis). auto: the first
    # axis with the second (':') on such meshes; none
    couple: str = "auto"
    # none | auto: result i is the state argument i carries to the next step (same type, no
    # declared sharding) and comes back in that argument's layout
    carry: str = "none"
    # price a value's reshard to one layout once however many consumers read it (exact, as the
    # program shares it; a larger, slower LP: docs/autoshard.md)
    share: bool = False

    def __post_init__(self) -> None:
        if self.follow not in FOLLOW:
            raise PassError(
                f"auto-shard: follow must be one of {', '.join(FOLLOW)} (got {self.follow!r})"
            )
        if self.carry not in ("none", "auto"):
            raise PassError(f"auto-shard: carry must be none or auto (got {self.carry!r})")
        if self.objective not in OBJECTIVES:
            raise PassError(
                f"auto-shard: objective must be one of {', '.join(OBJECTIVES)} "
                f"(got {self.objective!r})"
            )
        if (self.memory_budget < 0 or self.time_limit < 0 or self.rounds < 1 or self.effort < 1
                or self.tie_rounds < 0 or self.tie_above < 0 or not 0 <= self.gap < 1):
            raise PassError(
                "auto-shard: memory-budget must be >= 0, effort >= 1, time-limit >= 0, "
                "tie-rounds >= 0, tie-above >= 0, rounds >= 1 and 0 <= gap < 1"
            )

    def solver_effort(self) -> Effort:
        from shardc.passes.propagation.autoshard.solve import ITERATIONS_PER_TICK, Effort

        return Effort(ticks=self.effort, gap=self.gap, tie_break=self.tie_break,
                      branch_iterations=self.effort * ITERATIONS_PER_TICK,
                      time_limit=self.time_limit or None)

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.ingest.remove_size_one_axes import remove_size_one_axes
        from shardc.passes.ingest.split_constants import split_function

        times: dict[str, float] = {}
        start = time.process_time()
        mesh = single_mesh(module)
        func = module.main
        remove_size_one_axes(module)
        if self.inline:
            inline_calls(module, func)
        split_function(func)
        kept = _kept(self.donate, len(func.args), func.loc)
        coupled = _coupling(self.couple, mesh, func.loc)
        graph = build_graph(module, func, mesh, coupled)
        if self.carry == "auto":
            graph.carry_pairs()
        rounds = self.tie_rounds if len(graph.nodes) > self.tie_above else 0
        space = simplify(graph, follow=self.follow, repeats=self.repeats, tie_rounds=rounds)
        times["graph"] = time.process_time() - start
        start = time.process_time()
        model = CostModel(self.objective)
        problem = formulate(graph, space, model, kept, self.share)
        times["formulate"] = time.process_time() - start
        budget = self.memory_budget or None
        rounds = self._solve(module, graph, problem, budget, times, func.loc, kept)
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
        _warn_unproven(result, self, ctx, func.loc)
        sources = write_choice(module, graph, chosen)
        ctx.data["auto_shard_axes"] = sources
        ctx.data["auto_shard"] = _summary(problem, result, rounds, budget, measured, times, self)

    def _solve(self, module: Module, graph, problem: Problem, budget: int | None,
               times: dict[str, float], loc, kept: frozenset[int]) -> list[dict[str, Any]]:
        """Solve; with `verify` and a budget, while the measured peak is over the budget, solve
        again with the solver's budget lowered by the excess (at most `rounds` solves), starting
        from the plans of the earlier rounds. A lowered budget no plan meets ends the rounds with
        the last plan found."""
        # highspy (and scipy) load only when a program is auto-sharded
        from shardc.passes.propagation.autoshard.solve import solve

        space = problem.space
        target = budget
        rounds: list[dict[str, Any]] = []
        known: list[list[int]] = []
        while True:
            start = time.process_time()
            result = solve(problem, target, self.solver_effort(), known)
            times["solve"] = times.get("solve", 0.0) + time.process_time() - start
            if rounds and not result.choices:
                break
            _check(result, budget, loc)
            known.append(result.choices)
            chosen = [n.strategies[result.choices[space.group_of[n.index]]] for n in graph.nodes]
            measured = None
            if self.verify:
                start = time.process_time()
                measured = _measure(module, graph, chosen, kept)
                times["verify"] = times.get("verify", 0.0) + time.process_time() - start
            rounds.append({"budget": target, "measured": measured, "result": result,
                           "chosen": chosen})
            over = 0 if budget is None or measured is None else measured["peak"] - budget
            if over <= 0 or len(rounds) >= self.rounds:
                break
            target = (target or 0) - over
        return rounds


def _warn_unproven(result: SolveResult, options: AutoShard, ctx: PassContext, loc) -> None:
    """The user hears when the plan kept is not proven within 1% of the best in the budget."""
    gap = result.gap
    if gap is not None and gap <= 0.01:
        return
    bound = "no bound" if result.bound is None else f"a lower bound of {result.bound:.0f}"
    shown = "unknown" if gap is None else f"{100 * gap:.1f}%"
    ctx.warn(
        f"auto-shard: the plan moves {result.objective:.0f} bytes per device and is not proven "
        f"within 1% of the best plan in the budget ({bound}, gap {shown}, status "
        f"{result.status}); raise effort (now {options.effort}) for a better plan or a proof",
        loc,
    )


def _check(result: SolveResult, budget: int | None, loc) -> None:
    if result.choices:
        return
    if result.status == "infeasible":
        least = "" if result.min_peak is None else (
            f"; the smallest peak the cost model allows is {int(-(-result.min_peak // 1))} bytes"
        )
        raise PassError(
            f"no plan fits memory-budget={budget} bytes per device{least}; raise the budget "
            "or use a larger mesh",
            loc,
        )
    raise PassError(
        f"the solver found no plan within its effort (status {result.status}); raise effort",
        loc,
    )


def _coupling(couple: str, mesh, loc) -> tuple[tuple[str, str, bool], ...]:
    """The axis pairs of `couple` (see the option)."""
    from shardc.passes.propagation.autoshard.candidates import mesh_axes

    names = [a.name for a in mesh_axes(mesh)]
    text = couple.strip()
    if text == "none":
        return ()
    if text == "auto":
        return ((names[0], names[1], False),) if len(names) >= 3 else ()
    pairs = []
    for item in text.split(","):
        fused = "+" in item
        outer, _, inner = item.partition("+" if fused else ":")
        outer, inner = outer.strip(), inner.strip()
        if outer not in names or inner not in names or outer == inner:
            raise PassError(
                f"auto-shard: couple must be auto, none or pairs 'outer:inner' (outer only with "
                f"inner) or 'outer+inner' (always together) of mesh axes ({', '.join(names)}) "
                f"(got {couple!r})",
                loc,
            )
        pairs.append((outer, inner, fused))
    return tuple(pairs)


def _kept(donate: str, num_args: int, loc) -> frozenset[int]:
    """The arguments that live to the end of the step (not donated)."""
    text = donate.strip()
    if text == "all":
        return frozenset()
    if text == "none":
        return frozenset(range(num_args))
    try:
        donated = {int(t) for t in text.split(",") if t.strip()}
    except ValueError:
        donated = {-1}
    bad = sorted(i for i in donated if not 0 <= i < num_args)
    if bad:
        raise PassError(
            f"auto-shard: donate must be all, none or argument indices below {num_args} "
            f"(got {donate!r})",
            loc,
        )
    return frozenset(range(num_args)) - donated


def _measure(module: Module, graph, chosen, kept: frozenset[int] = frozenset()
             ) -> dict[str, int]:
    """Compile a copy of `module` with `chosen` written in; the report's figures (the peak
    with the arguments in `kept` live to the end)."""
    from shardc.passes.analysis.cost import collective_report, peak_memory

    copy = module.clone()
    write_choice(copy, graph, chosen)
    PassManager(parse_pipeline(MEASURE_PIPELINE), verify_each=False).run(copy, PassContext())
    report = collective_report(copy)
    peak = report["peak_memory_bytes_per_device"]
    if kept:
        peak = peak_memory(copy, copy.main, kept=kept)
    return {
        "comm_bytes": report["total_comm_bytes"],
        "ring_bytes": report["total_ring_bytes"],
        "peak": peak,
    }


def _predicted(problem: Problem, choices: list[int]) -> dict[str, int]:
    v = plan_vector(problem, choices)
    return {
        "comm_bytes": int(round(problem.const_comm + problem.comm @ v)),
        "ring_bytes": int(round(problem.const_ring + problem.ring @ v)),
        "peak_memory_bytes_per_device": int(round(problem.peak(v))),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


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
    space, graph = problem.space, problem.graph
    repeat = space.repeat
    free_cost, free_peak = (None, None)
    if result.free_objective is not None:
        free_cost, free_peak = result.free_objective, result.free_peak
    phases = [p for r in rounds for p in r["result"].phases]
    work: dict[str, int] = {}
    for p in phases:
        for k, v in p.work.items():
            work[k] = work.get(k, 0) + v
    cost, _ = evaluate(problem, result.choices)
    out: dict[str, Any] = {
        "status": result.status,
        "objective": options.objective,
        "objective_value": _round(cost),
        "dual_bound": _round(result.bound),
        "gap": _round(result.gap),
        "source": result.source,
        "free_optimum": {"objective_value": _round(free_cost), "peak": _round(free_peak)},
        "effort": options.effort,
        "work": work,
        "solve_time_s": round(sum(r["result"].cpu_s for r in rounds), 4),
        "phases": [
            {
                "name": p.name,
                "status": p.status,
                "objective": _round(p.objective),
                "dual_bound": _round(p.bound),
                "gap": _round(p.gap),
                "time_s": round(p.cpu_s, 4),
                "work": p.work,
                "variables": p.variables,
                "rows": p.rows,
            }
            for p in phases
        ],
        "memory_budget": budget,
        "solver_budget": rounds[-1]["budget"],
        "solves": len(rounds),
        "predicted": _predicted(problem, result.choices),
        "graph": {
            "nodes": len(graph.nodes),
            "ops": len(graph.ops),
            "groups": len(space.sizes),
            "free_groups": space.num_free_groups,
            "followers": len(space.followed),
            "tied": sum(1 for i, r in enumerate(space.representative) if r != i),
            "carried": len(graph.carries),
            "coupled": [f"{a}{'+' if f else ':'}{b}" for a, b, f in graph.coupled],
            "repeat": None
            if repeat is None
            else {"start": repeat.start, "period": repeat.period, "count": repeat.count},
            "variables": problem.num_vars,
            "binary_variables": int(sum(n for n in space.sizes if n > 1)),
            "edge_blocks": len(problem.blocks),
            "memory_rows": len(problem.rows),
            "memory_terms": len(problem.terms),
            "planned_reshards": problem.model.planned,
        },
        "time_s": {k: round(v, 4) for k, v in times.items()},
        # the process's high-water mark of resident memory when the pass ends (Linux: KiB)
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    if measured is not None:
        out["measured"] = {
            "comm_bytes": measured["comm_bytes"],
            "ring_bytes": measured["ring_bytes"],
            "peak_memory_bytes_per_device": measured["peak"],
        }
        out["fits_budget"] = budget is None or measured["peak"] <= budget
    return out
