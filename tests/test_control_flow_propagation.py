"""`while` and `case` propagate like Shardy's data-flow ops.

tests/data/control/*.mlir are native programs whose regions are outlined into functions; each is
the hand-written twin of a StableHLO program with inline regions: JAX's (tests/data/stablehlo,
with Shardy's answer stored in extras/<name>.open.mlir) or ours (tests/data/control/shardy/,
propagated here by jaxlib's Shardy in-process). Every value, inside the regions too, must get
Shardy's sharding (tests/shardy_regions.py compares them in Shardy's print order).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from ir.parser import parse_module
from ir.printer import print_module
from passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from tests.shardy_regions import compare_flat, native_flat, shardy_flat

DATA = Path(__file__).parent / "data"
STORED = ["while_loop", "cond_switch"]
LIVE = ["while_captures", "case_sources", "scan_like", "nested"]


def propagated(name: str, pipeline: str = "propagation-pipeline"):
    load_all_passes()
    module = parse_module((DATA / "control" / f"{name}.mlir").read_text())
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return module


@pytest.mark.parametrize("name", STORED)
def test_jax_programs_match_stored_shardy(name: str) -> None:
    pytest.importorskip("jax")
    ours = native_flat(propagated(name))
    theirs = shardy_flat((DATA / "stablehlo" / "extras" / f"{name}.open.mlir").read_text())
    compared, differences = compare_flat(ours, theirs)
    assert not differences, "\n".join(differences)
    assert compared >= 18
    assert sum(1 for _, values in ours for v in values if v is not None) >= 8


@functools.cache
def _shardy_pipeline() -> str:
    from tests.shardy_compare import shardy_pipeline_until_propagation

    # The edges' shardings are moved back onto the while/case ops so they can be read.
    return shardy_pipeline_until_propagation()[:-1] + ",func.func(sdy-sink-data-flow-edges))"


@pytest.mark.parametrize("name", LIVE)
def test_programs_match_live_shardy(name: str) -> None:
    pytest.importorskip("jax")
    from tests.shardy_compare import run_shardy

    text = (DATA / "control" / "shardy" / f"{name}.mlir").read_text()
    theirs = shardy_flat(run_shardy(text, _shardy_pipeline()))
    ours = native_flat(propagated(name))
    compared, differences = compare_flat(ours, theirs)
    assert not differences, "\n".join(differences)
    assert compared >= 10


def test_comparison_sees_a_difference() -> None:
    """The comparison is not vacuous: a changed sharding inside a region is reported."""
    pytest.importorskip("jax")
    ours = native_flat(propagated("cond_switch"))
    theirs = shardy_flat((DATA / "stablehlo" / "extras" / "cond_switch.open.mlir").read_text())
    k = next(i for i, (name, _) in enumerate(ours) if name == "transpose")
    ours[k] = ("transpose", ['<@mesh, [{"dp", ?}, {"tp", ?}]>'])
    _, differences = compare_flat(ours, theirs)
    assert len(differences) == 1 and "transpose" in differences[0]


def test_carried_values_share_one_sharding() -> None:
    """Result k, cond argument k, body argument k and body result k get one sharding; a
    captured operand and the arguments it feeds are one value."""
    module = propagated("while_captures")
    main = module.functions["main"]
    loop = next(op for op in main.body if op.name == "while")
    cond = module.functions["main_while_cond"]
    body = module.functions["main_while_body"]
    for k, r in enumerate(loop.results):
        assert cond.args[k].mapping == r.mapping == body.args[k].mapping
        assert getattr(body.result_types[k], "mapping", None) == r.mapping
    for j in range(3, 5):
        assert loop.operand(j).mapping == cond.args[j].mapping == body.args[j].mapping
    # The bias is sharded only through its use inside the body.
    assert str(main.args[2].mapping) == '<@mesh, [{"tp", ?}]>'
    # The carried operand keeps its closed sharding; the loop value gains "tp" from the body.
    assert str(loop.operand(1).mapping) == '<@mesh, [{"dp"}, {}]>'
    assert str(loop.results[1].mapping) == '<@mesh, [{"dp", ?}, {"tp", ?}]>'


def test_propagation_is_idempotent() -> None:
    once = propagated("nested")
    text = print_module(once)
    PassManager(parse_pipeline("propagate")).run(once, PassContext())
    assert print_module(once) == text


def test_conflicting_linked_shardings_are_an_error() -> None:
    from ir.diagnostics import ShardcError

    text = """
mesh @m = <["x"=2]>
func @main(%x: tensor<8xf32, <@m, [{"x"}]>>) -> tensor<8xf32> {
  %0 = case %i, %x {branches = [@b]} : tensor<8xf32>
  return %0
}
func private @b(%x: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32> {
  return %x
}
""".replace("%i, ", "%c, ").replace(
        "  %0 = case", '  %c = constant {value = dense<0>} : tensor<i32>\n  %0 = case'
    )
    load_all_passes()
    module = parse_module(text)
    with pytest.raises(ShardcError, match="different shardings"):
        PassManager(parse_pipeline("propagate")).run(module, PassContext())
