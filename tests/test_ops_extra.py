"""Shifts, dynamic slices, convolution, reduce_window, optimization_barrier, top_k, composite
and custom_call: verifier errors, kernels against JAX, and sharded runs (numpy and JAX SPMD
executors) against the unsharded reference."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.jax_global import global_function
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ExecutionError, ShardcError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.pipeline import compile

MESH = 'mesh @mesh = <["dp"=2, "tp"=4]>\n\n'


def _inputs(module, seed: int = 0, index: int | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        if a.type.dtype == "f32":
            out.append(rng.standard_normal(a.type.shape).astype(np.float32))
        elif a.type.rank == 0 and index is not None:
            out.append(np.array(index, np.int32))
        else:
            out.append(rng.integers(-40, 40, a.type.shape).astype(np.int32))
    return out


def _close(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g64.shape == w64.shape
        np.testing.assert_allclose(g64, w64, rtol=0, atol=1e-4 * max(1.0, np.abs(w64).max()))


def _run_everywhere(text: str, index: int | None = None) -> None:
    """Reference == JAX global translation == numpy SPMD == JAX SPMD, and the text round-trips."""
    module = parse_module(text)
    assert print_module(parse_module(print_module(module))) == print_module(module)
    inputs = _inputs(module, index=index)
    want = run_reference(module, inputs)
    _close([np.asarray(v) for v in global_function(module)(*inputs)], want)
    result = compile(module)
    _close(result.run(inputs, backend="numpy"), want)
    _close(result.run(inputs, backend="jax"), want)


# ----- sharded programs -------------------------------------------------------------------------

DYNAMIC = MESH + """\
func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %u: tensor<5x32xf32, <@mesh, [{}, {"tp"}]>>, %i: tensor<i32>) -> (tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, tensor<4x32xf32>) {
  %c = constant {value = dense<0>} : tensor<i32>
  %0 = dynamic_update_slice %x, %u, %i, %c : tensor<16x32xf32>
  %1 = dynamic_slice %x, %i, %c {slice_sizes = [4, 32]} : tensor<4x32xf32>
  return %0, %1
}
"""


@pytest.mark.parametrize("index", [-3, 0, 5, 6, 7, 11, 14, 40])
def test_dynamic_slices_with_a_sharded_operand_dim(index: int) -> None:
    # The update straddles the dp shards (rows 8k..8k+7) for most starts; -3 and 40 clamp.
    _run_everywhere(DYNAMIC, index)


def test_dynamic_update_slice_on_uneven_shards() -> None:
    _run_everywhere(DYNAMIC.replace("16x32", "13x32"), 9)


CONV = MESH + """\
func @main(%x: tensor<8x10x10x6xf32, <@mesh, [{"dp"}, {}, {}, {"tp"}]>>, %k: tensor<3x3x6x12xf32, <@mesh, [{}, {}, {"tp"}, {}]>>, %z: tensor<f32>) -> (tensor<8x10x10x12xf32>, tensor<8x5x5x12xf32>) {
  %0 = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2], padding = [[1, 1], [1, 1]]} : tensor<8x10x10x12xf32>
  %1 = reduce_window %0, %z {kind = maximum, window_dimensions = [1, 2, 2, 1], window_strides = [1, 2, 2, 1]} : tensor<8x5x5x12xf32>
  return %0, %1
}
"""


def test_convolution_with_sharded_batch_and_uneven_contracted_features() -> None:
    # 6 input features over tp=4: uneven shards whose padding must not reach the sum.
    _run_everywhere(CONV)


def test_convolution_grouped_sharded_output_features() -> None:
    text = MESH + """\
func @main(%x: tensor<4x9x8xf32, <@mesh, [{"dp"}, {}, {}]>>, %k: tensor<3x2x12xf32, <@mesh, [{}, {}, {"tp"}]>>) -> tensor<4x4x12xf32> {
  %0 = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 2, input_spatial_dimensions = [1], kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0], output_batch_dimension = 0, output_feature_dimension = 2, output_spatial_dimensions = [1], window_strides = [2], rhs_dilation = [1], lhs_dilation = [1], feature_group_count = 4} : tensor<4x4x12xf32>
  return %0
}
"""
    _run_everywhere(text)


def test_cumsum_reduce_window_and_shifts_sharded() -> None:
    text = MESH + """\
