"""Shardy's propagation-edge debug attributes: well-formed ones are kept, ill-formed ones are
located errors (the error cases: tests/filecheck/propagation/propagation_edges_errors.mlir)."""

from __future__ import annotations

import pytest

from shardc.api import parse
from shardc.ir.diagnostics import VerifyError
from shardc.ir.propagation_edges import parse_edges

OK = """sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @ok(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"x" = operand-0 -> [operand-1, result-0]}]}, {step-3 = [{"y":(1)2 = result-0 -> [operand-0]}]}]>, sdy.result_propagation_edges = [#sdy.propagation_edges<[{step-1 = [{"y" = operand-0 -> [result-0]}]}]>, #sdy.propagation_edges<[]>], sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


def test_well_formed_edges_are_kept():
    module = parse(OK, "ok.mlir")
    (add, _) = module.functions["ok"].body
    assert "sdy.propagation_edges" in add.attributes


def test_parse_edges():
    steps = parse_edges(
        '#sdy.propagation_edges<[{step-5 = [{"x" = operand-1 -> [result-0, operand-0]}]}]>'
    )
    assert [s.index for s in steps] == [5]
    (edge,) = steps[0].edges
    assert edge.axis == "x" and edge.source == ("operand", 1)
    assert edge.targets == (("result", 0), ("operand", 0))


@pytest.mark.parametrize(
    "text",
    [
        "#sdy.propagation_edges<[{step-1 = [{x = operand-0 -> [result-0]}]}]>",
        '#sdy.propagation_edges<[{step-1 = [{"x" = operand-0 -> result-0}]}]>',
        '#sdy.propagation_edges<[{step-1 = [{"x" = operand-0 -> [result-0]}]}',
        '#sdy.propagation_edges<[{step-1 = [{"x" = operand-0 -> [result-0]}]}] extra>',
        "#sdy.propagation_edges<[{step-1 = [{\"x\" = operand-0 -> [result-0]}]}]>"[:-3] + "$>",
    ],
)
def test_malformed_edges_are_errors(text):
    with pytest.raises(VerifyError):
        parse_edges(text)
