"""A data-flow edge none of whose values changed since the driver's last visit of it changed
nothing is not computed again (passes/propagation/driver.py: `RegionEdge.clean`): the visits (the
report's `op_visits` counts them) and the propagated program are those of computing every visit,
and fewer edges are computed. Programs with edges: the zoo's JAX training steps (call sites become
named computations) and the `while`/`case` programs of the FileCheck tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.ir.core import Module
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.propagation import driver as driver_module
from shardc.passes.propagation.data_flow import RegionEdge
from shardc.passes.propagation.driver import Driver
from shardc.passes.propagation.state import Site
from shardc.stablehlo import import_stablehlo

ROOT = Path(__file__).resolve().parents[2]
ZOO = sorted((ROOT / "examples" / "jax").glob("gpt_train_*.mlir"))
WHILE_CASE = ROOT / "tests" / "filecheck" / "propagation" / "while_case_propagate.mlir"


def _load(text: str, name: str) -> Module:
    if "stablehlo." in text or "sdy." in text:
        return import_stablehlo(text, name)
    return parse_module(text, name)


def _propagate(text: str, name: str, skip: bool, pipeline: str,
               monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[tuple], int, int]:
    """The propagated program, its visits (stage, kind, place in the walk, changed), the visits
    of edges and how many of them were computed."""
    visits: list[tuple] = []
    computed = [0]
    visit, compute = Driver._visit, driver_module.visit_region_edge

    def traced(self: Driver, item: object) -> bool:
        if not skip and item.__class__ is RegionEdge:
            item.clean = None  # type: ignore[attr-defined]  # (every visit computed)
        before = self.state.visits
        changed = visit(self, item)  # type: ignore[arg-type]
        if self.state.visits != before:
            kind = "op" if item.__class__ is Site else item.__class__.__name__
            visits.append((self.stage, kind, item.order, changed))  # type: ignore[attr-defined]
        return changed

    def counted(p: Driver, edge: RegionEdge) -> bool:
        computed[0] += 1
        return compute(p, edge)

    with monkeypatch.context() as m:
        m.setattr(Driver, "_visit", traced)
        m.setattr(driver_module, "visit_region_edge", counted)
        module = _load(text, name)
        load_all_passes()
        PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    edges = sum(1 for v in visits if v[1] == "RegionEdge")
    return print_module(module), visits, edges, computed[0]


CASES = [pytest.param(p.read_text(), str(p), "propagation-pipeline", id=p.stem) for p in ZOO]
CASES += [pytest.param(text, f"{WHILE_CASE}:{i}", "propagate", id=f"while_case_{i}")
          for i, text in enumerate(WHILE_CASE.read_text().split("// -----"))]


@pytest.mark.parametrize("text,name,pipeline", CASES)
def test_clean_edges_are_not_computed_again(text: str, name: str, pipeline: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    got, visits, edges, computed = _propagate(text, name, True, pipeline, monkeypatch)
    want, want_visits, want_edges, want_computed = _propagate(text, name, False, pipeline,
                                                              monkeypatch)
    assert got == want
    assert visits == want_visits
    assert edges > 0 and want_computed == want_edges  # (every visit computed without the skip)
    assert computed <= edges


def test_the_zoo_skips_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The training steps revisit edges whose values did not change: some are skipped."""
    text = ZOO[0].read_text()
    _, _, edges, computed = _propagate(text, str(ZOO[0]), True, "propagation-pipeline",
                                       monkeypatch)
    assert computed < edges
