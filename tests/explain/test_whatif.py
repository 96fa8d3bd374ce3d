"""The what-if engine measures what compiling measures (compiler/explain/whatif/).

Every change the fast way measures (re-propagating from the changed value, the back end on the
region it reached: engine.py) must give the byte, ring-byte and peak-memory changes that
compiling the changed program gives; the suggestions too; and the peak-memory timeline must be
the cost report's peak.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.explain.collectives import explain_collectives
from shardc.explain.collectives_report import collectives_report
from shardc.explain.decisions import Names
from shardc.explain.whatif.baseline import compile_baseline
from shardc.explain.whatif.candidates import candidates
from shardc.explain.whatif.changes import Change
from shardc.explain.whatif.engine import RECOMPILED, REPROPAGATED, WhatIf
from shardc.explain.whatif.memory import Timeline
from shardc.ir.mapping import NamedMapping
from shardc.models.catalogue import MODELS
from shardc.passes.analysis.cost import peak_memory
from tests.explain.whatif_programs import roles, sharded_programs


def _effect(m) -> tuple[int, int, int]:
    return (m.comm_delta, m.ring_delta, m.peak_delta)


def _recompiled(whatif: WhatIf, change: Change):
    """The change measured by compiling the changed program (the engine's slow way)."""
    return whatif._recompile(change)  # noqa: SLF001 - the reference the fast way must match


@st.composite
def programs_and_changes(draw):
    module, values = draw(sharded_programs())
    base = compile_baseline(module)
    func = base.module.main
    kind = draw(st.sampled_from(("constraint", "in_sharding", "out_sharding")))
    mesh = next(iter(base.module.meshes.values()))
    if kind == "in_sharding":
        i = draw(st.integers(0, len(func.args) - 1))
        arg = func.args[i]
        role = "data" if i == 0 else "weight"
        change = Change.in_sharding(func, i, draw(roles(mesh, arg.type.shape, role)), f"%a{i}")
    elif kind == "out_sharding":
        i = draw(st.integers(0, len(func.result_types) - 1))
        shape = func.result_types[i].shape
        change = Change.out_sharding(func, i, draw(roles(mesh, shape, "data")))
    else:
        originals = [v for v in (*func.args, *(r for op in func.body for r in op.results))
                     if base.input_value(v) is not None and v.uses]
        v = draw(st.sampled_from(originals))
        role = draw(st.sampled_from(("data", "weight")))
        change = Change.constraint(v, draw(roles(mesh, v.type.shape, role)), "%v")
    return base, change


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(programs_and_changes())
def test_a_re_propagated_change_is_what_compiling_it_gives(case) -> None:
    base, change = case
    whatif = WhatIf(base, recompile_ops=0)
    fast = whatif.measure(change)
    if fast is None:
        return  # the fast way does not apply: the engine would recompile (tested below)
    assert fast.how == REPROPAGATED
    slow = _recompiled(whatif, change)
    assert slow is not None
    assert _effect(fast) == _effect(slow), change.text()


def test_the_random_programs_mostly_take_the_fast_way() -> None:
    """The property above is not vacuous: most of its cases are measured the fast way."""
    fast = total = 0

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs_and_changes())
    def count(case) -> None:
        nonlocal fast, total
        base, change = case
        total += 1
        fast += WhatIf(base, recompile_ops=0).measure(change) is not None

    count()
    assert total == 40 and fast >= 20, (fast, total)


@pytest.mark.parametrize("model, preset, train", [
    ("mlp", "fsdp", None), ("mlp", "dp_tp", "sgd"), ("transformer", "dp_tp", None),
    ("gpt", "tp", None), ("embedding", "tp", None),
])
def test_every_suggestion_is_what_compiling_it_gives(model, preset, train) -> None:
    report = collectives_report(MODELS[model].build(preset, train=train), suggest_n=3,
                                lint=False)
    whatif = WhatIf(report.base)
    for found in report.suggestions:
        for s in found:
            assert s.measured.comm_delta < 0
            slow = _recompiled(whatif, s.change)
            assert slow is not None and _effect(slow) == _effect(s.measured), s.text()


def test_every_candidate_of_a_zoo_model_is_measured_right() -> None:
    """All candidates (not only the helpful ones) of a model the fast way applies to."""
    base = compile_baseline(MODELS["mlp"].build("dp_tp", train="sgd"))
    whatif = WhatIf(base)
    assert whatif.why_not_fast is None
    names = Names(base.module)
    seen = 0
    for e in explain_collectives(base.module, base.context.data["origins"]):
        for change in candidates(whatif, e, names):
            m = whatif.measure(change)
            if m is None:
                continue
            seen += 1
            assert m.how in (REPROPAGATED, RECOMPILED)
            assert _effect(m) == _effect(_recompiled(whatif, change)), change.text()
    assert seen


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_timeline_peak_is_the_cost_reports(model) -> None:
    spec = MODELS[model]
    for preset in spec.presets:
        base = compile_baseline(spec.build(preset, train="sgd"))
        order = {id(op): k for k, op in enumerate(base.propagated.main.body)}

        def index(op, base=base, order=order):
            copy = base.copy_op(op)
            return None if copy is None else order.get(id(copy))

        line = Timeline(base.module.main, index)
        assert line.peak == peak_memory(base.module, base.module.main)


def test_without_recompile_budget_a_slow_change_is_not_measured() -> None:
    """A change the fast way cannot measure is not suggested without a recompile to measure
    it (never a guess)."""
    base = compile_baseline(MODELS["mlp"].build("fsdp"))  # propagation makes choices
    whatif = WhatIf(base, recompile_ops=0)
    assert whatif.why_not_fast is not None
    func = base.module.main
    arg = func.args[0]
    change = Change.in_sharding(func, 0, arg.mapping.replace(dims=tuple(
        d.__class__((), True) for d in arg.mapping.dims)), "%x")
    assert whatif.measure(change) is None
    assert sum(whatif.counts.values()) == 1


def test_a_measurement_does_not_depend_on_the_ones_before() -> None:
    """Measuring many changes with one engine (re-propagations stopped at a choice, undone)
    gives what a fresh engine gives for each."""
    base = compile_baseline(MODELS["transformer"].build("dp_tp", train="sgd"))
    shared = WhatIf(base, recompile_ops=0)
    names = Names(base.module)
    changes = [c for e in explain_collectives(base.module, base.context.data["origins"])
               for c in candidates(shared, e, names)]
    func = base.module.main
    mesh = next(iter(base.module.meshes.values()))
    for i, arg in enumerate(func.args[:6]):  # and some that re-propagate
        changes.append(Change.in_sharding(func, i, NamedMapping.fully_replicated(
            mesh, arg.type.rank), names(arg)))
    assert changes
    for change in changes:
        first = shared.measure(change, recompile=False)
        again = WhatIf(base, recompile_ops=0).measure(change, recompile=False)
        assert (first is None) == (again is None), change.text()
        if first is not None:
            assert _effect(first) == _effect(again), change.text()


def test_suggestions_on_random_programs_are_what_compiling_them_gives() -> None:
    checked = 0

    @settings(max_examples=15, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(sharded_programs())
    def check(case) -> None:
        nonlocal checked
        module, _ = case
        report = collectives_report(module, suggest_n=2, lint=False, recompile_ops=2_000)
        whatif = WhatIf(report.base)
        for found in report.suggestions:
            for s in found:
                slow = _recompiled(whatif, s.change)
                assert slow is not None and _effect(slow) == _effect(s.measured), s.text()
                checked += 1

    check()
    assert checked >= 10, checked  # (21 suggestions in these 15 programs when written)
