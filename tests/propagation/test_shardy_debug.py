"""Shardy's debugging options (passes/propagation/shardy_debug*.py): where an axis came from in a
step (`source_map`: sub-axis merges, the prefix search), the attributes' text, and the recorder's
structured API (what `explain` tools read)."""

from __future__ import annotations

import pytest

from shardc.api import opt, parse
from shardc.ir.attributes import OpaqueAttr
from shardc.ir.diagnostics import PassError, VerifyError
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.propagation_edges import parse_edges, split_array
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
)
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.passes.propagation.shardy_debug import (
    OriginSharding,
    PropagationEdge,
    ShardyDebugInfo,
    source_map,
)
from shardc.passes.propagation.shardy_debug_text import edges_text, max_step, origins_text

C = DeviceMesh("m", (("c", 8), ("d", 2)))


def sub(pre: int, size: int) -> AxisRef:
    return AxisRef("c", pre, size)


def tensor(**factors: tuple[AxisRef, ...]) -> TensorFactorShardings:
    """Factors named f0, f1, ... -> their axes (open)."""
    return TensorFactorShardings({int(k[1:]): FactorSharding(v) for k, v in factors.items()})


# ----- source_map ---------------------------------------------------------------------------


def test_an_axis_comes_from_the_first_operand_that_has_it():
    rule = parse_rule("([i], [i])->([i]) {i=8}")
    old = ShardingProjection([tensor(f0=()), tensor(f0=(AxisRef("d"),))], [tensor(f0=())])
    new = ShardingProjection([tensor(f0=(AxisRef("d"),))] * 2, [tensor(f0=(AxisRef("d"),))])
    operands, results = source_map(old, new, rule, C)
    assert operands == [{AxisRef("d"): ("operand", 1)}, {}]  # operand 1 did not change
    assert results == [{AxisRef("d"): ("operand", 1)}]


def test_the_source_is_found_by_prefix_and_operands_come_before_results():
    # operand 1 had "c":(1)4 and the result "c":(1)2: the new "c":(1)2 is a prefix of both
    rule = parse_rule("([i], [i])->([i]) {i=8}")
    old = ShardingProjection([tensor(f0=()), tensor(f0=(sub(1, 4),))], [tensor(f0=(sub(1, 2),))])
    new = ShardingProjection([tensor(f0=(sub(1, 2),)), tensor(f0=(sub(1, 4),))],
                             [tensor(f0=(sub(1, 2),))])
    operands, results = source_map(old, new, rule, C)
    assert operands[0] == {sub(1, 2): ("operand", 1)}
    assert results == [{}]
    # nothing old starts with the new axes: no source, nothing recorded
    lone = ShardingProjection([tensor(f0=(AxisRef("d"),)), tensor(f0=())], [tensor(f0=())])
    assert source_map(ShardingProjection([tensor(f0=())] * 2, [tensor(f0=())]), lone,
                      rule, C) == ([{}, {}], [{}])


def test_adjacent_sub_axes_of_two_factors_of_a_dim_merge():
    # reshape 2x4 -> 8: the result dim holds factors i then j; they gain "c":(1)2 and "c":(2)4,
    # which merge into the whole axis "c" (size 8), recorded once in place of "c":(1)2
    rule = parse_rule("([i], [j])->([ij]) {i=2, j=4}")
    mk = lambda i, j: ShardingProjection([tensor(f0=i), tensor(f1=j)], [tensor(f0=i, f1=j)])  # noqa: E731
    old = ShardingProjection([tensor(f0=(sub(1, 2),)), tensor(f1=(sub(2, 4),))],
                             [tensor(f0=(), f1=())])
    new = mk((sub(1, 2),), (sub(2, 4),))
    operands, results = source_map(old, new, rule, C)
    assert results == [{AxisRef("c"): ("operand", 1)}]
    assert operands == [{}, {}]
    # not adjacent ("c":(1)2 then "c":(4)2): each axis stays its own entry
    old = ShardingProjection([tensor(f0=(sub(1, 2),)), tensor(f1=(sub(4, 2),))],
                             [tensor(f0=(), f1=())])
    _, results = source_map(old, mk((sub(1, 2),), (sub(4, 2),)), rule, C)
    assert results == [{sub(1, 2): ("operand", 0), sub(4, 2): ("operand", 1)}]


def test_only_axes_past_the_old_ones_are_recorded():
    rule = parse_rule("([i])->([i]) {i=16}")
    old = ShardingProjection([tensor(f0=(AxisRef("d"), sub(1, 2)))], [tensor(f0=(AxisRef("d"),))])
    new = ShardingProjection([tensor(f0=(AxisRef("d"), sub(1, 2)))],
                             [tensor(f0=(AxisRef("d"), sub(1, 2)))])
    assert source_map(old, new, rule, C) == ([{}], [{sub(1, 2): ("operand", 0)}])


