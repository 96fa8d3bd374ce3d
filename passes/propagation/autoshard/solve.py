"""Solving the integer program: never worse than a plan at hand, deterministic, limited by work.

    result = solve(problem, budget=1 << 20, effort=Effort(ticks=2000))
    result.choices[g]     # the choice of group g
    result.status         # optimal | work_limit (best plan so far) | infeasible | ...
    result.objective, result.bound, result.gap

The order of the solves:

1. **free LP**: the communication LP without memory rows. When its optimum is integral (it was
   on every program tried: the edge cells make it a transportation polytope on trees) it is the
   proven free optimum `F`; else a free MIP from the greedy plans finds one within the effort.
   `F` bounds the objective from below under any budget. Its reduced costs fix to 0 every
   variable whose reduced cost exceeds the slack a later solve allows (`objective <= L` leaves
   room for `L - F`): exact, and it shrinks the later solves to what could still be chosen.
2. **memory tie-break** (`tie_break`): of the plans moving no more than the free plan, the one
   with the lowest peak, starting from the free plan.
3. With no budget, or a budget the free plan meets: that plan, proven optimal. A budget the free
   optimum meets therefore always returns it (more budget never gives a worse plan).
4. Otherwise, from the best plan at hand that fits (the greedy plans of plans.py, the plans
   the caller knows), the **neighbourhood step** (neighbourhood.py): the budgeted LP's bound
   `L` (its LP started from the free LP's basis), then a small MIP over the groups where that
   plan and the LP disagree. A plan proven within `Effort.gap` (default 1%) of the bound is
   the answer; else the **branch step** (branch.py: branching on the groups the LP blends,
   each child LP warm from its parent's basis, `Effort.branch_iterations` in all); still
   unproven, the **budgeted MIP** runs from the best plan so far. Then the memory tie-break
   among plans moving no more (within the branch node a plan from the branch step is the LP
   optimum of, or the neighbourhood a sub-MIP found its plan in). The plan kept is the best
   found, never worse than the start. Its bound is the largest of HiGHS's, the branch step's,
   `L` and `F`.

Every solve is limited by work (`Effort`): MIPs by ticks, LPs by simplex iterations, with one
thread and a fixed seed, so the same program gives the same plan in every process and under any
load. `Effort.time_limit` is only a safety net: a solve it stops makes the result `time_limit`
(not reproducible).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardc.passes.propagation.autoshard.branch import branch
from shardc.passes.propagation.autoshard.highs import LPSession, Outcome, solve_mip
from shardc.passes.propagation.autoshard.neighbourhood import neighbourhood
from shardc.passes.propagation.autoshard.plans import (
    allowed,
    choices_of,
    evaluate,
    greedy_plans,
    plan_vector,
)
from shardc.passes.propagation.autoshard.program import ProgramBuilder

# The memory tie-break stops within 1% of the lowest peak: it only orders equally cheap plans.
TIE_BREAK_GAP = 0.01
# The free MIP (a fractional free LP) is solved to optimality: the free optimum is the answer
# under every budget it meets, and `Effort.gap` is for the budgeted solve.
FREE_GAP = 1e-6
# Integrality tolerance of the LP relaxation's binaries.
_INTEGRAL = 1e-6
# The branch step's simplex iterations per tick of effort (auto_shard.py): 60,000 at the default
# effort, 14 times what the NNX LM's proof takes (docs/autoshard.md).
ITERATIONS_PER_TICK = 15
# Relative: a gap proven to equal `Effort.gap` up to rounding is within it.
_GAP_TOLERANCE = 1e-6
# Bytes of slack in "moves no more than": objectives are whole bytes.
_SLACK = 0.5


@dataclass(frozen=True)
class Effort:
    """How much work the solver may do (deterministic units, not seconds)."""

    ticks: int = 4000  # per MIP solve: HiGHS interrupt checks (highs.py)
    lp_iterations: int = 2_000_000  # per LP solve: simplex iterations
    gap: float = 0.01  # a budgeted solve stops at a plan proven within this relative gap
    tie_break: bool = True
    neighbourhood: bool = True  # try the fix-and-solve step before the full budgeted MIP
    branch: bool = True  # then the branch step (branch.py) before the full budgeted MIP
    # simplex iterations for all of the branch step's LPs; the pass gives it
    # ITERATIONS_PER_TICK per tick of its effort, so one number bounds both
    branch_iterations: int = 60_000
    time_limit: float | None = None  # seconds per solve: a safety net only (not reproducible)


@dataclass
class Phase:
    name: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    cpu_s: float
    work: dict[str, int] = field(default_factory=dict)
    variables: int = 0
    rows: int = 0


@dataclass
class SolveResult:
    status: str  # of the plan kept: optimal | work_limit | time_limit | infeasible | ...
    choices: list[int]
    x: np.ndarray | None
    phases: list[Phase] = field(default_factory=list)
    objective: float | None = None  # the kept plan's objective
    bound: float | None = None  # a proven lower bound on any plan's objective in the budget
    peak: float | None = None  # the kept plan's peak (the cost model's)
    source: str = ""  # where the kept plan comes from: free | budgeted | greedy | known
    free_objective: float | None = None  # the free optimum (or best free plan) objective
    free_peak: float | None = None
    min_peak: float | None = None  # when infeasible: the smallest peak the model allows
    fixed: int = 0  # variables fixed by reduced costs in the last solve

    @property
    def cpu_s(self) -> float:
        return sum(p.cpu_s for p in self.phases)

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return _gap(self.objective, [self.bound])


def _phase(name: str, out: Outcome, builder: ProgramBuilder, lp, *, peak: bool) -> Phase:
    unscale = builder.unscale_peak if peak else builder.unscale_objective
    return Phase(
        name, out.status,
        None if out.objective is None else unscale(out.objective),
        None if out.bound is None else unscale(out.bound),
        out.gap, out.cpu_s, out.work, lp.shape[1], lp.shape[0],
    )


class _Solver:
    def __init__(self, problem, effort: Effort) -> None:
        self.problem, self.effort = problem, effort
        self.builder = ProgramBuilder(problem)
        self.phases: list[Phase] = []
        self.reduced: np.ndarray | None = None  # free LP's reduced costs (scaled)
        self.lp_bound: float | None = None  # free LP optimum (bytes)
        self.mip_bound: float | None = None  # free MIP's proven bound (when the LP is fractional)
        self.free_plan: list[int] = []
        # the budgeted LP's (budget, optimum in bytes, reduced costs) (neighbourhood.py)
        self.budget_fixing: tuple[float, float, np.ndarray] | None = None
        self.fixed = 0
        self.free_basis = None  # the free LP's optimal basis (HighsBasis)
        self.session: LPSession | None = None  # the budgeted LP, kept warm (neighbourhood.py)
        # the branch node the budgeted plan is the LP optimum of (branch.py's BranchStep.node)
        self.node: tuple[np.ndarray, float, np.ndarray] | None = None
        # the last plan a sub-MIP found (neighbourhood.py, dive.py) and the variables it held
        self.around: tuple[list[int], np.ndarray] | None = None

    def record(self, name: str, out: Outcome, lp, *, peak: bool = False) -> None:
        self.phases.append(_phase(name, out, self.builder, lp, peak=peak))

    def fixing(self, limit: float, budget: float | None = None) -> np.ndarray | None:
        """Variables no plan with objective <= `limit` can take (reduced-cost fixing): by the
        free LP's reduced costs, and within `budget` also by the budgeted LP's."""
        lps = [] if self.reduced is None or self.lp_bound is None else [
            (self.lp_bound, self.reduced)]
        if self.budget_fixing is not None and budget == self.budget_fixing[0]:
            lps.append(self.budget_fixing[1:])
        if not lps:
            return None
        b = self.builder
        fixed = np.zeros(b.n, dtype=bool)
        for bound, reduced in lps:
            room = (limit - bound) * b.obj_scale
            margin = 1e-6 * max(1.0, abs(bound) * b.obj_scale)
            fixed |= reduced[: b.n] > room + margin
        self.fixed = int(fixed.sum())
        return fixed

    def free(self) -> tuple[list[int], bool]:
        """The free plan and whether it is proven optimal."""
        b, e = self.builder, self.effort
        lp = b.build()
        session = LPSession(lp)
        out = session.solve(iterations=e.lp_iterations, time_limit=e.time_limit)
        self.phases.append(_phase("free-lp", out, b, lp, peak=False))
        if out.x is not None:
            self.free_basis = session.basis()
            self.lp_bound = b.unscale_objective(out.objective)
            self.reduced = out.reduced_costs
            ints = lp.integer
            frac = np.minimum(out.x[ints], 1 - out.x[ints])
            if not len(frac) or float(frac.max()) <= _INTEGRAL:
                choices = choices_of(self.problem, out.x)
                if allowed(self.problem, plan_vector(self.problem, choices)):
                    return choices, True
        start = min(greedy_plans(self.problem), key=lambda c: evaluate(self.problem, c)[0])
        mip = solve_mip(lp, ticks=e.ticks, gap=min(e.gap, FREE_GAP),
                        start=plan_vector(self.problem, start),
                        time_limit=e.time_limit)
        phase = _phase("free-mip", mip, b, lp, peak=False)
        self.phases.append(phase)
        self.mip_bound = phase.bound
        if mip.x is None:
            return start, False
        choices = choices_of(self.problem, mip.x)
        if evaluate(self.problem, choices)[0] > evaluate(self.problem, start)[0]:
            return start, False
        return choices, mip.status == "optimal"

    def tie_break(self, choices: list[int], budget: float | None, name: str) -> list[int]:
        """Of the plans moving no more than `choices` (within `budget`), the lowest peak."""
        p, b, e = self.problem, self.builder, self.effort
        if not e.tie_break or not p.rows:
            return choices
        cost, peak = evaluate(p, choices)
        limit = cost + _SLACK
        fixed = self.fixing(limit, budget)
        if budget is not None and self.node is not None:
            # among the plans of the branch node `choices` is the LP optimum of: its reduced
            # costs leave only the alternatives moving as few bytes (a small MIP, where the
            # whole budgeted one took a minute on the NNX LM)
            held, bound, reduced = self.node
            room = (limit - bound) * b.obj_scale
            node = reduced > room + 1e-6 * max(1.0, abs(bound) * b.obj_scale)
            node[held] = True
            fixed = node if fixed is None else fixed | node
        elif budget is not None and self.around is not None and self.around[0] is choices:
            # a plan a sub-MIP found: among the plans of its neighbourhood, the sub-MIP's own
            # space (on the NNX LM at its Megatron budget the whole budgeted MIP took 335 s CPU
            # in root cuts and heuristics for a 1.5% lower peak)
            held = self.around[1]
            fixed = held if fixed is None else fixed | held
        lp = b.build(budget=budget, peak=True, limit=limit, fixed=fixed)
        start = b.start(plan_vector(p, choices), memory=True, peak=True)
        out = solve_mip(lp, ticks=e.ticks, gap=TIE_BREAK_GAP, start=start,
                        time_limit=e.time_limit)
        self.phases.append(_phase(name, out, b, lp, peak=True))
        if out.x is None:
            return choices
        found = choices_of(p, out.x[: b.n])
        new_cost, new_peak = evaluate(p, found)
        fits = budget is None or new_peak <= budget
        if fits and new_cost <= limit and new_peak < peak:
            return found
        return choices

    def budgeted(self, budget: float, known: list[tuple[str, list[int]]]
                 ) -> tuple[list[int] | None, str, Phase]:
        """The budgeted MIP from the best fitting plan of `known` (named plans); the plan kept,
        where it comes from, and the MIP's phase."""
        p, b, e = self.problem, self.builder, self.effort
        source, incumbent = best_fitting(p, budget, known)
        limit = evaluate(p, incumbent)[0] if incumbent is not None else None
        fixed = self.fixing(limit, budget) if limit is not None else None
        lp = b.build(budget=budget, fixed=fixed)
        start = None if incumbent is None else b.start(plan_vector(p, incumbent), memory=True,
                                                       peak=False)
        out = solve_mip(lp, ticks=e.ticks, gap=e.gap, start=start, time_limit=e.time_limit)
        phase = _phase("budgeted", out, b, lp, peak=False)
        self.phases.append(phase)
        if out.x is not None:
            found = choices_of(p, out.x[: b.n])
            cost, peak = evaluate(p, found)
            if peak <= budget and np.isfinite(cost) and (limit is None or cost < limit):
                return found, "budgeted", phase
        return incumbent, source, phase

    def min_peak(self) -> float | None:
        """The smallest peak the cost model allows (for the message when nothing fits)."""
        p, b, e = self.problem, self.builder, self.effort
        lp = b.build(peak=True)
        start = min(greedy_plans(p), key=lambda c: evaluate(p, c)[1])
        out = solve_mip(lp, ticks=e.ticks, gap=1e-3,
                        start=b.start(plan_vector(p, start), memory=True, peak=True),
                        time_limit=e.time_limit)
        self.phases.append(_phase("min-peak", out, b, lp, peak=True))
        if out.bound is not None and out.status == "optimal":
            return b.unscale_peak(out.objective)
        return evaluate(p, start)[1] if out.x is None else b.unscale_peak(out.objective)


