"""Shardy's collectives beyond the six shardc plans with: several all_to_all moves, reductions
other than a sum, sharded/replicated_to_unreduced, operands without a sharding and reduction
axes the operand is not unreduced on (ir/ops/sharding.py).

Each program runs lowered by the `spmd` pass on the numpy and JAX executors and must equal the
global program (`run_reference`); the verifier cases check what each op accepts and rejects, and
the StableHLO cases that Shardy's syntax of each imports and prints back unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.numpy_exec import NumpyExecutor, run_spmd
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.analysis.cost import collective_report
from shardc.passes.manager import PassManager
from shardc.passes.spmd.spmd import Spmd
from shardc.stablehlo import export_stablehlo, import_stablehlo

PROGRAMS = {
    # all-gather(x) == all-reduce(sharded-to-unreduced(x)) over the same axes.
    "sharded_to_unreduced": """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<16x8xf32, <@m, [{"y", "x"}, {}]>>) -> tensor<16x8xf32, <@m, [{"y"}, {}]>> {
  %0 = tanh %a : tensor<16x8xf32, <@m, [{"y", "x"}, {}]>>
  %1 = sharded_to_unreduced %0 {axes = [["x"], []]} : tensor<16x8xf32, <@m, [{"y"}, {}], unreduced={"x"}>>
  %2 = all_reduce %1 {reduction_axes = ["x"]} : tensor<16x8xf32, <@m, [{"y"}, {}]>>
  return %2
}
""",
    "sharded_to_unreduced_two_dims": """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{}, {}]>> {
  %0 = sharded_to_unreduced %a {axes = [["x"], ["y"]]} : tensor<8x16xf32, <@m, [{}, {}], unreduced={"x", "y"}>>
  %1 = all_reduce %0 {reduction_axes = ["x", "y"]} : tensor<8x16xf32, <@m, [{}, {}]>>
  return %1
}
""",
    # all-reduce(replicated-to-unreduced(x)) == x; here reduced and scattered at once.
    "replicated_to_unreduced": """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = replicated_to_unreduced %a {axes = ["y"]} : tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>
  %1 = reduce_scatter %0 {scatter_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %1
}
""",
    "all_to_all_two_moves": """
mesh @m = <["dp"=2, "tp"=4]>
func @main(%a: tensor<8x8x4x4xf32, <@m, [{"dp"}, {"tp"}, {}, {}]>>) -> tensor<8x8x4x4xf32, <@m, [{}, {}, {"dp"}, {"tp"}]>> {
  %0 = all_to_all %a {params = [{"dp"}: 0->2, {"tp"}: 1->3]} : tensor<8x8x4x4xf32, <@m, [{}, {}, {"dp"}, {"tp"}]>>
  return %0
}
""",
    "all_to_all_moves_backward": """
mesh @m = <["x"=2, "y"=2]>
func @main(%a: tensor<4x6x8x2xf32, <@m, [{}, {"x"}, {"y"}, {}]>>) -> tensor<4x6x8x2xf32, <@m, [{"x"}, {}, {}, {"y"}]>> {
  %0 = all_to_all %a {params = [{"x"}: 1->0, {"y"}: 2->3]} : tensor<4x6x8x2xf32, <@m, [{"x"}, {}, {}, {"y"}]>>
  return %0
}
""",
    "all_reduce_max": """
mesh @m = <["x"=4]>
func @main(%a: tensor<8x6xf32, <@m, [{}, {"x"}]>>) -> tensor<8xf32, <@m, [{}]>> {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %0 = reduce %a, %ninf {dimensions = [1], kind = maximum} : tensor<8xf32, <@m, [{}], unreduced=max{"x"}>>
  %1 = all_reduce %0 {reduction_axes = ["x"], reduction_op = max} : tensor<8xf32, <@m, [{}]>>
  return %1
}
""",
    "reduce_scatter_min": """
