"""auto-shard's neighbourhood step (neighbourhood.py): the budgeted LP's bound, a small MIP
around the plan at hand, and the full MIP only when that plan is not proven within the gap."""

from __future__ import annotations

import pytest

from shardc.ir.diagnostics import ShardcError
from shardc.passes.propagation.autoshard.plans import evaluate
from shardc.passes.propagation.autoshard.solve import Effort, solve
from tests.propagation.test_auto_shard_solver import _budget, _problem, _unannotated, auto


def _names(result) -> list[str]:
    return [p.name for p in result.phases]


@pytest.fixture(scope="module")
def gpt_tp():
    return _problem(_unannotated("gpt", "tp")), _budget("gpt", "tp")


def test_the_plan_is_within_its_gap_of_the_full_mips_optimum(gpt_tp) -> None:
    problem, budget = gpt_tp
    result = solve(problem, budget)
    full = solve(problem, budget, Effort(gap=1e-6, neighbourhood=False))
    assert full.status == "optimal" and "neighbourhood" not in _names(full)
    assert "budgeted-lp" in _names(result) and "neighbourhood" in _names(result)
    cost, peak = evaluate(problem, result.choices)
    assert peak <= budget and cost == result.objective
    assert result.status == "optimal" and result.gap is not None and result.gap <= 0.01
    # the bound is a bound, and the plan is within the gap of the proven optimum
    assert result.bound <= full.objective + 1e-6 <= cost + 1e-6
    assert cost * (1 - result.gap) <= full.objective + 1e-6
    # the budgeted LP's reduced-cost fixing is exact: asked for a proof, the same optimum
    proven = solve(problem, budget, Effort(gap=1e-6))
    assert proven.objective == full.objective and proven.gap <= 1e-6


def test_a_plan_not_proven_within_the_gap_falls_back_to_the_full_mip(gpt_tp) -> None:
    # the budgeted LP bounds this program loosely (48k against 65.5k): the neighbourhood's plan
    # is not proven, the full MIP runs from it and proves it within 1%
    problem, budget = gpt_tp
    result = solve(problem, budget, Effort(branch=False))
    names = _names(result)
    lp = result.phases[names.index("budgeted-lp")]
    near = result.phases[names.index("neighbourhood")]
    assert (near.objective - lp.objective) / near.objective > 0.01
    assert names.index("budgeted") > names.index("neighbourhood")
    assert result.objective <= near.objective and result.gap <= 0.01
    assert result.bound > lp.objective  # HiGHS's bound, tighter than the LP's


def test_the_branch_step_proves_what_the_neighbourhood_could_not(gpt_tp) -> None:
    # the same loose LP bound: branching on the groups it blends closes it without the full MIP
    problem, budget = gpt_tp
    result = solve(problem, budget)
    names = _names(result)
    assert "branch" in names and "budgeted" not in names
    assert result.status == "optimal" and result.gap <= 0.01
    cost, peak = evaluate(problem, result.choices)
    assert peak <= budget and cost == result.objective
    lp = result.phases[names.index("budgeted-lp")]
    assert result.bound > lp.objective  # the children's bounds, tighter than the root's
    full = solve(problem, budget, Effort(gap=1e-6, branch=False))
    assert result.bound <= full.objective + 1e-6 <= cost + 1e-6
    # every LP of the step starts from its parent's basis: far fewer iterations than the root
    children = [p.work["lp_iterations"] for p in result.phases if p.name == "branch"]
    assert children and max(children) < lp.work["lp_iterations"]


def test_the_branch_steps_work_limit_keeps_the_best_plan_and_its_bound(gpt_tp) -> None:
    problem, budget = gpt_tp
    cut = solve(problem, budget, Effort(branch_iterations=1, ticks=1))
    cost, peak = evaluate(problem, cut.choices)
    assert peak <= budget and cut.bound is not None and cut.bound <= cost
    assert sum(p.work["lp_iterations"] for p in cut.phases if p.name == "branch") <= 2
    assert cut.choices == solve(problem, budget, Effort(branch_iterations=1, ticks=1)).choices


def test_a_plan_proven_within_the_gap_skips_the_full_mip() -> None:
    problem = _problem(_unannotated("mlp", "dp_tp"))
    budget = _budget("mlp", "dp_tp")
    free = solve(problem, None)
    assert free.peak > budget  # the budget binds
    result = solve(problem, budget)
    names = _names(result)
    # the LP's bound proves the plan at hand (on this small program the LP and the greedy plan
    # disagree on most groups: no neighbourhood, which would be the full MIP)
    assert "budgeted-lp" in names and "budgeted" not in names
    assert result.status == "optimal" and result.source in ("greedy", "neighbourhood", "branch")
    assert result.gap <= 0.01 and evaluate(problem, result.choices)[1] <= budget
    full = solve(problem, budget, Effort(gap=1e-6, neighbourhood=False))
    assert result.objective <= full.objective / (1 - 0.01)


def test_the_step_is_deterministic(gpt_tp) -> None:
    problem, budget = gpt_tp
    first, second = solve(problem, budget), solve(problem, budget)
    assert first.choices == second.choices and first.bound == second.bound
    assert [(p.name, p.status, p.work) for p in first.phases] == [
        (p.name, p.status, p.work) for p in second.phases]


def test_the_gap_option() -> None:
    module = _unannotated("gpt", "tp")
    budget = _budget("gpt", "tp")
    info = auto(module, budget, gap=0).report["auto_shard"]
    assert info["status"] == "optimal" and info["gap"] <= 1e-6
    with pytest.raises(ShardcError, match="0 <= gap < 1"):
        auto(_unannotated("gpt", "tp"), budget, gap=1.5)