def solve(problem, budget: float | None, effort: Effort | None = None,
          known: list[list[int]] | None = None) -> SolveResult:
    """The plan (module docstring). `known`: plans to start from (one choice per group)."""
    effort = effort or Effort()
    if problem.num_vars == 0:  # nothing to decide, but the budget still holds
        choices = [0] * len(problem.space.sizes)
        cost, peak = evaluate(problem, choices)
        if budget is not None and peak > budget:
            return SolveResult("infeasible", [], None, [], min_peak=peak)
        return SolveResult("optimal", choices, np.zeros(0), [], cost, cost, peak, "free", cost,
                           peak)
    s = _Solver(problem, effort)
    free, proven = s.free()
    free = s.tie_break(free, None, "tie-break")
    s.free_plan = free
    free_cost, free_peak = evaluate(problem, free)
    # F, the bound under any budget: the free LP's optimum, or the free MIP's bound when the LP
    # is fractional (a carried state closes a cycle: tighter than the LP's)
    free_bounds = [b for b in (s.lp_bound, s.mip_bound) if b is not None]
    bound = max(free_bounds) if free_bounds else None
    result = SolveResult(
        "optimal" if proven else "work_limit", free, plan_vector(problem, free), s.phases,
        free_cost, bound, free_peak, "free", free_cost, free_peak,
    )
    if budget is None or free_peak <= budget:
        result.fixed = s.fixed
        return _final(result, effort)
    candidates = [("greedy", c) for c in greedy_plans(problem)]
    candidates += [("known", c) for c in known or []]
    found, source, bounds = _neighbourhood(s, budget, candidates, free_bounds)
    phase = None
    if found is None or not _within(evaluate(problem, found)[0], bounds, effort.gap):
        if found is not None:
            candidates.append((source, found))
        found, source, phase = s.budgeted(budget, candidates)
        bounds += [] if phase.bound is None else [phase.bound]
    if found is None:
        status = "no_plan" if phase is None else phase.status
        result.status = "infeasible" if status == "infeasible" else "no_plan"
        result.choices, result.x = [], None
        if status == "infeasible":
            result.min_peak = s.min_peak()
        return result
    found = s.tie_break(found, budget, "budgeted-tie-break")
    cost, peak = evaluate(problem, found)
    result.choices, result.x = found, plan_vector(problem, found)
    result.objective, result.peak = cost, peak
    result.source = source
    result.bound = max(bounds) if bounds else None
    gap = result.gap
    result.status = "optimal" if gap is not None and gap <= max(effort.gap, 1e-9) * (
        1 + _GAP_TOLERANCE) else "work_limit"
    result.fixed = s.fixed
    return _final(result, effort)


