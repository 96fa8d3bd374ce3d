"""The budgeted solve's first try: a bound from the LP relaxation, then small MIPs around the
plan at hand where it agrees with the LP (fix-and-solve, "relaxation induced neighbourhood").

    step = neighbourhood(solver, budget, incumbent)
    step.bound          # the budgeted LP's optimum: no plan in the budget moves fewer bytes
    step.choices        # the best plan found that fits (None: none better than `incumbent`)

On a large program the budgeted MIP spends its time at the root (presolve, the root LP, HiGHS's
rounding heuristics) before its first node, while the LP relaxation alone bounds the answer
tightly (within 0.5% of the optimum on the Llama-3-8B step with carried state). So:

1. **Bound.** The budgeted LP (the MIP without integrality), with the variables the free LP's
   reduced costs exclude for plans no worse than the incumbent fixed to 0. Its optimum `L`
   bounds every plan in the budget from below. Its reduced costs are kept (`solver.fixing`):
   every variable whose reduced cost exceeds `limit - L` is 0 in every plan moving at most
   `limit`, which shrinks every later budgeted solve exactly.
2. **Fix and solve**, `ROUNDS` times at most: the groups on which the incumbent and the LP's
   point rounded (each group's largest `x`) take the same choice keep it; the budgeted MIP over
   the other groups (a few hundred variables instead of hundreds of thousands) starts from the
   incumbent, which meets the fixing by construction, so the plan found is never worse. A
   better plan is the next round's incumbent; the rounds stop once the plan is within the
   effort's gap of `L`, or no better plan is found. With no incumbent in the budget, the free
   plan takes its place for the agreement (and the sub-MIP starts from nothing). A round that
   would leave more than half of the groups open is skipped: that is most of the full MIP,
   which runs after the branch step anyway if it is needed (on the NNX LM the first round
   opened 455 of 523 groups and took 253 s CPU).
3. **Dive**, when the plan is still not proven within the gap: the LP's integral groups held,
   the budgeted MIP over its fractional ones (dive.py). Its plan, when better, is the step's:
   the branch step (branch.py) and the full budgeted MIP that may follow start from it.

The budgeted LP starts from the free LP's optimal basis (`LPSession.extended`), which is dual
feasible for it: only the memory rows are violated there. It stays in `solver.session` for the
branch step, whose LPs start from its basis.

Lagrangian plans (the free problem with the memory rows priced into the objective at the LP's
row duals) were tried as further candidates: they fixed groups the optimum does not take
(on the Llama-3-8B step the neighbourhoods they gave were infeasible or 16% worse), and each
costs a free LP, so they are not used. Everything is counted work (simplex iterations, ticks)
with a fixed tie order (the lowest choice), so the step is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardc.passes.propagation.autoshard.dive import OPEN_SHARE, dive, held_mip
from shardc.passes.propagation.autoshard.highs import LPSession, Outcome
from shardc.passes.propagation.autoshard.plans import choices_of, evaluate

# Fix-and-solve rounds at most: the second starts from the first's plan, closer to the LP.
ROUNDS = 2


@dataclass
class Step:
    bound: float | None = None  # the budgeted LP's optimum (bytes)
    choices: list[int] | None = None  # the best plan found in the budget
    open_groups: list[int] = field(default_factory=list)  # per round: groups left to the MIP
    root: Outcome | None = None  # the budgeted LP's optimum (in `solver.session`)


def neighbourhood(solver, budget: float, incumbent: list[int] | None) -> Step:
    """The step of the module docstring; `solver` is solve.py's `_Solver`: it records each
    solve as a phase and keeps the LP's reduced costs for its later fixing."""
    p, b, e = solver.problem, solver.builder, solver.effort
    step = Step()
    limit = evaluate(p, incumbent)[0] if incumbent is not None else None
    fixed = solver.fixing(limit) if limit is not None else None
    lp = b.build(budget=budget, fixed=fixed)
    session = solver.session = LPSession(lp)
    if solver.free_basis is not None:  # from the free LP's optimum: only memory rows violated
        aux = lp.shape[1] - b.n
        session.restore(LPSession.extended(solver.free_basis, aux, aux, len(p.rows)))
    out = session.solve(iterations=e.lp_iterations, time_limit=e.time_limit)
    solver.record("budgeted-lp", out, lp)
    if out.x is None or out.reduced_costs is None:
        return step
    step.root = out
    step.bound = b.unscale_objective(out.objective)
    solver.budget_fixing = (budget, step.bound, out.reduced_costs[: b.n])
    rounded = choices_of(p, out.x[: b.n])
    best = incumbent
    for _ in range(ROUNDS):
        found = _fix_and_solve(solver, budget, rounded, best, step)
        if found is None:
            break
        best = step.choices = found
        cost = evaluate(p, found)[0]
        if cost <= 0 or (cost - step.bound) / cost <= e.gap:
            break
    if best is None or not _proven(p, best, step.bound, e.gap):
        found = dive(solver, budget, out.x[: b.n], best)
        if found is not None:
            step.choices = found
    return step


def _proven(p, choices: list[int], bound: float, gap: float) -> bool:
    cost = evaluate(p, choices)[0]
    return cost <= 0 or (cost - bound) / cost <= gap


def _fix_and_solve(solver, budget: float, rounded: list[int], incumbent: list[int] | None,
                   step: Step) -> list[int] | None:
    """The budgeted MIP over the groups where `incumbent` (else the free plan) and the LP's
    rounded point differ, from `incumbent`; a plan that fits and moves less, or None."""
    p, b = solver.problem, solver.builder
    reference = solver.free_plan if incumbent is None else incumbent
    held = np.zeros(b.n, dtype=bool)
    open_groups = 0
    for g, size in enumerate(p.space.sizes):
        if size == 1:
            continue
        if reference[g] != rounded[g]:
            open_groups += 1
            continue
        held[p.x_offset[g] : p.x_offset[g] + size] = True
        held[p.x_offset[g] + rounded[g]] = False
    step.open_groups.append(open_groups)
    choosing = sum(1 for size in p.space.sizes if size > 1)
    if open_groups == 0 or open_groups > OPEN_SHARE * choosing:
        return None  # nothing to do, or not a neighbourhood: most of the full MIP
    return held_mip(solver, budget, held, incumbent, "neighbourhood", start=True)
