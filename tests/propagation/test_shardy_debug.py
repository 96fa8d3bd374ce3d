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
    assert info.value_of(dot, ("operand", 1)) is main.args[1]
    assert info.value_of(main, ("result", 0)) is tanh.results[0]  # what the result returns
    assert [e.step for e in info.edges_of(main)] == [2, 2]  # the result, synced at the end
    assert info.steps == 3
    assert info.origins_of(tanh.results[0]) == {
        AxisRef("x"): OriginSharding("input", 0), AxisRef("y"): OriginSharding("input", 1)}
    assert OriginSharding("mc_output", 1, 3).name == "mc_3_output: 1"
    assert {v.name_hint for v, _ in info.origins()} >= {"a", "w"}
    assert "sdy.propagation_edges" in main.res_attrs[0]


# ----- the pipelines -------------------------------------------------------------------------

LOOP = """sdy.mesh @m = <["x"=2, "y"=4]>
func.func @main(%a: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) -> tensor<8x16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %v = %a) : tensor<i32>, tensor<8x16xf32>
    cond {
      %c4 = stablehlo.constant dense<4> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %c4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = stablehlo.sine %v : tensor<8x16xf32>
      stablehlo.return %n, %s : tensor<i32>, tensor<8x16xf32>
    }
  %r = stablehlo.negate %0#1 : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
"""
BOTH = "debug-sharding-origins=true debug-propagation-edge-sharding=true"


def _text(value) -> str:
    return value.text if isinstance(value, OpaqueAttr) else str(value)


def test_the_propagation_pipeline_sinks_what_it_records_onto_data_flow_ops():
    # shardc's own pipelines sink the data-flow edges before propagating: the loop's edge is
    # its owner, and what its steps recorded goes where sdy-sink-data-flow-edges would put it
    module = parse(LOOP, "loop.mlir")
    ctx = opt(module, f"sdy-propagation-pipeline{{{BOTH}}}")
    loop = next(op for op in module.walk() if op.name == "while")
    assert _text(loop.attributes["sdy.result_sharding_origins"]) == '[{x = "input: 0"}]'
    assert _text(loop.attributes["sdy.block_arg_sharding_origins"]) == "[]"
    assert _text(loop.attributes["sdy.result_propagation_edges"]) == (
        '[#sdy.propagation_edges<[{step-0 = [{"x" = operand-0 -> [operand-1, result-0]}]}]>]')
    assert ctx.data["shardy_debug"].edges_of(loop.results[1])[0].step == 0
    negate = next(op for op in module.walk() if op.name == "negate")
    assert _text(negate.attributes["sdy.sharding_origins"]) == '[{x = "input: 0"}]'


def test_the_export_pipeline_keeps_debug_info_through_the_sink_and_drops_it_at_the_end():
    def exported(dump: bool):
        module = parse(LOOP, "loop.mlir")
        opt(module, "sdy-add-data-flow-edges,sdy-aggressive-propagate{debug-sharding-origins=true}")
        flag = str(dump).lower()
        opt(module, f"sdy-export-pipeline{{dump-sharding-origins={flag} inline-meshes=false}}")
        return module

    kept = exported(False)  # without the dump options Shardy's export leaves them on ops
    negate = next(op for op in kept.walk() if op.name == "negate")
    assert "sdy.sharding_origins" in negate.attributes
    loop = next(op for op in kept.walk() if op.name == "while")
    assert "sdy.result_sharding_origins" not in loop.attributes  # the sink dropped the edges'
    gone = exported(True)
    for op in gone.walk():
        assert not any(k.startswith(("sdy.sharding_origins", "sdy.propagation_edges",
                                     "sdy.result_", "sdy.block_arg_")) for k in op.attributes)
    from shardc.passes.reshard.export_pipeline import ExportPipeline

    steps = ExportPipeline(dump_sharding_origins=True).steps()
    assert steps[1] == ("sink-data-flow-edges{sink-debug-sharding-origins=true "
                        "sink-debug-propagation-edge-sharding=false}")
    assert "remove-propagation-debug-info" in steps


def test_a_loop_edge_with_two_sources_fails_verification_as_in_shardy():
    # Shardy's edge of a loop-carried value has two sources (the operand and the body's
    # return), but its data_flow_edge op one operand: Shardy's verifier rejects what its own
    # pass wrote, and so does shardc's, at the loop
    module = parse(LOOP, "loop.mlir")
    with pytest.raises(PassError, match=r"loop.mlir:4:3: .*refers to operand 1, but the op has 1"):
        opt(module, "sdy-add-data-flow-edges,"
                    "sdy-aggressive-propagate{debug-propagation-edge-sharding=true}")