func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %a: tensor<16x32xi32, <@mesh, [{"dp"}, {"tp"}]>>, %b: tensor<16x32xi32>) -> (tensor<16x32xf32>, tensor<16x32xi32>, tensor<16x32xi32>, tensor<16x32xi32>) {
  %z = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce_window %x, %z {kind = add, padding = [[15, 0], [0, 0]], window_dimensions = [16, 1]} : tensor<16x32xf32>
  %1 = shift_left %a, %b : tensor<16x32xi32>
  %2 = shift_right_arithmetic %a, %b : tensor<16x32xi32>
  %3 = shift_right_logical %a, %b : tensor<16x32xi32>
  return %0, %1, %2, %3
}
"""
    _run_everywhere(text)


def test_barrier_top_k_composite_and_cholesky() -> None:
    text = MESH + """\
func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %m: tensor<4x4xf32>) -> (tensor<16x32xf32>, tensor<16x3xf32>, tensor<16x3xi32>, tensor<4x4xf32>, tensor<i32>) {
  %0 = composite %x {decomposition = @double, name = "my.double"} : tensor<16x32xf32>
  %1, %2 = top_k %x {k = 3} : tensor<16x3xf32>, tensor<16x3xi32>
  %3, %4 = optimization_barrier %0, %1 : tensor<16x32xf32>, tensor<16x3xf32>
  %t = transpose %m {permutation = [1, 0]} : tensor<4x4xf32>
  %s = dot_general %m, %t {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<4x4xf32>
  %5, %6 = custom_call %s {call_target_name = "lapack_spotrf_ffi", mhlo.backend_config = #opaque<"{uplo = 76 : ui8}">} : tensor<4x4xf32>, tensor<i32>
  return %3, %4, %2, %5, %6
}

func private @double(%a: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = add %a, %a : tensor<16x32xf32>
  return %0
}
"""
    _run_everywhere(text)
    module = parse_module(text)
    out = run_reference(module, _inputs(module))
    assert np.allclose(np.triu(out[3], 1), 0) and int(out[4]) == 0


def test_unknown_custom_call_target_is_a_located_error() -> None:
    module = parse_module(
        "func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %0 = custom_call %x {call_target_name = "my_kernel"} : tensor<4xf32>\n'
        "  return %0\n}\n",
        "k.mlir",
    )
    with pytest.raises(ExecutionError, match='custom_call "my_kernel".*known targets') as info:
        run_reference(module, [np.zeros(4, np.float32)])
    assert info.value.render().startswith("k.mlir:2:3: error:")


# ----- verifier errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        ("%0 = dynamic_slice %x, %i {slice_sizes = [4, 32]} : tensor<4x32xf32>",
         "takes 2 start indices"),
        ("%0 = dynamic_slice %x, %i, %i {slice_sizes = [17, 32]} : tensor<17x32xf32>",
         "slice size 17 does not fit operand dim 0"),
        ("%0 = dynamic_slice %x, %f, %i {slice_sizes = [4, 32]} : tensor<4x32xf32>",
         "start index 0 must be an integer scalar"),
        ("%0 = dynamic_update_slice %x, %f, %i, %i : tensor<16x32xf32>",
         "must have the operand's rank"),
        ("%0 = reduce_window %x, %f {kind = add, window_dimensions = [2]} : tensor<8x32xf32>",
         "window_dimensions has 1 entries"),
        ("%0 = reduce_window %x, %f {kind = add, window_dimensions = [2, 1]} : tensor<8x32xf32>",
         "result 0 has type tensor<8x32xf32>, but its operands and attributes give "
         "tensor<15x32xf32>"),
        ("%0, %1 = top_k %x {k = 33} : tensor<16x33xf32>, tensor<16x33xi32>",
         "k = 33 must be between 0 and the last dim's size (32)"),
        ("%0, %1 = optimization_barrier %x : tensor<16x32xf32>, tensor<16x32xf32>",
         "has 1 operands but 2 results"),
        ("%0 = composite %x {decomposition = @nope, name = \"n\"} : tensor<16x32xf32>",
         "calls @nope, which is not defined"),
        ("%0 = shift_left %x, %x : tensor<16x32xf32>", "takes integers, got f32"),
        ("%0 = popcnt %x : tensor<16x32xf32>", "takes integers, got f32"),
        ("%0 = not %x : tensor<16x32xf32>", "takes integers or i1, got f32"),
        ("%0 = xor %f, %f : tensor<f32>", "takes integers or i1, got f32"),
    ],
)
def test_verifier_errors_are_located(body: str, message: str) -> None:
    text = (
        "func @main(%x: tensor<16x32xf32>, %i: tensor<i32>, %f: tensor<f32>) -> tensor<16x32xf32> {\n"
        f"  {body}\n  return %x\n}}\n"
    )
    with pytest.raises(ShardcError) as info:
        parse_module(text, "bad.mlir")
    rendered = info.value.render()
    assert rendered.startswith("bad.mlir:2:"), rendered
    assert message in rendered


def test_convolution_feature_mismatch_is_an_error() -> None:
    text = (
        "func @main(%x: tensor<1x5x3xf32>, %k: tensor<2x4x2xf32>) -> tensor<1x4x2xf32> {\n"
        "  %0 = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 2, "
        "input_spatial_dimensions = [1], kernel_input_feature_dimension = 1, "
        "kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0], "
        "output_batch_dimension = 0, output_feature_dimension = 2, "
        "output_spatial_dimensions = [1]} : tensor<1x4x2xf32>\n  return %0\n}\n"
    )
    with pytest.raises(ShardcError, match=r"input features \(3\) must be kernel input features"):
        parse_module(text, "bad.mlir")


# ----- StableHLO forms ---------------------------------------------------------------------------

def _shlo(body: str, args: str = "%arg0: tensor<8x4xi32>, %arg1: tensor<i32>") -> str:
    return (
        'module @m {\n  sdy.mesh @mesh = <["x"=2]>\n'
        f"  func.func public @main({args}) -> tensor<8x4xi32> {{\n{body}  }}\n}}\n"
    )


def test_generic_forms_import_and_print_pretty() -> None:
    from shardc.stablehlo import export_stablehlo, import_stablehlo

    generic = _shlo(
        '    %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %arg1) <{slice_sizes = array<i64: 2, 4>}>'
        " : (tensor<8x4xi32>, tensor<i32>, tensor<i32>) -> tensor<2x4xi32>\n"
        '    %1 = "stablehlo.dynamic_update_slice"(%arg0, %0, %arg1, %arg1) : (tensor<8x4xi32>, '
        "tensor<2x4xi32>, tensor<i32>, tensor<i32>) -> tensor<8x4xi32>\n"
        '    %2 = "stablehlo.shift_right_logical"(%1, %arg0) : (tensor<8x4xi32>, tensor<8x4xi32>)'
        " -> tensor<8x4xi32>\n"
        "    return %2 : tensor<8x4xi32>\n"
    )
    pretty = _shlo(
        "    %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [2, 4] : (tensor<8x4xi32>,"
        " tensor<i32>, tensor<i32>) -> tensor<2x4xi32>\n"
        "    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg1, %arg1 : (tensor<8x4xi32>, "
        "tensor<2x4xi32>, tensor<i32>, tensor<i32>) -> tensor<8x4xi32>\n"
        "    %2 = stablehlo.shift_right_logical %1, %arg0 : tensor<8x4xi32>\n"
        "    return %2 : tensor<8x4xi32>\n"
    )
    assert export_stablehlo(import_stablehlo(generic)) == pretty
    assert export_stablehlo(import_stablehlo(pretty)) == pretty


@pytest.mark.parametrize(
    "body, message",
    [
        ("    %0 = stablehlo.convolution(%arg0, %arg0) dim_numbers = [b, 0, f]x[0, i, i]->[b, 0, f]"
         " {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<8x4xi32>, "
         "tensor<8x4xi32>) -> tensor<8x4xi32>\n",
         "kernel dimension numbers [0, 'i', 'i']: unexpected or repeated i"),
        ("    %0 = stablehlo.convolution(%arg0, %arg0) dim_numbers = [b, f]x[i, o]->[b, f], "
         "window = {stripe = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} "
         ": (tensor<8x4xi32>, tensor<8x4xi32>) -> tensor<8x4xi32>\n",
         "unknown window attribute 'stripe'"),
        ("    %0 = stablehlo.composite \"c\" %arg0 {version = 1 : i32} : (tensor<8x4xi32>) -> "
         "tensor<8x4xi32>\n",
         "needs 'decomposition = @function'"),
    ],
)
def test_malformed_stablehlo_is_a_located_error(body: str, message: str) -> None:
    from shardc.stablehlo import import_stablehlo

    with pytest.raises(ShardcError) as info:
        import_stablehlo(_shlo(body + "    return %arg0 : tensor<8x4xi32>\n"), "bad.mlir")
    rendered = info.value.render()
    assert rendered.startswith("bad.mlir:4:"), rendered
    assert message in rendered


@pytest.mark.parametrize("case", ["concat_slice_pad", "conv2d", "extra_syntax"])
def test_jax_corpus_cases_run_sharded_on_both_backends(case: str) -> None:
    from pathlib import Path

    from shardc.stablehlo import import_stablehlo

    path = Path(__file__).parent / "data" / "stablehlo" / f"{case}.mlir"
    module = import_stablehlo(path.read_text(), str(path))
    inputs = _inputs(module, seed=1, index=11)
    want = run_reference(module, inputs)
    result = compile(module)
    _close(result.run(inputs, backend="numpy"), want)
    _close(result.run(inputs, backend="jax"), want)
    if case == "conv2d":  # batch on dp, output features on tp: no communication at all
        assert result.report["collectives"] == []