# ----- text ----------------------------------------------------------------------------------


def test_origins_text_sorts_quotes_and_names_self():
    text = origins_text({AxisRef("y"): "input: 0", sub(1, 2): "constraint_1",
                         AxisRef("x-1"): "output: 0"}, self_name="input: 0")
    assert text == '{"c:(1)2" = "constraint_1", "x-1" = "output: 0", y = "self"}'


def test_edges_text_keeps_the_first_step_and_groups_targets():
    e = [
        (AxisRef("c", 4, 2), ("operand", 0), ("result", 0), 3),
        (AxisRef("c", 1, 4), ("operand", 0), ("result", 0), 3),
        (AxisRef("a"), ("result", 0), ("operand", 1), 1),
        (AxisRef("a"), ("result", 0), ("operand", 0), 1),
        (AxisRef("a"), ("result", 0), ("operand", 0), 5),  # synced again later: dropped
    ]
    assert edges_text(e) == (
        '#sdy.propagation_edges<[{step-1 = [{"a" = result-0 -> [operand-0, operand-1]}]}, '
        '{step-3 = [{"c":(1)4 = operand-0 -> [result-0]}, {"c":(4)2 = operand-0 -> '
        '[result-0]}]}]>'
    )
    steps = parse_edges(edges_text(e))  # and it reads back
    assert [s.index for s in steps] == [1, 3]
    assert steps[1].edges[0].axis_ref == AxisRef("c", 1, 4)


def test_parse_edges_keeps_sub_axes_and_split_array_respects_nesting():
    (step,) = parse_edges('#sdy.propagation_edges<[{step-2 = [{"x":(2)4 = operand-0 -> '
                          '[result-0]}]}]>')
    assert step.edges[0].sub_axis == (2, 4) and step.edges[0].axis == "x"
    assert split_array('[{a = "x, y"}, #sdy.propagation_edges<[{step-0 = [{"a" = operand-0 -> '
                       '[result-0, result-1]}]}]>, {}]') == [
        '{a = "x, y"}',
        '#sdy.propagation_edges<[{step-0 = [{"a" = operand-0 -> [result-0, result-1]}]}]>',
        "{}",
    ]
    assert split_array("[]") == []
    with pytest.raises(VerifyError):
        split_array("{}")


def test_a_pass_numbers_its_steps_after_the_largest_written():
    module = parse(PROGRAM, "p.mlir")
    add = module.functions["main"].body.first
    add.attributes["sdy.propagation_edges"] = OpaqueAttr(
        '#sdy.propagation_edges<[{step-7 = [{"x" = operand-0 -> [result-0]}]}]>')
    assert max_step(module.walk()) == 7
    assert ShardyDebugInfo(module, False, True).step == 8
    add.attributes["sdy.propagation_edges"] = OpaqueAttr("#sdy.propagation_edges<[{step-")
    with pytest.raises(PassError, match="sdy.propagation_edges"):
        max_step(module.walk())


# ----- the recorder's API --------------------------------------------------------------------

PROGRAM = """sdy.mesh @m = <["x"=2, "y"=4]>
func.func @main(%a: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>},
                %w: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"y"}]>})
    -> tensor<8x32xf32> {
  %0 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = stablehlo.tanh %0 : tensor<8x32xf32>
  return %1 : tensor<8x32xf32>
}
"""


def test_the_recorder_gives_edges_and_origins_as_structures():
    module = parse(PROGRAM, "p.mlir")
    ctx = opt(module, "sdy-aggressive-propagate{debug-sharding-origins=true "
                      "debug-propagation-edge-sharding=true}")
    info = ctx.data["shardy_debug"]
    main = module.functions["main"]
    dot, tanh, _ = main.body
    assert info.edges_of(dot) == [
        PropagationEdge(AxisRef("x"), ("operand", 0), ("result", 0), 0),
        PropagationEdge(AxisRef("y"), ("operand", 1), ("result", 0), 0),
    ]
    assert [e.step for e in info.edges_of(tanh)] == [1, 1]
    assert [e.step for e in info.edges_of(main)] == [2, 2]  # the result, synced at the end
    assert info.steps == 3
    assert info.origins_of(tanh.results[0]) == {
        AxisRef("x"): OriginSharding("input", 0), AxisRef("y"): OriginSharding("input", 1)}
    assert OriginSharding("mc_output", 1, 3).name == "mc_3_output: 1"
    assert {v.name_hint for v, _ in info.origins()} >= {"a", "w"}
    assert "sdy.propagation_edges" in main.res_attrs[0]
