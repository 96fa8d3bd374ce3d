"""The driver's sweeps that pop only what changed (passes/propagation/sweeps.py) make the visits
whole sweeps of the walk make, in the same order, and so the same program: every program of the
zoo and a deep MLP are propagated both ways (whole sweeps forced by marking the walk unordered,
as a walk with an item twice is) and compared visit by visit."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.ir.builder import Builder
from shardc.ir.core import Module
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.propagation.driver import Driver
from shardc.passes.propagation.state import PropagationState, Site

ROOT = Path(__file__).resolve().parents[2]
ZOO = sorted((ROOT / "examples").glob("*.mlir")) + sorted((ROOT / "examples" / "jax").glob("*.mlir"))


def _mlp(layers: int) -> str:
    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((8, 16), "f32", mesh.spec("dp", None), name="x")
        for i in range(layers):
            w1 = f.arg((16, 32), "f32", mesh.spec(None, "tp"), name=f"w1_{i}")
            w2 = f.arg((32, 16), "f32", mesh.spec("tp", None), name=f"w2_{i}")
            x = b.add(x, b.matmul(b.tanh(b.matmul(x, w1)), w2))
        f.returns(x)
    return print_module(b.module)


def _load(text: str, name: str) -> Module:
    if "stablehlo." in text or "sdy." in text:
        from shardc.stablehlo import import_stablehlo

        return import_stablehlo(text, name)
    return parse_module(text, name)


def _propagate(text: str, name: str, whole: bool,
               monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[tuple]]:
    """The propagated program and its visits: (stage, the item's place in the walk, changed)."""
    visits: list[tuple] = []
    visit, walk = Driver._visit, PropagationState.walk

    def traced(self: Driver, item: object) -> bool:
        before = self.state.visits
        changed = visit(self, item)  # type: ignore[arg-type]
        if self.state.visits != before:
            kind = "op" if item.__class__ is Site else "edge"
            visits.append((self.stage, kind, item.order, changed))  # type: ignore[attr-defined]
        return changed

    def whole_walk(self: PropagationState) -> list:
        out = walk(self)
        self.ordered = False  # what a walk with an item twice makes the driver do
        return out

    with monkeypatch.context() as m:
        m.setattr(Driver, "_visit", traced)
        if whole:
            m.setattr(PropagationState, "walk", whole_walk)
        module = _load(text, name)
        load_all_passes()
        PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    return print_module(module), visits


CASES = [pytest.param(p.read_text(), str(p), id=f"{p.parent.name}/{p.stem}") for p in ZOO]
CASES.append(pytest.param(_mlp(6), "mlp6", id="mlp6"))


@pytest.mark.parametrize("text,name", CASES)
def test_partial_sweeps_visit_as_whole_sweeps(text: str, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    partial, partial_visits = _propagate(text, name, False, monkeypatch)
    whole, whole_visits = _propagate(text, name, True, monkeypatch)
    assert partial_visits == whole_visits
    assert partial == whole
    assert any(changed for *_, changed in partial_visits)  # (something was propagated)
