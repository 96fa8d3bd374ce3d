"""Invariants of propagation on random programs (tests/programs.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from tests.programs import modules

SETTINGS = settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def propagate(text: str, pipeline: str = "propagate") -> str:
    load_all_passes()
    module = parse_module(text)
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return print_module(module)


def user_mappings(module):
    """(value key, mapping) for every sharding written on an argument or op result."""
    out = []
    for f in module.functions.values():
        for i, a in enumerate(f.args):
            out.append(((f.name, "arg", i), a.mapping))
        for k, op in enumerate(f.body):
            for j, r in enumerate(op.results):
                out.append(((f.name, k, j), r.mapping))
    return out


def atoms(a, b, mesh):
    """Both axis lists cut at every boundary either uses (`"x"` = `"x":(1)2, "x":(2)2`)."""
    cuts: dict[str, set[int]] = {}
    for r in (*a, *b):
        cuts.setdefault(r.name, set()).update(r.interval(mesh))

    def cut(refs):
        out = []
        for r in refs:
            lo, hi = r.interval(mesh)
            points = sorted(c for c in cuts[r.name] if lo <= c <= hi)
            out.extend((r.name, x, y) for x, y in zip(points, points[1:]))
        return out

    return cut(a), cut(b)


def live_shardings(text: str) -> list[str]:
    """Every live value's sharding (dead ops are erased by propagation, as in Shardy)."""
    from shardc.passes.propagation.liveness import dead_ops

    module = parse_module(text)
    out = []
    for f in module.functions.values():
        out.extend(str(a.mapping) for a in f.args)
        out.extend(str(t) for t in f.result_types)
        dead = dead_ops(f)
        out.extend(str(r.mapping) for op in f.body if id(op) not in dead for r in op.results)
    return out


@SETTINGS
@given(modules(max_ops=10))
def test_propagation_is_idempotent(module) -> None:
    once = propagate(print_module(module))
    assert live_shardings(propagate(once)) == live_shardings(once)


@SETTINGS
@given(modules(max_ops=10))
def test_closed_dims_never_change_and_open_dims_only_grow(module) -> None:
    before = dict(user_mappings(module))
    after_module = parse_module(propagate(print_module(module)))  # parsing re-validates
    after = dict(user_mappings(after_module))
    for key, m in before.items():
        if m is None:
            continue
        new = after[key]
        assert new is not None and new.mesh == m.mesh
        for d, (old_dim, new_dim) in enumerate(zip(m.dims, new.dims)):
            if old_dim.is_closed:
                assert new_dim.axes == old_dim.axes, (key, d, str(m), str(new))
                assert new_dim.is_closed
            else:
                old_atoms, new_atoms = atoms(old_dim.axes, new_dim.axes, m.mesh)
                assert new_atoms[: len(old_atoms)] == old_atoms, (key, d, str(m), str(new))
        assert set(m.replicated) <= set(new.replicated) or not m.replicated


@SETTINGS
@given(modules(max_ops=10))
def test_no_axis_is_used_twice_and_results_validate(module) -> None:
    text = propagate(print_module(module), "propagation-pipeline,close-shardings")
    result = parse_module(text)  # NamedMapping validation: no duplicate/overlapping axes
    for _, m in user_mappings(result):
        assert m is not None and m.is_fully_resolved
        used = [(a.name, a.interval(m.mesh)) for a in [*m.used_axes(), *m.replicated]]
        assert len(used) == len(set(used))