def best_fitting(problem, budget: float, known: list[tuple[str, list[int]]]
                 ) -> tuple[str, list[int] | None]:
    """The cheapest of the named plans `known` that fits the budget (the first of equals)."""
    fitting = [(evaluate(problem, c), name, c) for name, c in known]
    fitting = [(cost, name, c) for (cost, peak), name, c in fitting
               if peak <= budget and np.isfinite(cost)]
    best = min(fitting, key=lambda t: t[0]) if fitting else None
    return ("", None) if best is None else (best[1], best[2])


def _neighbourhood(s: _Solver, budget: float, known: list[tuple[str, list[int]]],
                   free_bounds: list[float]) -> tuple[list[int] | None, str, list[float]]:
    """The best plan at hand after the fix-and-solve step (neighbourhood.py) and, when that is
    not proven within the gap, the branch step (branch.py); where it comes from, and the bounds
    known (the free ones, the budgeted LP's, the branch step's)."""
    source, best = best_fitting(s.problem, budget, known)
    if not s.effort.neighbourhood:
        return best, source, list(free_bounds)
    step = neighbourhood(s, budget, best)
    bounds = list(free_bounds) + ([] if step.bound is None else [step.bound])
    if step.choices is not None:
        best, source = step.choices, "neighbourhood"
    proven = best is not None and _within(evaluate(s.problem, best)[0], bounds, s.effort.gap)
    if s.effort.branch and step.root is not None and not proven:
        tree = branch(s, budget, best, step.root)
        bounds += [] if tree.bound is None else [tree.bound]
        if tree.choices is not None and tree.choices is not best:
            best, source = tree.choices, "branch"
            s.node = tree.node
    return best, source, bounds


def _within(objective: float, bounds: list[float], gap: float) -> bool:
    """Proven within `gap` (a proof of exactly `gap`, rounded, counts)."""
    return _gap(objective, bounds) <= gap * (1 + _GAP_TOLERANCE)


def _gap(objective: float, bounds: list[float]) -> float:
    if not bounds:
        return float("inf")
    if objective <= 0:
        return 0.0
    return max(0.0, (objective - max(bounds)) / objective)


def _final(result: SolveResult, effort: Effort) -> SolveResult:
    if any(p.status == "time_limit" for p in result.phases):
        result.status = "time_limit"
    return result
