"""One LP or MIP solve with HiGHS (highspy), deterministic and limited by work, not time.

    program = LinearProgram(cost, col_lower, col_upper, matrix, row_lower, row_upper, integer)
    out = solve_lp(program, iterations=200_000)
    out = solve_mip(program, ticks=2000, gap=1e-6, start=x0)
    out.status, out.x, out.objective, out.bound, out.gap, out.work

Why highspy rather than scipy's `milp` (which runs the same HiGHS): a MIP can start from a plan
(`setSolution`), so a solve cut short keeps a plan at least as good as the one it was given,
and its callbacks let the search stop after a number of *ticks* (calls of HiGHS's MIP interrupt
check, made at fixed points of the branch-and-cut) rather than seconds. With one thread and the
default random seed HiGHS is deterministic, so a tick limit stops it at the same point under
any load: the same program gives the same plan in every process. An LP is limited by simplex
iterations. `time_limit` is only a safety net the caller may set; a solve it stops is reported
as `time_limit` (not reproducible).

The binding `highspy._Highs` is used rather than the `highspy.Highs` wrapper: the wrapper prints
HiGHS's banner on stdout when it is constructed, before logging can be turned off, and runs every
solve on a second thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import highspy
import numpy as np
from scipy.sparse import csc_matrix

_STATUS = {
    "kOptimal": "optimal",
    "kInterrupt": "work_limit",
    "kIterationLimit": "work_limit",
    "kSolutionLimit": "work_limit",
    "kTimeLimit": "time_limit",
    "kInfeasible": "infeasible",
    "kUnboundedOrInfeasible": "infeasible",
    "kUnbounded": "unbounded",
    "kObjectiveBound": "optimal",
}
_FEASIBLE = int(highspy.SolutionStatus.kSolutionStatusFeasible)


@dataclass
class LinearProgram:
    """min cost . x  s.t.  row_lower <= matrix x <= row_upper, col_lower <= x <= col_upper."""

    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    matrix: csc_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    integer: np.ndarray  # bool per column

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape  # type: ignore[return-value]


@dataclass
class Outcome:
    status: str  # optimal | work_limit | time_limit | infeasible | unbounded | error
    x: np.ndarray | None  # the best point found (None: none)
    objective: float | None
    bound: float | None  # the proven lower bound (MIP: dual bound; LP: the optimum)
    gap: float | None
    reduced_costs: np.ndarray | None = None  # LP at optimum only
    row_duals: np.ndarray | None = None  # LP at optimum only (cost = A^T duals + reduced costs)
    work: dict[str, int] = field(default_factory=dict)  # ticks, nodes, lp_iterations
    cpu_s: float = 0.0


def version() -> str:
    return f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}." \
           f"{highspy.HIGHS_VERSION_PATCH}"


def _highs(program: LinearProgram, integer: bool, options: dict[str, object]) -> highspy._Highs:
    h = highspy._Highs()
    h.setOptionValue("output_flag", False)
    for key, value in {"threads": 1, "random_seed": 0, **options}.items():
        h.setOptionValue(key, value)
    lp = highspy.HighsLp()
    rows, cols = program.shape
    lp.num_col_, lp.num_row_ = cols, rows
    lp.col_cost_ = np.asarray(program.cost, dtype=float)
    lp.col_lower_ = np.asarray(program.col_lower, dtype=float)
    lp.col_upper_ = np.asarray(program.col_upper, dtype=float)
    lp.row_lower_ = np.asarray(program.row_lower, dtype=float)
    lp.row_upper_ = np.asarray(program.row_upper, dtype=float)
    m = program.matrix
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = m.indptr.astype(np.int32)
    lp.a_matrix_.index_ = m.indices.astype(np.int32)
    lp.a_matrix_.value_ = m.data.astype(float)
    if integer and program.integer.any():
        kinds = np.where(program.integer, highspy.HighsVarType.kInteger,
                         highspy.HighsVarType.kContinuous)
        lp.integrality_ = list(kinds)
    h.passModel(lp)
    return h


def _status(h: highspy._Highs) -> str:
    name = h.getModelStatus().name
    return _STATUS.get(name, "error")


def solve_lp(program: LinearProgram, *, iterations: int,
             time_limit: float | None = None) -> Outcome:
    """The LP relaxation (integrality dropped), by dual simplex, at most `iterations`
    iterations; reduced costs and row duals when optimal."""
    options: dict[str, object] = {"solver": "simplex", "simplex_iteration_limit": iterations}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    h = _highs(program, False, options)
    start = time.process_time()
    h.run()
    cpu = time.process_time() - start
    status = _status(h)
    info = h.getInfo()
    work = {"lp_iterations": int(info.simplex_iteration_count)}
    if status != "optimal":
        return Outcome(status, None, None, None, None, work=work, cpu_s=cpu)
    sol = h.getSolution()
    x = np.array(sol.col_value)
    objective = float(info.objective_function_value)
    return Outcome(status, x, objective, objective, 0.0, np.array(sol.col_dual),
                   np.array(sol.row_dual), work, cpu)


def solve_mip(program: LinearProgram, *, ticks: int, gap: float,
              start: np.ndarray | None = None, time_limit: float | None = None) -> Outcome:
    """The MIP, stopped after `ticks` interrupt checks (module docstring), or once the
    relative gap is at most `gap`; `start` (a feasible point) is the first incumbent."""
    options: dict[str, object] = {"mip_rel_gap": float(gap)}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    h = _highs(program, True, options)
    count = [0]

    def on_interrupt(kind, message, data_out, data_in, user) -> None:  # noqa: ARG001
        count[0] += 1
        if count[0] >= ticks:
            data_in.user_interrupt = True

    h.setCallback(on_interrupt, None)
    h.startCallback(highspy.cb.HighsCallbackType.kCallbackMipInterrupt)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = np.asarray(start, dtype=float)
        sol.value_valid = True
        h.setSolution(sol)
    begin = time.process_time()
    h.run()
    cpu = time.process_time() - begin
    status = _status(h)
    info = h.getInfo()
    work = {
        "ticks": count[0],
        "nodes": int(info.mip_node_count),
        "lp_iterations": int(info.simplex_iteration_count),
    }
    x = None
    objective = bound = found_gap = None
    if int(info.primal_solution_status) == _FEASIBLE:
        x = np.array(h.getSolution().col_value)
        objective = float(info.objective_function_value)
    if status in ("optimal", "work_limit", "time_limit") and np.isfinite(info.mip_dual_bound):
        bound = float(info.mip_dual_bound)
    if x is not None and bound is not None:
        found_gap = float(info.mip_gap)
    if status == "optimal" and x is None:
        status = "error"
    return Outcome(status, x, objective, bound, found_gap, None, None, work, cpu)


class LPSession:
    """One LP kept in HiGHS between solves, so that each solve starts from the last one's
    basis: the budgeted LP from the free LP's optimum (only the memory rows are violated), a
    branch's child from its parent's (one group's choices bounded). Dual simplex re-optimises
    from a dual feasible basis in a fraction of a cold solve's iterations.

        session = LPSession(program)            # memory rows may be relaxed (+inf) at first
        out = session.solve(iterations=...)
        session.set_row_upper(rows, values); session.set_col_upper(cols, values)
        basis = session.basis(); ...; session.restore(basis)
        out = session.solve(iterations=..., cutoff=c)   # stops once the bound reaches c
    """

    def __init__(self, program: LinearProgram) -> None:
        self.program = program
        self.col_upper = np.asarray(program.col_upper, dtype=float).copy()
        self.h = _highs(program, False, {"solver": "simplex"})

    def set_row_upper(self, rows: np.ndarray, values: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int32)
        self.h.changeRowsBounds(len(rows), rows, self.program.row_lower[rows],
                                np.asarray(values, dtype=float))

    def set_col_upper(self, cols: np.ndarray, values: np.ndarray) -> None:
        cols = np.asarray(cols, dtype=np.int32)
        values = np.asarray(values, dtype=float)
        self.col_upper[cols] = values
        self.h.changeColsBounds(len(cols), cols, self.program.col_lower[cols], values)

    def basis(self) -> highspy.HighsBasis:
        return self.h.getBasis()

    def restore(self, basis: highspy.HighsBasis) -> None:
        self.h.setBasis(basis)

    @staticmethod
    def extended(basis: highspy.HighsBasis, columns: int, equalities: int, rows: int
                 ) -> highspy.HighsBasis:
        """`basis` of a program with `columns` columns appended, each defined by one of
        `equalities` appended equality rows, and `rows` further rows after those: the new
        columns and the further rows basic, the equalities at their bound. Optimal for the
        program without the further rows, it is dual feasible for it with them: dual simplex
        starts there and only repairs the violated rows."""
        out = highspy.HighsBasis()
        out.col_status = list(basis.col_status) + [highspy.HighsBasisStatus.kBasic] * columns
        out.row_status = (list(basis.row_status) + [highspy.HighsBasisStatus.kLower] * equalities
                          + [highspy.HighsBasisStatus.kBasic] * rows)
        out.valid = True
        return out

    def solve(self, *, iterations: int, cutoff: float | None = None,
              time_limit: float | None = None) -> Outcome:
        """Re-optimise from the current basis, at most `iterations` simplex iterations; with
        `cutoff`, stop once the dual objective (a lower bound) exceeds it (status `cutoff`)."""
        h = self.h
        h.setOptionValue("simplex_iteration_limit", int(iterations))
        h.setOptionValue("objective_bound", float(np.inf if cutoff is None else cutoff))
        h.setOptionValue("time_limit", float(np.inf if time_limit is None else time_limit))
        start = time.process_time()
        h.run()
        cpu = time.process_time() - start
        name = h.getModelStatus().name
        status = "cutoff" if name == "kObjectiveBound" else _STATUS.get(name, "error")
        info = h.getInfo()
        work = {"lp_iterations": int(info.simplex_iteration_count)}  # this run's
        if status != "optimal":
            return Outcome(status, None, None, None, None, work=work, cpu_s=cpu)
        sol = h.getSolution()
        objective = float(info.objective_function_value)
        return Outcome(status, np.array(sol.col_value), objective, objective, 0.0,
                       np.array(sol.col_dual), np.array(sol.row_dual), work, cpu)
