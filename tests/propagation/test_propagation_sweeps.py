"""The driver's sweeps that pop only what changed (passes/propagation/sweeps.py) make the visits
whole sweeps of the walk make, in the same order, and so the same program: every program of the
zoo and a deep MLP are propagated both ways (whole sweeps forced by marking the walk unordered,
as a walk with an item twice is) and compared visit by visit; and `_sweep_some`, whatever its
visits put back, pops what one heap of its queued orders and of those put back would."""

from __future__ import annotations

import heapq
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.ir.builder import Builder
from shardc.ir.core import Module
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.propagation.driver import Driver
from shardc.passes.propagation.state import PropagationState, Site
from shardc.passes.propagation.sweeps import Sweeps

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


class _Item:
    """A walk item as `Driver._notify` and `_sweep_some` see it (not an op: notified as is)."""

    def __init__(self, order: int) -> None:
        self.order = order
        self.queued = False


class _Sweeper(Sweeps):
    """`_sweep_some` with `Driver._notify`, each item's first visit putting back `puts[order]`."""

    _notify = Driver._notify

    def __init__(self, n: int, puts: dict[int, list[int]]) -> None:
        self.state = SimpleNamespace(by_order=[_Item(i) for i in range(n)])
        self._current = None
        self._puts = puts
        self.popped: list[int] = []

    def _pop(self, item: _Item) -> bool:  # type: ignore[override]
        first = item.order not in self.popped
        self.popped.append(item.order)
        self._current = item
        for order in self._puts.get(item.order, []) if first else []:
            self._notify(self.state.by_order[order])
        self._current = None
        return False


def _one_heap(n: int, queued: list[int], puts: dict[int, list[int]]) -> list[int]:
    """The pops of one heap of the queued orders and of what is put back ahead of the cursor
    (the sweep before its queued list and its heap were split): the order `_sweep_some` keeps."""
    heap, stack, popped, marked = list(queued), [], [], set(queued)
    cursor = -1
    while stack or heap:
        if stack:
            order = stack.pop()
        else:
            order = cursor = heapq.heappop(heap)
        marked.discard(order)
        first = order not in popped
        popped.append(order)
        for put in puts.get(order, []) if first else []:
            if put == order or put in marked:
                continue
            marked.add(put)
            (heapq.heappush(heap, put) if put > cursor else stack.append(put))
    return popped


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n),
    st.sets(st.integers(0, n - 1)),
    st.dictionaries(st.integers(0, n - 1), st.lists(st.integers(0, n - 1), max_size=4)))))
def test_sweep_some_pops_as_one_heap(case: tuple[int, set[int], dict[int, list[int]]]) -> None:
    n, queued, puts = case
    sweeper = _Sweeper(n, puts)
    ordered = sorted(queued)
    for order in ordered:
        sweeper.state.by_order[order].queued = True
    sweeper._sweep_some(list(ordered))  # (the sweep may use up its list)
    assert sweeper.popped == _one_heap(n, ordered, puts)
    assert not any(item.queued for item in sweeper.state.by_order)