mesh @m = <["x"=2, "y"=2]>
func @main(%a: tensor<8x4xf32, <@m, [{"x"}, {}]>>) -> tensor<4xf32, <@m, [{"x"}]>> {
  %inf = constant {value = dense<0x7F800000>} : tensor<f32>
  %0 = reduce %a, %inf {dimensions = [0], kind = minimum} : tensor<4xf32, <@m, [{}], unreduced=min{"x"}>>
  %1 = reduce_scatter %0 {scatter_axes = [["x"]], reduction_op = min} : tensor<4xf32, <@m, [{"x"}]>>
  return %1
}
""",
    # Axes the operand is whole on (Shardy's implicitly partial operand): nothing to reduce.
    "reduction_axes_not_unreduced": """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = all_reduce %a {reduction_axes = ["y"]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %1 = reduce_scatter %0 {scatter_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %1
}
""",
    "operand_without_sharding": """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<8x16xf32>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = all_slice %a {slicing_axes = [["x"], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}
""",
}


def _lower(text: str):
    spmd = parse_module(text)
    PassManager([Spmd()]).run(spmd)
    return parse_module(text), spmd


def _inputs(module) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(a.type.shape).astype(np.float32) for a in module.main.args]


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_numpy_spmd_equals_the_global_program(name: str) -> None:
    g, s = _lower(PROGRAMS[name])
    inputs = _inputs(g)
    want = run_reference(g, inputs)
    _same(run_spmd(s, inputs), want)
    _same(NumpyExecutor(s, general_groups=True).run(inputs), want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jax_spmd_equals_the_global_program(name: str) -> None:
    pytest.importorskip("jax")
    from shardc.executors.jax_exec import JaxExecutor

    g, s = _lower(PROGRAMS[name])
    inputs = _inputs(g)
    _same(JaxExecutor(s).run(inputs), run_reference(g, inputs))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_native_text_round_trips(name: str) -> None:
    module = parse_module(PROGRAMS[name])
    text = print_module(module)
    assert print_module(parse_module(text)) == text


def test_report_counts_local_ops_as_free_and_adds_up_all_to_all_moves() -> None:
    report = collective_report(parse_module(PROGRAMS["sharded_to_unreduced"]))
    kinds = [e["kind"] for e in report["collectives"]]
    assert kinds == ["sharded_to_unreduced", "all_reduce"]
    assert report["collectives"][0]["bytes_per_device"] == 0
    (a2a,) = collective_report(parse_module(PROGRAMS["all_to_all_two_moves"]))["collectives"]
    assert a2a["axes"] == ["dp", "tp"] and a2a["bytes_per_device"] > 0
    # Reducing over axes the operand is whole on moves nothing.
    report = collective_report(parse_module(PROGRAMS["reduction_axes_not_unreduced"]))
    assert [e["bytes_per_device"] for e in report["collectives"]] == [0, 0]


# ----- what the verifiers reject --------------------------------------------------------------

MESH = 'mesh @m = <["x"=2, "y"=4]>\n'


def _one(arg: str, op: str, result: str) -> str:
    return (f"{MESH}func @main(%a: tensor<8x16xf32, {arg}>) -> tensor<8x16xf32> {{\n"
            f"  %0 = {op} : tensor<8x16xf32, {result}>\n  return %0\n}}\n")


@pytest.mark.parametrize(
    "arg, op, result, message",
    [
        ('<@m, [{"x"}, {}]>', 'sharded_to_unreduced %a {axes = [[], ["y"]]}',
         '<@m, [{"x"}, {}], unreduced={"y"}>', "not sharded minor-most"),
        ('<@m, [{"x"}, {}]>', 'sharded_to_unreduced %a {axes = [["x"], []]}',
         '<@m, [{}, {}]>', "does not match"),
        ('<@m, [{"x"}, {}]>', 'replicated_to_unreduced %a {axes = ["x"]}',
         '<@m, [{"x"}, {}]>', "shard the operand"),
        ('<@m, [{"x"}, {}]>', "replicated_to_unreduced %a {axes = []}",
         '<@m, [{"x"}, {}]>', "needs at least one axis"),
        ('<@m, [{"x"}, {"y"}]>', 'all_to_all %a {params = [{"x"}: 0->1, {"y"}: 1->0]}',
         '<@m, [{"y"}, {"x"}]>', "appears in two"),
        ('<@m, [{"x"}, {"y"}]>', 'all_reduce %a {reduction_axes = ["x"]}',
         '<@m, [{"x"}, {"y"}]>', "overlap the operand's dim shardings"),
        ('<@m, [{}, {}], unreduced=max{"x"}>',
         'all_reduce %a {reduction_axes = ["x"], reduction_op = sum}',
         '<@m, [{}, {}]>', "cannot reduce 'max' unreduced axes"),
        # The axis lists themselves, as Shardy's verifier checks them.
        ('<@m, [{}, {"y"}]>', 'all_gather %a {gathering_axes = [[], ["y":(1)2, "y":(2)2]]}',
         '<@m, [{}, {}]>', r'two consecutive sub-axes can be merged: "y":\(1\)2, "y":\(2\)2'),
        ('<@m, [{}, {}]>', 'all_slice %a {slicing_axes = [["x", "x"], []]}',
         '<@m, [{"x"}, {}]>', 'duplicate axis ref: "x"'),
        ('<@m, [{}, {}]>', 'all_reduce %a {reduction_axes = ["y", "x"]}',
         '<@m, [{}, {}]>', "reduction axes are not ordered w.r.t. mesh"),
        ('<@m, [{}, {}]>', 'replicated_to_unreduced %a {axes = ["y", "x"]}',
         '<@m, [{}, {}], unreduced={"x", "y"}>', "r2u axes are not ordered w.r.t. mesh"),
        ('<@m, [{}, {}]>', 'all_reduce %a {reduction_axes = ["w"]}',
         '<@m, [{}, {}]>', 'unknown axis name: "w"'),
        ('<@m, [{}, {}]>', 'propagation_barrier %a {allowed_direction = BOTH}',
         '<@m, [{}, {}]>', "cannot specify `BOTH` as the direction"),
    ],
)
def test_verifier_rejects(arg: str, op: str, result: str, message: str) -> None:
    with pytest.raises(ShardcError, match=message):
        parse_module(_one(arg, op, result))


def test_reduction_axes_next_to_replicated_axes_verify() -> None:
    """The reduction checks cut replicated axes too (a replicated axis the dims and the reduction
    do not name was a KeyError)."""
    mesh = 'mesh @m = <["x"=2, "y"=4, "z"=2]>\n'
    text = _one('<@m, [{"y"}, {}], replicated={"z"}>', 'all_reduce %a {reduction_axes = ["x"]}',
                '<@m, [{"y"}, {}], replicated={"z"}>').replace(MESH, mesh)
    assert "all_reduce" in print_module(parse_module(text))
    with pytest.raises(ShardcError, match="replicated axes"):
        parse_module(_one('<@m, [{"y"}, {}], replicated={"x"}>',
                          'all_reduce %a {reduction_axes = ["x"]}', '<@m, [{"y"}, {}]>'))


# ----- StableHLO + sdy text -------------------------------------------------------------------

SDY = """module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  sdy.mesh @mesh_ids = <["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>
  func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %0 = sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"y", "x"}]> : tensor<8x16xf32>
    %1 = sdy.sharded_to_unreduced [{}, {"x"}] %0 out_sharding=<@mesh, [{}, {"y"}], unreduced={"x"}> : tensor<8x16xf32>
    %2 = sdy.reduce_scatter [{"x"}, {}] %1 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x16xf32>
    %3 = sdy.collective_permute %2 out_sharding=<@mesh_ids, [{"x"}, {"y"}]> : tensor<8x16xf32>
    %4 = sdy.all_gather [{"x"}, {"y"}] %3 out_sharding=<@mesh_ids, [{}, {}]> : tensor<8x16xf32>
    %5 = sdy.replicated_to_unreduced {"x"} %4 out_sharding=<@mesh_ids, [{}, {}], unreduced={"x"}> : tensor<8x16xf32>
    %6 = sdy.all_reduce {"x"} %5 out_sharding=<@mesh_ids, [{}, {}]> : tensor<8x16xf32>
    %7 = sdy.all_reduce max {"y"} %6 out_sharding=<@mesh_ids, [{}, {}]> : tensor<8x16xf32>
    %8 = sdy.all_slice [{"x"}, {}] %arg1 out_sharding=<@mesh, [{"x"}, {}]> : tensor<8x16xf32>
    return %7, %8 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
"""


def test_shardy_collectives_import() -> None:
    module = import_stablehlo(SDY)
    names = [op.name for op in module.main.body]
    assert names == ["all_to_all", "sharded_to_unreduced", "reduce_scatter",
                     "collective_permute", "all_gather", "replicated_to_unreduced",
                     "all_reduce", "all_reduce", "all_slice", "return"]
    assert module.main.body.ops[7].attributes["reduction_op"].word == "max"


def test_shardy_collectives_round_trip_exactly() -> None:
    assert export_stablehlo(import_stablehlo(SDY)) == SDY
