"""auto-shard's dive (dive.py): the budgeted LP's integral groups held, the budgeted MIP over its
fractional ones; a plan that fits and moves less than the one it starts from, or none."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.passes.propagation.autoshard.dive import dive, fractional_groups
from shardc.passes.propagation.autoshard.highs import solve_lp
from shardc.passes.propagation.autoshard.plans import choices_of, evaluate, greedy_plans
from shardc.passes.propagation.autoshard.solve import Effort, _Solver, best_fitting, solve
from tests.propagation.test_auto_shard_solver import _budget, _problem, _unannotated


def _lp_point(problem, budget: int):
    """A solver after its free LP (for reduced-cost fixing) and the budgeted LP's point."""
    s = _Solver(problem, Effort())
    s.free()
    out = solve_lp(s.builder.build(budget=budget), iterations=1_000_000)
    assert out.x is not None
    return s, out.x[: s.builder.n]


def _greedy(problem, budget: int) -> list[int]:
    _, plan = best_fitting(problem, budget, [("greedy", c) for c in greedy_plans(problem)])
    assert plan is not None
    return plan


@pytest.fixture(scope="module")
def transformer_tp():
    return _problem(_unannotated("transformer", "tp")), _budget("transformer", "tp")


def test_the_dive_holds_the_lps_integral_groups_and_beats_its_start(transformer_tp) -> None:
    problem, budget = transformer_tp
    s, x = _lp_point(problem, budget)
    start = _greedy(problem, budget)
    plan = dive(s, budget, x, start)
    assert plan is not None
    cost, peak = evaluate(problem, plan)
    assert peak <= budget and cost < evaluate(problem, start)[0]
    # 9 of 61 groups fractional: every other group keeps the LP's choice
    fractional = set(fractional_groups(problem, x))
    assert 0 < len(fractional) < len(problem.space.sizes) / 2
    rounded = choices_of(problem, x)
    assert all(plan[g] == rounded[g] for g in range(len(plan)) if g not in fractional)
    assert [p.name for p in s.phases][-1] == "dive"


def test_the_dive_is_deterministic(transformer_tp) -> None:
    problem, budget = transformer_tp
    runs = []
    for _ in range(2):
        s, x = _lp_point(problem, budget)
        runs.append((dive(s, budget, x, _greedy(problem, budget)), s.phases[-1].work))
    assert runs[0] == runs[1]


def test_the_dive_returns_no_plan_that_is_not_better() -> None:
    # the LP's 4 fractional groups, chosen, give the greedy plan's bytes again: not better
    problem, budget = _problem(_unannotated("moe", "ep_tp")), _budget("moe", "ep_tp")
    s, x = _lp_point(problem, budget)
    start = _greedy(problem, budget)
    unbounded = dive(s, budget, x, None)
    assert unbounded is not None
    assert evaluate(problem, unbounded)[0] == evaluate(problem, start)[0]
    assert dive(s, budget, x, start) is None


def test_a_mostly_fractional_lp_is_left_to_the_full_mip() -> None:
    # 50 of 61 groups fractional: the sub-MIP would be the full MIP, which runs next anyway
    problem, budget = _problem(_unannotated("transformer", "fsdp")), _budget("transformer", "fsdp")
    s, x = _lp_point(problem, budget)
    before = len(s.phases)
    assert dive(s, budget, x, None) is None and len(s.phases) == before


def test_the_solve_dives_when_the_neighbourhood_is_not_proven(transformer_tp) -> None:
    problem, budget = transformer_tp
    result = solve(problem, budget, Effort(branch=False))
    names = [p.name for p in result.phases]
    assert names.index("neighbourhood") < names.index("dive") < names.index("budgeted")
    # with the branch step (branch.py), it runs from the dive's plan, before any full MIP
    default = [p.name for p in solve(problem, budget).phases]
    assert default.index("dive") < default.index("branch")
    assert result.status == "optimal" and result.gap <= 0.01
    assert result.objective <= result.phases[names.index("dive")].objective
    assert evaluate(problem, result.choices)[1] <= budget
    # without the neighbourhood step (and so without the dive), the same optimum
    full = solve(problem, budget, Effort(neighbourhood=False))
    assert "dive" not in [p.name for p in full.phases]
    assert result.objective <= full.objective / (1 - 0.01)


@settings(max_examples=8, deadline=None)
@given(st.floats(min_value=0.0, max_value=0.95))
def test_a_dived_plan_fits_and_moves_less_than_its_start(transformer_tp, share: float) -> None:
    problem, expert = transformer_tp
    free_peak = evaluate(problem, solve(problem, None).choices)[1]
    budget = int(expert + share * max(0.0, free_peak - expert))
    s, x = _lp_point(problem, budget)
    _, start = best_fitting(problem, budget, [("greedy", c) for c in greedy_plans(problem)])
    # budgets from the expert's peak to just under the free plan's: the greedy plan fits
    # (181 KB) and the dive always finds one moving less (49 KB) on this program
    plan = dive(s, budget, x, start)
    assert start is not None and plan is not None
    cost, peak = evaluate(problem, plan)
    assert peak <= budget and cost < evaluate(problem, start)[0]
