"""Ops whose StableHLO region is more than one reducer op: variadic reduce_window and scatter,
imported with their region outlined into a `body` function (compiler/stablehlo/reducers.py).

Each program imports, prints back byte for byte, gets Shardy's sharding rule, and runs to JAX's
numbers on the reference interpreter and, compiled for 8 devices, on the numpy executor.
"""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.passes.propagation.rules.registry import rule_for
from shardc.stablehlo import export_stablehlo, import_stablehlo

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax


def _argmax_pool(x, i):
    return lax.reduce_window(
        (x, i), (jnp.float32(-jnp.inf), jnp.int32(0)),
        lambda a, b: (jnp.maximum(a[0], b[0]), jnp.where(a[0] >= b[0], a[1], b[1])),
        (2, 1), (2, 1), "VALID",
    )


def _min_max_pool(x, y):
    return lax.reduce_window(
        (x, y), (jnp.float32(jnp.inf), jnp.float32(-jnp.inf)),
        lambda a, b: (jnp.minimum(a[0], b[0]), jnp.maximum(a[1], b[1])),
        (3, 2), (1, 2), ((1, 1), (0, 0)),
    )


_SCATTER = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x4xf32>, %arg1: tensor<6x4xi32>, %arg2: tensor<5x1xi32>, %arg3: tensor<5x4xf32>, %arg4: tensor<5x4xi32>) -> (tensor<6x4xf32>, tensor<6x4xi32>) {
    %0:2 = "stablehlo.scatter"(%arg0, %arg1, %arg2, %arg3, %arg4) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<f32>, %arg8: tensor<i32>):
      %1 = BODY
      stablehlo.return %1, %2 : tensor<f32>, tensor<i32>
    }) : (tensor<6x4xf32>, tensor<6x4xi32>, tensor<5x1xi32>, tensor<5x4xf32>, tensor<5x4xi32>) -> (tensor<6x4xf32>, tensor<6x4xi32>)
    return %0#0, %0#1 : tensor<6x4xf32>, tensor<6x4xi32>
  }
}
"""
# Both inputs add their updates (one common reduction), or: keep the larger value and the index
# that came with it (a general body, run window by window).
_ADD = ("stablehlo.add %arg5, %arg7 : tensor<f32>\n"
        "      %2 = stablehlo.add %arg6, %arg8 : tensor<i32>")
_KEEP_MAX = ("stablehlo.maximum %arg5, %arg7 : tensor<f32>\n"
             "      %3 = stablehlo.compare GE, %arg5, %arg7, FLOAT : (tensor<f32>, tensor<f32>)"
             " -> tensor<i1>\n"
             "      %2 = stablehlo.select %3, %arg6, %arg8 : tensor<i1>, tensor<i32>")


def _scatter_text(body: str) -> str:
    return _SCATTER.replace("BODY", body)


def _jax_scatter_add(x, i, idx, ux, ui):
    return x.at[idx[:, 0]].add(ux), i.at[idx[:, 0]].add(ui)


def _inputs(shapes_dtypes, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in shapes_dtypes:
        if dtype == np.float32:
            out.append(rng.permutation(np.arange(np.prod(shape), dtype=np.float32)).reshape(shape))
        else:
            out.append(rng.integers(0, 6, shape).astype(dtype))
    return out


@pytest.mark.parametrize("fn, shapes", [
    (_argmax_pool, [((8, 4), np.float32), ((8, 4), np.int32)]),
    (_min_max_pool, [((9, 6), np.float32), ((9, 6), np.float32)]),
])
def test_variadic_reduce_window_from_jax(fn, shapes) -> None:
    args = _inputs(shapes)
    text = jax.jit(fn).lower(*args).as_text()
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    (op,) = [o for o in module.main.body if o.name == "reduce_window"]
    assert "body" in op.attributes and len(op.results) == 2
    assert rule_for(op) is not None
    got = run_reference(module, args)
    want = jax.jit(fn)(*args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))


def test_variadic_scatter_with_one_reduction_runs_like_jax() -> None:
    text = _scatter_text(_ADD)
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    args = _inputs([((6, 4), np.float32), ((6, 4), np.int32), ((5, 1), np.int32),
                    ((5, 4), np.float32), ((5, 4), np.int32)])
    args[2] = np.array([[0], [3], [3], [5], [1]], dtype=np.int32)
    want = jax.jit(_jax_scatter_add)(*args)
    for g, w in zip(run_reference(module, args), want):
        np.testing.assert_array_equal(g, np.asarray(w))
    # The batch dim of the updates is a reduction: both inputs add.
    (op,) = [o for o in module.main.body if o.name == "scatter"]
    assert "reduction={i}" in str(rule_for(op))


def test_variadic_scatter_with_a_general_body_runs_window_by_window() -> None:
    module = import_stablehlo(_scatter_text(_KEEP_MAX))
    x = np.zeros((6, 4), np.float32)
    i = np.full((6, 4), -1, np.int32)
    idx = np.array([[2], [2], [0]], dtype=np.int32)
    ux = np.array([[1, 5, 3, 0], [4, 2, 3, 9], [7, 7, 7, 7]], np.float32)
    ui = np.array([[10, 10, 10, 10], [20, 20, 20, 20], [30, 30, 30, 30]], np.int32)
    # Five update rows: pad the two unused rows to an index that does not fit (dropped).
    idx = np.concatenate([idx, [[9], [9]]]).astype(np.int32)
    ux = np.concatenate([ux, np.ones((2, 4), np.float32)])
    ui = np.concatenate([ui, np.ones((2, 4), np.int32)])
    got_x, got_i = run_reference(module, [x, i, idx, ux, ui])
    np.testing.assert_array_equal(got_x[2], [4, 5, 3, 9])
    np.testing.assert_array_equal(got_i[2], [20, 10, 10, 20])  # a tie keeps the earlier index
    np.testing.assert_array_equal(got_x[0], [7, 7, 7, 7])
    np.testing.assert_array_equal(got_i[0], [30, 30, 30, 30])
    (op,) = [o for o in module.main.body if o.name == "scatter"]
    assert "need_replication={i" in str(rule_for(op))  # no common reduction: replicated


def test_variadic_reduce_window_sharded_along_a_pass_through_dim() -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from shardc.pipeline import compile

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    spec = NamedSharding(mesh, PartitionSpec(None, "x"))
    args = _inputs([((8, 8), np.float32), ((8, 8), np.int32)], seed=2)
    fn = jax.jit(_argmax_pool, in_shardings=(spec, spec))
    module = import_stablehlo(fn.lower(*args).as_text())
    compiled = compile(module)
    (op,) = [o for o in compiled.module.main.body if o.name == "reduce_window"]
    assert op.results[0].mapping is not None and "x" in str(op.results[0].mapping)
    for g, w in zip(compiled.run(args), fn(*args)):
        np.testing.assert_array_equal(g, np.asarray(w))
