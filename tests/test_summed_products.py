"""The numpy executor computes a contraction-sharded `dot_general` and the sum its users take
(`all_reduce`, `reduce_scatter`) as one product (batched_kernels.summed_dot). Each program runs
fused, unfused (group by group, the collectives' literal semantics) and as the unsharded
reference; all three agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.numpy_exec import NumpyExecutor
from shardc.executors.reference import run_reference
from shardc.ir.parser import parse_module
from shardc.passes.manager import PassManager
from shardc.passes.spmd.spmd import Spmd

ROW_PARALLEL = """
mesh @m = <["dp"=2, "tp"=4]>
func @main(%h: tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>, %w: tensor<32x16xf32, <@m, [{"tp"}, {}]>>) -> tensor<8x16xf32, <@m, [{"dp"}, {}]>> {
  %0 = dot_general %h, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"dp"}, {}], unreduced={"tp"}>>
  %1 = all_reduce %0 {reduction_axes = ["tp"]} : tensor<8x16xf32, <@m, [{"dp"}, {}]>>
  return %1
}
"""

# FSDP: the partial sums go to two reduce_scatters over different dims.
TWO_SCATTERS = """
mesh @m = <["x"=4]>
func @main(%a: tensor<16x32xf32, <@m, [{}, {"x"}]>>, %b: tensor<32x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<16x8xf32, <@m, [{"x"}, {}]>>, tensor<16x8xf32, <@m, [{}, {"x"}]>>) {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x8xf32, <@m, [{}, {}], unreduced={"x"}>>
  %1 = reduce_scatter %0 {scatter_axes = [["x"], []]} : tensor<16x8xf32, <@m, [{"x"}, {}]>>
  %2 = reduce_scatter %0 {scatter_axes = [[], ["x"]]} : tensor<16x8xf32, <@m, [{}, {"x"}]>>
  return %1, %2
}
"""

# Batching dims, two contracting dims, a sub-axis of the mesh.
BATCHED = """
mesh @m = <["x"=2, "y"=4]>
func @main(%a: tensor<4x6x8x4xf32, <@m, [{}, {}, {"y"}, {"x"}]>>, %b: tensor<4x8x4x10xf32, <@m, [{}, {"y"}, {"x"}, {}]>>) -> tensor<4x6x10xf32, <@m, [{}, {}, {}]>> {
  %0 = dot_general %a, %b {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [2, 3], rhs_contracting_dims = [1, 2]} : tensor<4x6x10xf32, <@m, [{}, {}, {}], unreduced={"x", "y"}>>
  %1 = all_reduce %0 {reduction_axes = ["x", "y"]} : tensor<4x6x10xf32, <@m, [{}, {}, {}]>>
  return %1
}
"""

# Summed by two all_reduces.
ALSO_USED = """
mesh @m = <["x"=4]>
func @main(%a: tensor<16x32xf32, <@m, [{}, {"x"}]>>, %b: tensor<32x8xf32, <@m, [{"x"}, {}]>>) -> tensor<16x8xf32, <@m, [{}, {}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x8xf32, <@m, [{}, {}], unreduced={"x"}>>
  %1 = all_reduce %0 {reduction_axes = ["x"]} : tensor<16x8xf32, <@m, [{}, {}]>>
  %2 = all_reduce %0 {reduction_axes = ["x"]} : tensor<16x8xf32, <@m, [{}, {}]>>
  %3 = add %1, %2 : tensor<16x8xf32, <@m, [{}, {}]>>
  return %3
}
"""

# The partial product is returned as well as summed: it must exist, so no fusion.
RETURNED = """
mesh @m = <["x"=4]>
func @main(%a: tensor<16x32xf32, <@m, [{}, {"x"}]>>, %b: tensor<32x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<16x8xf32, <@m, [{}, {}]>>, tensor<16x8xf32, <@m, [{}, {}], unreduced={"x"}>>) {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x8xf32, <@m, [{}, {}], unreduced={"x"}>>
  %1 = all_reduce %0 {reduction_axes = ["x"]} : tensor<16x8xf32, <@m, [{}, {}]>>
  return %1, %0
}
"""

PROGRAMS = {"row_parallel": ROW_PARALLEL, "two_scatters": TWO_SCATTERS, "batched": BATCHED,
            "also_used": ALSO_USED, "returned": RETURNED}


def _inputs(module) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal(a.type.shape).astype(np.float32) for a in module.main.args]


def _lower(text: str):
    spmd = parse_module(text)
    PassManager([Spmd()]).run(spmd)
    return parse_module(text), spmd


def _fused_ops(spmd) -> list[str]:
    fused = NumpyExecutor(spmd)._summed_products(spmd.main)
    return sorted(op.name for op in spmd.main.body if id(op) in fused)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_product_equals_the_collectives_and_the_reference(name: str) -> None:
    global_module, spmd = _lower(PROGRAMS[name])
    inputs = _inputs(global_module)
    want = run_reference(global_module, inputs)
    fused = NumpyExecutor(spmd).run(inputs)
    literal = NumpyExecutor(spmd, general_groups=True).run(inputs)
    for got, lit, ref in zip(fused, literal, want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(lit, ref, rtol=2e-5, atol=2e-5)


def test_the_row_parallel_product_is_one_gemm() -> None:
    global_module, spmd = _lower(ROW_PARALLEL)
    assert _fused_ops(spmd) == ["dot_general", "spmd.all_reduce"]
    # The fused product is the unsharded one: bit for bit the reference's single GEMM.
    h, w = _inputs(global_module)
    (got,) = NumpyExecutor(spmd).run([h, w])
    np.testing.assert_array_equal(got, h @ w)


def test_which_products_are_fused() -> None:
    assert _fused_ops(_lower(TWO_SCATTERS)[1]) == [
        "dot_general", "spmd.reduce_scatter", "spmd.reduce_scatter"
    ]
    # Summed twice: computed once for both users.
    assert _fused_ops(_lower(ALSO_USED)[1]) == ["dot_general", "spmd.all_reduce",
                                                 "spmd.all_reduce"]
    # A partial product that something else reads as it is keeps the plain path.
    assert "dot_general" not in _fused_ops(_lower(RETURNED)[1])

