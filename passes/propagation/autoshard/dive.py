"""A plan from the budgeted LP's point: its integral groups kept, the budgeted MIP over the rest
(a dive to the bottom in one sub-MIP).

    plan = dive(solver, budget, x, incumbent)   # a plan in the budget moving less, or None

The budgeted LP's optimum is integral on most groups: on the Llama-3-8B step with carried state
23 of 399 groups are fractional at 256 devices, 11 at 64 (the memory rows mix two choices of a
few layers' groups). Its rounded point moves little but does not fit (19.7 GB at a 99 GB peak
against the 89 GB budget at 256 devices), and fixing-and-solving around a greedy plan keeps the
greedy plan's far-from-optimal choices where the LP agrees with them by chance. Holding every
integral group at the LP's choice and letting the budgeted MIP choose only the fractional ones
is a sub-MIP of a few dozen groups (HiGHS proves it at its root, about a second): on 256
devices it gives 23.62 GB (the greedy neighbourhood: 27.26 GB), and the full budgeted MIP from
that plan, whose reduced-cost fixing it tightens, proves a 21.93 GB plan in about 10 s where
from the greedy neighbourhood's plan it took 254 s. The memory rows have room left at that plan
(84 of 89 GB): the integral groups' choices still fit once the fractional ones are chosen.

Measured alternatives: opening the fractional groups' neighbours (one or two block hops: 35
and 61 groups at 256 devices) gave 23.55 GB, no real gain for the larger sub-MIP; on 64
devices the dive's plan (28.34 GB) is worse than the greedy neighbourhood's (22.12 GB, proven
within 0.86%), so the dive runs after the fix-and-solve rounds, only when they leave the plan
unproven (neighbourhood.py). Deterministic: "integral" is a fixed tolerance on the LP's point,
the sub-MIP is limited by ticks with HiGHS's fixed seed.
"""

from __future__ import annotations

import numpy as np

from shardc.passes.propagation.autoshard.highs import solve_mip
from shardc.passes.propagation.autoshard.plans import choices_of, evaluate, plan_vector

# A group whose largest x is at least 1 - this is integral in the LP's point.
INTEGRAL = 1e-6
# At most this share of the multi-choice groups may be left open: a sub-MIP over most of the
# program costs what the full budgeted MIP costs, which runs next anyway.
OPEN_SHARE = 0.5


def fractional_groups(problem, x: np.ndarray) -> list[int]:
    """The groups whose choice the LP's point `x` does not make integral, in group order."""
    out = []
    for g, size in enumerate(problem.space.sizes):
        if size > 1:
            base = problem.x_offset[g]
            if float(np.max(x[base : base + size])) < 1 - INTEGRAL:
                out.append(g)
    return out


def dive(solver, budget: float, x: np.ndarray, incumbent: list[int] | None
         ) -> list[int] | None:
    """The plan of the module docstring from the budgeted LP's point `x` (problem variables):
    a plan that fits `budget` and moves less than `incumbent` (any plan that fits when None),
    or None. `solver` is solve.py's `_Solver` (it records the sub-MIP as the phase "dive")."""
    p, b = solver.problem, solver.builder
    open_groups = fractional_groups(p, x)
    multi = sum(1 for size in p.space.sizes if size > 1)
    if len(open_groups) > OPEN_SHARE * multi:
        return None
    rounded = choices_of(p, x)
    held = np.zeros(b.n, dtype=bool)
    is_open = set(open_groups)
    for g, size in enumerate(p.space.sizes):
        if size > 1 and g not in is_open:
            held[p.x_offset[g] : p.x_offset[g] + size] = True
            held[p.x_offset[g] + rounded[g]] = False
    return held_mip(solver, budget, held, incumbent, "dive", start=False)


def held_mip(solver, budget: float, held: np.ndarray, incumbent: list[int] | None, name: str,
             *, start: bool) -> list[int] | None:
    """The budgeted MIP with the variables `held` (bool per problem variable) at 0, and those
    the reduced costs exclude for plans moving no more than `incumbent`, recorded as phase
    `name`; from `incumbent` with `start` (it must meet `held`). A plan that fits and moves
    less than `incumbent` (any that fits when None), or None."""
    p, b, e = solver.problem, solver.builder, solver.effort
    limit = evaluate(p, incumbent)[0] if incumbent is not None else None
    fixed = solver.fixing(limit, budget) if limit is not None else None
    if fixed is not None:
        held = held | fixed
    x0 = None
    if start and incumbent is not None:
        x0 = b.start(plan_vector(p, incumbent), memory=True, peak=False)
    lp = b.build(budget=budget, fixed=held)
    out = solve_mip(lp, ticks=e.ticks, gap=e.gap, start=x0, time_limit=e.time_limit)
    solver.record(name, out, lp)
    if out.x is None:
        return None
    found = choices_of(p, out.x[: b.n])
    cost, peak = evaluate(p, found)
    if peak <= budget and np.isfinite(cost) and (limit is None or cost < limit):
        solver.around = (found, held)  # the memory tie-break looks for its peak in here too
        return found
    return None
