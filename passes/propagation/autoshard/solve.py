"""Solving the integer program with scipy's `milp` (HiGHS), within a time limit.

    result = solve(problem, budget=1 << 20, time_limit=30.0)
    result.choices[g]        # the choice of group g
    result.status            # "optimal", "time_limit" (best plan so far), "infeasible", ...

Two phases, lexicographic:

1. **communication**: minimise the objective (bytes or ring bytes) under the memory budget;
2. **memory** (`tie_break`): among plans that move no more than phase 1's, minimise the peak of
   the memory rows, so that of two plans with the same traffic the one holding less wins (with
   no budget this is what makes "shard it" beat "replicate it").

Phase 2 gets the time phase 1 left; if it runs out it keeps its best plan so far, which never
moves more than phase 1's. A budget no plan fits is reported with the smallest peak the model
allows (a third solve: minimise the peak alone).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from shardc.passes.propagation.autoshard.formulation import Problem

# Phase 2 stops within 1% of the lowest peak: it only breaks ties between equally cheap plans.
TIE_BREAK_GAP = 0.01
_STATUS = {0: "optimal", 1: "time_limit", 2: "infeasible", 3: "unbounded", 4: "error"}


@dataclass
class Phase:
    name: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float


@dataclass
class SolveResult:
    status: str  # the status of the plan kept: optimal | time_limit | infeasible | ...
    choices: list[int]
    x: np.ndarray | None
    phases: list[Phase] = field(default_factory=list)
    min_peak: float | None = None  # when infeasible: the smallest peak the model allows

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)


class _Rows:
    """Sparse constraint rows collected as triplets."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lb: list[float] = []
        self.ub: list[float] = []

    def add(self, cols, vals, lb: float, ub: float) -> None:
        i = len(self.lb)
        cols = np.asarray(cols, dtype=np.int64)
        self.r.append(np.full(len(cols), i, dtype=np.int64))
        self.c.append(cols)
        self.v.append(np.asarray(vals, dtype=float))
        self.lb.append(lb)
        self.ub.append(ub)

    def constraint(self, n: int) -> LinearConstraint:
        if not self.lb:
            return LinearConstraint(np.zeros((0, n)), [], [])
        rows = np.concatenate(self.r)
        cols = np.concatenate(self.c)
        vals = np.concatenate(self.v)
        a = coo_matrix((vals, (rows, cols)), shape=(len(self.lb), n)).tocsr()
        return LinearConstraint(a, np.array(self.lb), np.array(self.ub))


def _structure(problem: Problem) -> _Rows:
    """One choice per group; each edge block's marginals equal its groups' choices."""
    rows = _Rows(problem.num_vars)
    for g, size in enumerate(problem.space.sizes):
        if size > 1:
            base = problem.x_offset[g]
            rows.add(range(base, base + size), np.ones(size), 1.0, 1.0)
    for block in problem.blocks:
        width = len(block.cols)
        for r, choices in enumerate(block.rows):
            cells = [block.offset + r * width + c for c in range(width)]
            xs = [problem.var(block.src_group, a) for a in choices]
            rows.add(cells + xs, [1.0] * width + [-1.0] * len(xs), 0.0, 0.0)
        for c, choices in enumerate(block.cols):
            cells = [block.offset + r * width + c for r in range(len(block.rows))]
            xs = [problem.var(block.dst_group, b) for b in choices]
            rows.add(cells + xs, [1.0] * len(cells) + [-1.0] * len(xs), 0.0, 0.0)
    return rows


def _run(
    name: str, c: np.ndarray, integrality, bounds, rows: _Rows, n: int, time_limit: float,
    gap: float, *, presolve: bool = True,
) -> tuple[Phase, np.ndarray | None]:
    start = time.perf_counter()
    options = {
        "time_limit": max(time_limit, 0.5),
        "mip_rel_gap": gap,
        "disp": False,
        "presolve": presolve,
    }
    res = milp(c, integrality=integrality, bounds=bounds, constraints=rows.constraint(n),
               options=options)
    seconds = time.perf_counter() - start
    status = _STATUS.get(res.status, "error")
    x = res.x if res.x is not None else None
    if status == "time_limit" and x is None:
        status = "time_limit_no_plan"
    phase = Phase(
        name,
        status,
        float(res.fun) if x is not None and res.fun is not None else None,
        float(res.mip_dual_bound) if getattr(res, "mip_dual_bound", None) is not None else None,
        float(res.mip_gap) if getattr(res, "mip_gap", None) is not None else None,
        seconds,
    )
    return phase, x


