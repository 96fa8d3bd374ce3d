"""The global program as a JAX function (`compiler/executors/jax_global.py`) equals the reference.

Every example in examples/*.mlir runs through `global_function` under `jax.jit` (unsharded) and,
after `compile`, through `jit_global` (XLA partitions it over 8 CPU devices with the compiled
module's shardings); both must equal `run_reference`. Ops whose translation is not a one-liner
(gather, scatter, compare types, convert to i1) are checked case by case, reusing the reference
interpreter's cases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.core import Module
from shardc.ir.diagnostics import ExecutionError, PassError
from shardc.ir.parser import parse_module
from shardc.ir.types import numpy_dtype
from shardc.pipeline import compile
from tests.test_reference import GATHER_CASES, SCATTER_CASES, rand, ty

jax = pytest.importorskip("jax")

from shardc.executors.jax_global import global_function, jit_global  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


def random_inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = []
    for a in module.main.args:
        dtype = numpy_dtype(a.type.dtype)
        if dtype.kind in "iu":
            inputs.append(rng.integers(0, 16, a.type.shape).astype(dtype))
        else:
            inputs.append(rng.standard_normal(a.type.shape).astype(dtype))
    return inputs


def assert_close(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * scale)


def run_op(line: str, result: str, **args: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(JAX, reference) results of `%0 = <line> : <result>` on the named arguments."""
    sig = ", ".join(f"%{k}: {ty(v.shape, v.dtype)}" for k, v in args.items())
    text = f"func @main({sig}) -> {result} {{\n  %0 = {line} : {result}\n  return %0\n}}\n"
    module = parse_module(text, "test.mlir")
    (want,) = run_reference(module, list(args.values()))
    (got,) = jax.jit(global_function(module))(*args.values())
    return np.asarray(got), want


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_unsharded_equals_reference(path: Path):
    module = parse_module(path.read_text(), str(path))
    inputs = random_inputs(module)
    got = jax.jit(global_function(module))(*inputs)
    assert_close(got, run_reference(module, inputs))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_partitioned_by_xla_equals_reference(path: Path):
    module = parse_module(path.read_text(), str(path))
    try:
        result = compile(module)
    except PassError as e:
        pytest.skip(f"shardc cannot compile this example yet: {e}")
    jitted, mesh, ins, outs = jit_global(result.module)
    assert mesh.size == result.module.meshes["mesh"].num_devices
    inputs = random_inputs(module)
    got = jitted(*inputs)
    for g, s in zip(got, outs, strict=True):
        assert g.sharding.is_equivalent_to(s, g.ndim)
    # The compiled global program (explicit collectives) means the same as the source.
    assert_close(got, run_reference(module, inputs))
    assert_close(jax.jit(global_function(result.module))(*inputs), run_reference(module, inputs))


def test_sharding_constraint_becomes_with_sharding_constraint_on_a_mesh():
    from shardc.jax_api import mesh_to_jax

    text = """mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sharding_constraint %a : tensor<8x8xf32, <@mesh, [{"x"}, {"y"}]>>
  %1 = tanh %0 : tensor<8x8xf32>
  return %1
}
"""
    module = parse_module(text)
    mesh = mesh_to_jax(module.meshes["mesh"])
    f = global_function(module, mesh=mesh)
    hlo = jax.jit(f).lower(np.zeros((8, 8), np.float32)).as_text()
    assert "sharding_constraint" in hlo and '{"x"}, {"y"}' in hlo
    assert "sharding_constraint" not in jax.jit(global_function(module)).lower(
        np.zeros((8, 8), np.float32)
    ).as_text()


@pytest.mark.parametrize("case", GATHER_CASES)
def test_gather(case):
    shape, ishape, offset, collapsed, smap, sizes, obatch, ibatch = case
    x = rand(shape, seed=12)
    idx = rand(ishape, np.int32, seed=13, lo=-2, hi=max(shape) + 2)
    result_shape = jax.eval_shape(
        lambda a, i: jax.lax.gather(
            a, i, jax.lax.GatherDimensionNumbers(offset, collapsed, smap, obatch, ibatch), sizes,
            mode=jax.lax.GatherScatterMode.CLIP,
        ), x, idx,
    ).shape
    line = (f"gather %x, %i {{offset_dims = {list(offset)}, collapsed_slice_dims = "
            f"{list(collapsed)}, operand_batching_dims = {list(obatch)}, "
            f"start_indices_batching_dims = {list(ibatch)}, start_index_map = {list(smap)}, "
            f"index_vector_dim = {len(ishape) - 1}, slice_sizes = {list(sizes)}}}")
    got, want = run_op(line, ty(result_shape, np.float32), x=x, i=idx)
    np.testing.assert_array_equal(got, want)


def test_gather_index_vector_dim_in_the_middle_with_batching_dims():
    x = rand((3, 6, 5), seed=1)
    idx = np.array([[[1, 2], [4, 0]], [[0, 4], [2, 1]], [[5, 5], [3, 3]]], np.int32)
    # indices dims: (batch 0 -> operand dim 0, index vector, batch); index vector -> (dim 1, 2)
    line = ("gather %x, %i {offset_dims = [], collapsed_slice_dims = [1, 2], "
            "operand_batching_dims = [0], start_indices_batching_dims = [0], "
            "start_index_map = [1, 2], index_vector_dim = 1, slice_sizes = [1, 1, 1]}")
    got, want = run_op(line, "tensor<3x2xf32>", x=x, i=idx)
    np.testing.assert_array_equal(got, want)
    assert got[0, 1] == x[0, 2, 0]


