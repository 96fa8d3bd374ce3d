"""FanOut: plan_reshard's plans for many targets of one source from one search: the same steps,
layouts and bytes as the planner on random meshes, layouts and budgets, or the planner's own."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives import plan_reshard
from shardc.passes.analysis.collectives.fan_out import FanOut
from shardc.passes.analysis.collectives.shards import local_elements
from shardc.passes.analysis.collectives.steps import same_layout
from tests.analysis.test_planner import random_layout, random_refs


@st.composite
def fan_cases(draw):
    """A mesh of 1-3 axes (sub-axes sometimes, devices permuted sometimes), a shape with uneven
    dims, one source (partial sums sometimes) and several targets of it."""
    sizes = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))
    names = ["x", "y", "z"][: len(sizes)]
    ids = None
    if draw(st.booleans()):
        ids = draw(st.permutations(range(math.prod(sizes))))
    mesh = DeviceMesh.create("mesh", dict(zip(names, sizes, strict=True)), ids)
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5, 8, 12, 48]), min_size=rank,
                                max_size=rank)))
    refs = random_refs(draw, names, sizes)
    src = random_layout(draw, mesh, refs, rank, refs)
    targets = [random_layout(draw, mesh, refs, rank, list(src.unreduced))
               for _ in range(draw(st.integers(1, 6)))]
    return shape, draw(st.sampled_from(["f32", "bf16", "i1"])), src, targets


def _planned(shape, dtype, src, dst, cost, budget):
    try:
        return plan_reshard(shape, dtype, src, dst, cost=cost, budget=budget)
    except ShardcError as e:
        return type(e)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fan_cases(), st.sampled_from(["ring", "bytes"]),
       st.sampled_from([30, 300, 3000, 50_000]))
def test_fan_out_gives_the_planners_plans(case, cost, budget) -> None:
    """Every budget: a small one cuts the planner's searches, and then the pair must go to the
    planner (the bound of fan_out.py decides without running A*)."""
    shape, dtype, src, targets = case
    fan = FanOut(budget=budget)
    for dst in targets:
        want = _planned(shape, dtype, src, dst, cost, budget)
        if isinstance(want, type):
            with pytest.raises(want):
                fan.plan(shape, dtype, src, dst, cost)
            with pytest.raises(want):
                fan.summary(shape, dtype, src, dst, cost)
            continue
        got = fan.plan(shape, dtype, src, dst, cost)
        assert got.steps == want.steps
        assert all(same_layout(a, b) for a, b in zip(got.layouts, want.layouts, strict=True))
        assert (got.cost, got.ring_bytes, got.comm_bytes, got.search) == (
            want.cost, want.ring_bytes, want.comm_bytes, want.search)
        summary = fan.summary(shape, dtype, src, dst, cost)
        held = tuple(local_elements(shape, m.shard_counts()) * (4 if dtype == "f32" else 2 if
                     dtype == "bf16" else 1) for m in want.layouts)
        assert (summary.comm, summary.ring, summary.held) == (
            want.comm_bytes, want.ring_bytes, held)


def test_one_search_serves_every_target_of_a_source() -> None:
    """A source's targets share one search; the planner is not asked."""
    mesh = DeviceMesh.create("mesh", {"data": 2, "fsdp": 4, "tensor": 4})
    shape = (64, 32, 16, 8)

    def lay(*dims: str, unreduced: str = "") -> NamedMapping:
        axes = [tuple(AxisRef(a) for a in d.split(",") if a) for d in dims]
        return NamedMapping(mesh, tuple(DimSharding(a) for a in axes), (),
                            tuple(AxisRef(a) for a in unreduced.split(",") if a))

    src = lay("data,fsdp", "", "tensor", "")
    targets = [lay("", "", "", ""), lay("data", "fsdp", "tensor", ""), lay("", "tensor", "", ""),
               lay("tensor", "data,fsdp", "", ""), lay("fsdp", "", "", "data,tensor")]
    fan = FanOut()
    for dst in targets:
        want = plan_reshard(shape, "bf16", src, dst)
        assert fan.plan(shape, "bf16", src, dst).steps == want.steps
    assert (fan.searches, fan.fallbacks) == (1, 0)
    # partial sums on all three axes: more layouts; still the planner's plans
    partial = lay("", "", "", "", unreduced="data,fsdp,tensor")
    for dst in targets:
        assert fan.plan(shape, "f32", partial, dst).steps == plan_reshard(
            shape, "f32", partial, dst).steps
    # a budget too small for the planner's searches: every pair goes to the planner
    small = FanOut(budget=20)
    for dst in targets[1:]:
        assert small.plan(shape, "bf16", src, dst) == plan_reshard(shape, "bf16", src, dst,
                                                                   budget=20)
    assert small.fallbacks == len(targets) - 1