def _choices(problem: Problem, x: np.ndarray) -> list[int]:
    out = []
    for g, size in enumerate(problem.space.sizes):
        if size == 1:
            out.append(0)
        else:
            base = problem.x_offset[g]
            out.append(int(np.argmax(x[base : base + size])))
    return out


def _bounds_and_integrality(problem: Problem, extra: int) -> tuple[Bounds, np.ndarray]:
    n = problem.num_vars + extra
    upper = np.ones(n)
    upper[: problem.num_vars][problem.forbidden] = 0.0
    if extra:
        upper[problem.num_vars :] = np.inf
    integrality = np.zeros(n)
    for g, size in enumerate(problem.space.sizes):
        if size > 1:
            integrality[problem.x_offset[g] : problem.x_offset[g] + size] = 1
    return Bounds(np.zeros(n), upper), integrality


def solve(
    problem: Problem,
    budget: int | None,
    time_limit: float = 60.0,
    *,
    tie_break: bool = True,
    gap: float = 1e-6,
) -> SolveResult:
    """Phase 1 then (with `tie_break`) phase 2; see the module docstring."""
    n = problem.num_vars
    if n == 0:  # every group has one choice: nothing to decide, but the budget still holds
        peak = max((const for _, _, const in problem.rows), default=0.0)
        if budget is not None and peak > budget:
            infeasible = Phase("communication", "infeasible", None, None, None, 0.0)
            return SolveResult("infeasible", [], None, [infeasible], min_peak=peak)
        trivial = Phase("communication", "optimal", float(problem.const_comm), None, 0.0, 0.0)
        return SolveResult("optimal", [0] * len(problem.space.sizes), np.zeros(0), [trivial])
    started = time.perf_counter()
    base = _structure(problem)
    bounds, integrality = _bounds_and_integrality(problem, 0)
    rows = _with_memory(problem, base, budget, n)
    phase, x = _run("communication", problem.objective, integrality, bounds, rows, n,
                    time_limit, gap)
    result = SolveResult(phase.status, [], x, [phase])
    if x is None:
        if phase.status == "infeasible" and budget is not None:
            result.min_peak = _min_peak(problem, base, time_limit)
        return result
    result.choices = _choices(problem, x)
    left = time_limit - (time.perf_counter() - started)
    if not tie_break or left <= 0.5 or not problem.rows:
        return result
    # Phase 2: the peak M is one more variable; objective . v <= phase 1's best (+ half a byte).
    # Every cost is >= 0 and every variable is 0 or 1 at an integer point, so a variable costing
    # more than the limit is fixed to 0 (HiGHS's presolve was seen to call the problem
    # infeasible with only the row, when the limit is 0).
    rows2 = _with_memory(problem, _structure(problem), budget, n + 1, peak=True)
    limit = float(problem.objective @ x) + 0.5
    bounds2, integrality2 = _bounds_and_integrality(problem, 1)
    bounds2.ub[:n][problem.objective > limit] = 0.0
    nz = np.nonzero((problem.objective > 0) & (problem.objective <= limit))[0]
    if len(nz):
        rows2.add(nz, problem.objective[nz], -np.inf, limit)
    c = np.zeros(n + 1)
    c[n] = 1.0
    phase2, x2 = _run("memory", c, integrality2, bounds2, rows2, n + 1, left, TIE_BREAK_GAP)
    if phase2.status == "infeasible":  # phase 1's plan is feasible: presolve got it wrong
        left = time_limit - (time.perf_counter() - started)
        phase2, x2 = _run("memory", c, integrality2, bounds2, rows2, n + 1, left,
                          TIE_BREAK_GAP, presolve=False)
    result.phases.append(phase2)
    if x2 is not None:
        result.x = x2[:n]
        result.choices = _choices(problem, x2)
    return result


def _with_memory(problem: Problem, rows: _Rows, budget: int | None, n: int,
                 peak: bool = False) -> _Rows:
    """Adds the memory rows: `row <= budget - const`, and with `peak` also `row - M <= -const`
    for the extra last variable M."""
    rows.n = n
    for index, coef, const in problem.rows:
        if budget is not None:
            rows.add(index, coef, -np.inf, budget - const)
        if peak:
            rows.add(np.append(index, n - 1), np.append(coef, -1.0), -np.inf, -const)
    return rows


def _min_peak(problem: Problem, base: _Rows, time_limit: float) -> float | None:
    n = problem.num_vars + 1
    rows = _with_memory(problem, _structure(problem), None, n, peak=True)
    c = np.zeros(n)
    c[-1] = 1.0
    bounds, integrality = _bounds_and_integrality(problem, 1)
    phase, x = _run("min-peak", c, integrality, bounds, rows, n, time_limit, 1e-3)
    return phase.objective if x is not None else None