def test_gather_implicit_index_vector_dim():
    table = rand((10, 4), seed=2)
    ids = np.array([[2, 0, 11], [3, 9, -1]], np.int32)  # 11 and -1 clamp
    line = ("gather %t, %i {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], "
            "index_vector_dim = 2, slice_sizes = [1, 4]}")
    got, want = run_op(line, "tensor<2x3x4xf32>", t=table, i=ids)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, table[np.clip(ids, 0, 9)])


@pytest.mark.parametrize("kind", ["add", "maximum", "minimum", "multiply", "replace"])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_scatter(case, kind: str):
    shape, ishape, ushape, window, inserted, sdod, ibatch, sibatch = case
    x = rand(shape, seed=14)
    idx = rand(ishape, np.int32, seed=15, lo=-1, hi=max(shape) + 1)
    if kind == "replace":  # with duplicates the winner is unspecified: make indices unique
        if ishape[-1] == 0:
            pytest.skip("every update replaces the same window: no defined winner")
        flat = idx.reshape(-1, ishape[-1])
        flat[:] = np.arange(flat.shape[0])[:, None] % min(shape)
    u = rand(ushape, seed=16)
    line = (f"scatter %x, %i, %u {{update_window_dims = {list(window)}, inserted_window_dims = "
            f"{list(inserted)}, input_batching_dims = {list(ibatch)}, "
            f"scatter_indices_batching_dims = {list(sibatch)}, scatter_dims_to_operand_dims = "
            f"{list(sdod)}, index_vector_dim = {len(ishape) - 1}, kind = {kind}}}")
    got, want = run_op(line, ty(shape, np.float32), x=x, i=idx, u=u)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_drops_windows_that_do_not_fit():
    x = np.zeros(6, np.int32)
    idx = np.array([[0], [4], [5], [-1], [2]], np.int32)
    u = np.array([[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]], np.int32)
    line = ("scatter %x, %i, %u {update_window_dims = [1], scatter_dims_to_operand_dims = [0], "
            "index_vector_dim = 1, kind = add}")
    got, want = run_op(line, "tensor<6xi32>", x=x, i=idx, u=u)
    np.testing.assert_array_equal(got, [1, 1, 5, 5, 2, 2])
    np.testing.assert_array_equal(got, want)


def test_compare_total_order_and_unsigned():
    a = np.array([-np.nan, -np.inf, -0.0, 0.0, 1.0, np.nan], np.float32)
    b = np.array([np.nan, -1.0, 0.0, -0.0, 1.0, -np.nan], np.float32)
    for direction in ("LT", "EQ", "GE"):
        line = f"compare %a, %b {{comparison_direction = {direction}, compare_type = TOTALORDER}}"
        got, want = run_op(line, "tensor<6xi1>", a=a, b=b)
        np.testing.assert_array_equal(got, want, err_msg=direction)
    got, _ = run_op("compare %a, %b {comparison_direction = LT, compare_type = TOTALORDER}",
                    "tensor<6xi1>", a=a, b=b)
    assert got.tolist() == [True, True, True, False, False, False]
    i = np.array([-1, 1, 0], np.int32)
    j = np.array([1, -1, 0], np.int32)
    line = "compare %i, %j {comparison_direction = LT, compare_type = UNSIGNED}"
    got, want = run_op(line, "tensor<3xi1>", i=i, j=j)
    np.testing.assert_array_equal(got, want)
    assert got.tolist() == [False, True, False]


def test_convert_to_i1_is_not_equal_zero():
    x = np.array([0.0, 0.5, -2.0, np.nan], np.float32)
    got, want = run_op("convert %x", "tensor<4xi1>", x=x)
    np.testing.assert_array_equal(got, want)
    assert got.tolist() == [False, True, True, True]


def test_call_and_multiple_results():
    text = """
func private @sum_diff(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = add %a, %b : tensor<3xf32>
  %1 = subtract %a, %b : tensor<3xf32>
  return %0, %1
}
func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %s, %d = call %x, %y {callee = @sum_diff} : tensor<3xf32>, tensor<3xf32>
  return %s, %d
}
"""
    module = parse_module(text)
    x, y = rand((3,), seed=3), rand((3,), seed=4)
    got = jax.jit(global_function(module))(x, y)
    assert_close(got, run_reference(module, [x, y]))


def test_errors_name_the_problem():
    module = parse_module("func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a\n}\n")
    with pytest.raises(ExecutionError, match="no function @other"):
        global_function(module, "other")
    with pytest.raises(ExecutionError, match="takes 1 arguments, got 2"):
        global_function(module)(np.zeros(2, np.float32), np.zeros(2, np.float32))
    text = ('func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
            '  %0 = custom_call %a {call_target_name = "foo"} : tensor<2xf32>\n  return %0\n}\n')
    with pytest.raises(ExecutionError, match='cannot run custom_call "foo" on JAX'):
        global_function(parse_module(text))(np.zeros(2, np.float32))
