"""The budgeted solve's third try: a small branch-and-bound on the groups the budgeted LP blends,
each LP started from its parent's basis.

    step = branch(solver, budget, incumbent)
    step.bound          # proven: no plan in the budget moves fewer bytes
    step.choices        # the best plan found that fits (None: none better than `incumbent`)

Why. When a memory row binds, the budgeted LP's optimum can be a mixture of two whole plans
(on Flax's NNX LM, docs/autoshard.md: 0.341 of a data-parallel plan that does not fit and 0.659
of one with the weights on "dp"), and integral plans in between pay a fixed charge the mixture
pays only in part. Its bound is then several percent below the optimum, neither the
neighbourhood step nor HiGHS's root can close that quickly (HiGHS spent minutes in its root's
cut and heuristic rounds), but fixing the one group that decides the trade closes it: on that
LM one branch on the FFN activation's group proves the optimum in three LPs.

The search, best bound first:

- **A node** is the budgeted LP with some groups restricted to some of their choices, solved
  by dual simplex from its parent's optimal basis (`LPSession`): a child differs from its parent
  in one group's bounds, so it takes hundreds to a few thousand iterations, not a cold solve's
  tens of thousands. Each LP stops as soon as its bound passes the cutoff
  `incumbent * (1 - gap)`: such a node cannot hold a plan more than `gap` better.
- **The group branched on** is the blended group (a fractional choice) whose choices differ
  most in what the binding memory rows charge them: the memory part of the reduced costs
  (`A^T y` over the memory and auxiliary rows, with `y` the LP's duals). That is the group
  whose choice trades memory for bytes; ties go to the lowest group. Its children take each
  choice the LP uses (the largest share first, so the plan the LP leans to is found early),
  then one child for all its other choices.
- **Plans**: a node whose LP is integral is a plan; every node's point is also rounded (each
  group's largest `x`) and kept when it fits and moves less than the best so far.
- **Stops** when the lowest open bound is within `gap` of the best plan (proven), when no node
  is left, or when the step has used `Effort.branch_iterations` simplex iterations (counted
  work: the same stop under any load). The bound is the lowest of the open nodes' bounds and
  of the closed leaves' (a leaf cut off at `c` bounds its plans by `c`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from shardc.passes.propagation.autoshard.highs import LPSession, Outcome
from shardc.passes.propagation.autoshard.plans import choices_of, evaluate

_INTEGRAL = 1e-6
# A leaf cut off at `best * (1 - gap)` proves exactly `gap`; a hair more keeps the proof on the
# right side of rounding.
CUTOFF_SLACK = 1e-9


@dataclass
class BranchStep:
    bound: float | None = None  # proven lower bound in the budget (bytes)
    choices: list[int] | None = None  # the best plan found that fits
    nodes: int = 0  # LPs solved
    iterations: int = 0
    proven: bool = False  # the best plan is within the gap of the bound
    # where the best plan is the LP optimum of a node: its held columns, its LP optimum (bytes)
    # and reduced costs, to restrict the memory tie-break to its plans (solve.py)
    node: tuple[np.ndarray, float, np.ndarray] | None = None


@dataclass(order=True)
class _Node:
    bound: float  # scaled LP objective
    seq: int
    fixed: np.ndarray = field(compare=False)  # columns held at 0 (besides the root's)
    basis: object = field(compare=False)
    group: int = field(compare=False)  # the group to branch on
    order: list[int] = field(compare=False)  # its choices the LP uses, largest share first


class _Search:
    def __init__(self, solver, budget: float, incumbent: list[int] | None) -> None:
        self.solver, self.budget = solver, budget
        self.p, self.b, self.e = solver.problem, solver.builder, solver.effort
        self.session: LPSession = solver.session
        self.root_upper = self.session.col_upper.copy()
        program = self.session.program
        # the memory and auxiliary rows: what a group's choice costs in memory
        self.memory_rows = np.arange(self.b.structure_rows, program.shape[0])
        self.matrix_t = program.matrix.T.tocsr()
        self.best = incumbent
        self.best_cost = evaluate(self.p, incumbent)[0] if incumbent is not None else np.inf
        self.applied = np.zeros(0, dtype=np.int64)
        self.step = BranchStep()
        self.leaves: list[float] = []  # bounds of closed leaves (scaled)
        self.seq = 0

    def cutoff(self) -> float | None:
        """Scaled: a node whose bound passes it cannot hold a plan more than `gap` better."""
        if not np.isfinite(self.best_cost):
            return None
        return self.best_cost * (1 - self.e.gap) * (1 + CUTOFF_SLACK) * self.b.obj_scale

    def apply(self, fixed: np.ndarray) -> None:
        """Hold `fixed` at 0 and release what the last node held."""
        release = np.setdiff1d(self.applied, fixed)
        if len(release):
            self.session.set_col_upper(release, self.root_upper[release])
        hold = np.setdiff1d(fixed, self.applied)
        if len(hold):
            self.session.set_col_upper(hold, np.zeros(len(hold)))
        self.applied = fixed

    def solve(self, fixed: np.ndarray, basis) -> Outcome:
        self.apply(fixed)
        self.session.restore(basis)
        left = self.e.branch_iterations - self.step.iterations
        out = self.session.solve(iterations=max(left, 1), cutoff=self.cutoff(),
                                 time_limit=self.e.time_limit)
        self.solver.record("branch", out, self.session.program)
        self.step.nodes += 1
        self.step.iterations += out.work.get("lp_iterations", 0)
        return out

    def offer(self, out: Outcome, fixed: np.ndarray) -> None:
        """Keep the plan of the node's point rounded when it fits and moves less than the best
        (and, when it is the node's LP optimum, the node, for the tie-break)."""
        choices = choices_of(self.p, out.x[: self.b.n])
        cost, peak = evaluate(self.p, choices)
        if peak <= self.budget and np.isfinite(cost) and cost < self.best_cost:
            self.best, self.best_cost = choices, cost
            optimum = self.b.unscale_objective(out.objective)
            exact = out.reduced_costs is not None and cost <= optimum + 0.5
            self.step.node = (fixed, optimum, out.reduced_costs[: self.b.n]) if exact else None

    def node(self, out: Outcome, fixed: np.ndarray) -> _Node | None:
        """An open node for a solved LP, or None when it is a leaf (integral)."""
        x = out.x
        memory = np.zeros(len(out.row_duals))
        memory[self.memory_rows] = out.row_duals[self.memory_rows]
        charge = self.matrix_t @ memory  # per column: what the memory rows charge it
        best_group, best_spread, order = -1, -1.0, []
        for g, size in enumerate(self.p.space.sizes):
            if size == 1:
                continue
            lo = self.p.x_offset[g]
            share = x[lo : lo + size]
            if share.max() >= 1 - _INTEGRAL:
                continue
            used = np.nonzero(share > _INTEGRAL)[0]
            spread = float(np.ptp(charge[lo + used]))
            if spread > best_spread:
                best_group, best_spread = g, spread
                order = sorted(used.tolist(), key=lambda a: (-share[a], a))
        if best_group < 0:
            return None
        self.seq += 1
        return _Node(out.objective, self.seq, fixed, self.session.basis(), best_group, order)

    def children(self, node: _Node) -> list[np.ndarray]:
        """The columns each child holds at 0: one child per choice the LP uses, then one for
        the group's other choices (when any is still open)."""
        g, size = node.group, self.p.space.sizes[node.group]
        lo = self.p.x_offset[g]
        held = set(node.fixed.tolist())
        open_ = [a for a in range(size) if self.root_upper[lo + a] > 0 and lo + a not in held]
        out = [np.union1d(node.fixed, [lo + a for a in range(size) if a != keep])
               for keep in node.order]
        rest = [a for a in open_ if a not in node.order]
        if rest:
            out.append(np.union1d(node.fixed, [lo + a for a in node.order]))
        return [f.astype(np.int64) for f in out]

    def run(self, root: Outcome) -> BranchStep:
        heap: list[_Node] = []
        first = self.node(root, np.zeros(0, dtype=np.int64))
        self.offer(root, np.zeros(0, dtype=np.int64))
        if first is None:
            self.leaves.append(root.objective)
        else:
            heap.append(first)
        exhausted = False
        while heap:
            cutoff = self.cutoff()
            if cutoff is not None and heap[0].bound >= cutoff:
                break
            if self.step.iterations >= self.e.branch_iterations:
                exhausted = True
                break
            node = heapq.heappop(heap)
            for fixed in self.children(node):
                out = self.solve(fixed, node.basis)
                if out.status == "cutoff":
                    self.leaves.append(self.cutoff_at(out))
                elif out.status == "infeasible":
                    continue
                elif out.status != "optimal" or out.x is None:  # out of work
                    self.leaves.append(node.bound)
                    exhausted = True
                    break
                else:
                    self.offer(out, fixed)
                    child = self.node(out, fixed)
                    if child is None:
                        self.leaves.append(out.objective)
                    else:
                        heapq.heappush(heap, child)
            if exhausted:
                break
        self.apply(np.zeros(0, dtype=np.int64))
        bounds = [n.bound for n in heap] + self.leaves
        step = self.step
        if bounds:
            step.bound = self.b.unscale_objective(min(bounds))
        step.choices = self.best
        cost = self.best_cost
        step.proven = bool(np.isfinite(cost) and step.bound is not None and (
            cost <= 0 or (cost - step.bound) / cost <= self.e.gap))
        return step

    def cutoff_at(self, out: Outcome) -> float:
        """The bound of a leaf its LP cut off: the cutoff it passed."""
        cutoff = self.cutoff()
        return float(cutoff) if cutoff is not None else -np.inf


def branch(solver, budget: float, incumbent: list[int] | None, root: Outcome) -> BranchStep:
    """The step of the module docstring, from the budgeted LP's optimum `root` in
    `solver.session` (the neighbourhood step's). `incumbent`: the best plan at hand that fits."""
    return _Search(solver, budget, incumbent).run(root)
