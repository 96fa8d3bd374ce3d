"""The ops shardc imports beyond its original set: each program below (JAX's own text where JAX
emits the op, else StableHLO written by hand and printed by jaxlib) imports, prints back byte
for byte, runs on the reference interpreter to JAX's numbers, and compiles for 8 devices with a
sharded batch dim to the same numbers (numpy SPMD executor).
"""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.stablehlo import export_stablehlo, import_stablehlo
from tests.shardy_compare import run_shardy

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax


def _canonical(text: str) -> str:
    """`text` as jaxlib prints it (what shardc must print back)."""
    return run_shardy(text, "builtin.module()")


def _round_trip(text: str):
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    return module


def _close(got, want, tol: float = 1e-5) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ----- ops JAX emits: its text, its numbers ------------------------------------------------------

def _spd(n: int, batch: int = 2) -> np.ndarray:
    a = _rng(1).standard_normal((batch, n, n)).astype(np.float32)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)


JAX_PROGRAMS = {
    "fft": (lambda x: jnp.fft.fftn(x, axes=(1, 2)),
            lambda: [(_rng().standard_normal((8, 4, 8)) + 1j).astype(np.complex64)]),
    "ifft": (lambda x: jnp.fft.ifft(x),
             lambda: [(_rng().standard_normal((8, 16)) - 2j).astype(np.complex64)]),
    "rfft": (lambda x: jnp.fft.rfft(x), lambda: [_rng().standard_normal((8, 16), np.float32)]),
    "irfft": (lambda x: jnp.fft.irfft(x, n=16),
              lambda: [(_rng().standard_normal((8, 9)) + 0.5j).astype(np.complex64)]),
    "bitcast_convert": (lambda x: lax.bitcast_convert_type(x, jnp.int32) ^ 3,
                        lambda: [_rng().standard_normal((8, 4), np.float32)]),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10) * 2.0,
                         lambda: [(_rng().standard_normal((8, 64)) * 1e4).astype(np.float32)]),
    "reduce_precision_bf16": (lambda x: lax.reduce_precision(x, 4, 3),
                              lambda: [(_rng().standard_normal((8, 64)) * 300)
                                       .astype(np.float32)]),
    "popcnt_clz": (lambda x: (lax.population_count(x), lax.clz(x)),
                   lambda: [_rng().integers(-2**31, 2**31 - 1, (8, 16)).astype(np.int32)]),
    "complex_parts": (lambda x: lax.complex(jnp.real(x) * 2, jnp.imag(x) + jnp.real(x)),
                      lambda: [(_rng().standard_normal((8, 4)) + 3j).astype(np.complex64)]),
    "rng_bit_generator": (lambda k: lax.rng_bit_generator(k, (8, 4)),
                          lambda: [np.array([1, 2, 3, 4], dtype=np.uint32)]),
    "max_pool_grad": (
        lambda x: jax.grad(lambda y: lax.reduce_window(
            y, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum())(x),
        lambda: [_rng().permutation(128).astype(np.float32).reshape(8, 16)],
    ),
    "cbrt": (lambda x: lax.cbrt(x), lambda: [_rng().standard_normal((8, 4), np.float32)]),
    # abs of a complex value is real (complex<f32> -> f32)
    "abs_complex": (lambda x: jnp.abs(jnp.fft.rfft(x)),
                    lambda: [_rng().standard_normal((8, 16), np.float32)]),
    # a barrier over one value has one result, a value (its kernels once returned a 1-tuple)
    "optimization_barrier_one": (lambda x: lax.optimization_barrier(x) * 2.0,
                                 lambda: [_rng().standard_normal((8, 4), np.float32)]),
}


@pytest.mark.parametrize("name", sorted(JAX_PROGRAMS))
def test_jax_program_round_trips_and_runs_to_jax_numbers(name: str) -> None:
    fn, make = JAX_PROGRAMS[name]
    args = make()
    text = jax.jit(fn).lower(*args).as_text()
    module = _round_trip(text)
    want = jax.jit(fn)(*args)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(run_reference(module, args), want, strict=True):
        _close(g, w, 1e-4)


@pytest.mark.parametrize("name", ["fft", "rfft", "bitcast_convert", "reduce_precision",
                                  "popcnt_clz", "complex_parts", "max_pool_grad",
                                  "optimization_barrier_one", "abs_complex"])
def test_sharded_batch_dim_compiles_to_jax_numbers(name: str) -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from shardc.pipeline import compile

    fn, make = JAX_PROGRAMS[name]
    args = make()
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    spec = NamedSharding(mesh, PartitionSpec("x"))
    jitted = jax.jit(fn, in_shardings=(spec,))
    module = import_stablehlo(jitted.lower(*args).as_text())
    want = jitted(*args)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(compile(module).run(args), want, strict=True):
        _close(g, w, 1e-4)


# ----- ops JAX does not emit: StableHLO as jaxlib prints it -------------------------------------

def _module(sig: str, body: str, results: str) -> str:
    return _canonical(f"func.func @main({sig}) -> {results} {{\n{body}\n}}\n")


HAND_WRITTEN = {
    "dot_matrix_matrix": _module(
        "%arg0: tensor<8x32xf32>, %arg1: tensor<32x16xf32>",
        "%0 = stablehlo.dot %arg0, %arg1 : (tensor<8x32xf32>, tensor<32x16xf32>) -> "
        "tensor<8x16xf32>\nreturn %0 : tensor<8x16xf32>", "tensor<8x16xf32>"),
    "dot_vector_matrix": _module(
        "%arg0: tensor<32xf32>, %arg1: tensor<32x16xf32>",
        "%0 = stablehlo.dot %arg0, %arg1, precision = [HIGHEST, HIGHEST] : (tensor<32xf32>, "
        "tensor<32x16xf32>) -> tensor<16xf32>\nreturn %0 : tensor<16xf32>", "tensor<16xf32>"),
    "cholesky": _module(
        "%arg0: tensor<2x6x6xf32>",
        "%0 = stablehlo.cholesky %arg0, lower = true : tensor<2x6x6xf32>\n"
        "return %0 : tensor<2x6x6xf32>", "tensor<2x6x6xf32>"),
    "triangular_solve": _module(
        "%arg0: tensor<2x6x6xf32>, %arg1: tensor<2x6x3xf32>",
        '%0 = "stablehlo.triangular_solve"(%arg0, %arg1) <{left_side = true, lower = true, '
        "transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : "
        "(tensor<2x6x6xf32>, tensor<2x6x3xf32>) -> tensor<2x6x3xf32>\n"
        "return %0 : tensor<2x6x3xf32>", "tensor<2x6x3xf32>"),
    "triangular_solve_right": _module(
        "%arg0: tensor<2x6x6xf32>, %arg1: tensor<2x3x6xf32>",
        '%0 = "stablehlo.triangular_solve"(%arg0, %arg1) <{left_side = false, lower = false, '
        "transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true}> : "
        "(tensor<2x6x6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>\n"
        "return %0 : tensor<2x3x6xf32>", "tensor<2x3x6xf32>"),
    "batch_norm": _module(
        "%arg0: tensor<4x3x8xf32>, %arg1: tensor<3xf32>, %arg2: tensor<3xf32>",
        '%0:3 = "stablehlo.batch_norm_training"(%arg0, %arg1, %arg2) <{epsilon = 0.001 : f32, '
        "feature_index = 1 : i64}> : (tensor<4x3x8xf32>, tensor<3xf32>, tensor<3xf32>) -> "
        "(tensor<4x3x8xf32>, tensor<3xf32>, tensor<3xf32>)\n"
        '%1 = "stablehlo.batch_norm_inference"(%arg0, %arg1, %arg2, %0#1, %0#2) <{epsilon = '
        "0.001 : f32, feature_index = 1 : i64}> : (tensor<4x3x8xf32>, tensor<3xf32>, "
        "tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8xf32>\n"
        '%2:3 = "stablehlo.batch_norm_grad"(%arg0, %arg1, %0#1, %0#2, %1) <{epsilon = 0.001 : '
        "f32, feature_index = 1 : i64}> : (tensor<4x3x8xf32>, tensor<3xf32>, tensor<3xf32>, "
        "tensor<3xf32>, tensor<4x3x8xf32>) -> (tensor<4x3x8xf32>, tensor<3xf32>, "
        "tensor<3xf32>)\n"
        "return %0#0, %1, %2#0, %2#1, %2#2 : tensor<4x3x8xf32>, tensor<4x3x8xf32>, "
        "tensor<4x3x8xf32>, tensor<3xf32>, tensor<3xf32>",
        "(tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<3xf32>, "
        "tensor<3xf32>)"),
    "tokens": _module(
        "%arg0: !stablehlo.token, %arg1: tensor<4xf32>",
        "%0 = stablehlo.after_all %arg0, %arg0 : !stablehlo.token\n"
        "return %0, %arg1 : !stablehlo.token, tensor<4xf32>", "(!stablehlo.token, tensor<4xf32>)"),
    "replica_collectives": _module(
        "%arg0: tensor<2x4xf32>",
        '%0 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, replica_groups = '
        "dense<[[0]]> : tensor<1x1xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
        '%1 = "stablehlo.all_reduce"(%0) <{replica_groups = dense<[[0]]> : tensor<1x1xi64>}> '
        "({\n^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "  %3 = stablehlo.add %a, %b : tensor<f32>\n  stablehlo.return %3 : tensor<f32>\n"
        "}) : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
        '%2 = "stablehlo.collective_permute"(%1) <{channel_handle = '
        "#stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 0]]> "
        ": tensor<1x2xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
        "return %2 : tensor<2x4xf32>", "tensor<2x4xf32>"),
}


def _hand_inputs(name: str, module) -> list[np.ndarray]:
    rng = _rng(4)
    out = []
    for a in module.main.args:
        if a.type.dtype == "token":
            out.append(np.zeros((), np.bool_))
        else:
            out.append(rng.standard_normal(a.type.shape).astype(np.float32))
    if name.startswith("cholesky") or name.startswith("triangular"):
        out[0] = _spd(6)
    return out


def _hand_want(name: str, args: list[np.ndarray]) -> list:
    x = args[0]
    if name.startswith("dot"):
        return [jnp.dot(x, args[1], precision="highest")]
    if name == "cholesky":
        return [jnp.linalg.cholesky(x)]
    if name == "triangular_solve":
        return [lax.linalg.triangular_solve(x, args[1], left_side=True, lower=True,
                                            transpose_a=True)]
    if name == "triangular_solve_right":
        return [lax.linalg.triangular_solve(x, args[1], left_side=False, lower=False,
                                            unit_diagonal=True)]
    if name == "batch_norm":
        scale, offset = args[1][None, :, None], args[2][None, :, None]

        def train(v, s, o):
            mean = v.mean(axis=(0, 2), keepdims=True)
            var = v.var(axis=(0, 2), keepdims=True)
            return (v - mean) / jnp.sqrt(var + 0.001) * s + o

        y = train(x, scale, offset)
        mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
        # The gradient of batch_norm_training at dy = y (the inference output equals y here).
        _, vjp = jax.vjp(train, x, scale, offset)
        dx, ds, do = vjp(y)
        del mean, var
        return [y, y, dx, ds.reshape(-1), do.reshape(-1)]
    if name == "tokens":
        return [np.zeros((), np.bool_), args[1]]
    if name == "replica_collectives":
        return [x]
    raise KeyError(name)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_program_round_trips_and_runs(name: str) -> None:
    text = HAND_WRITTEN[name]
    module = _round_trip(text)
    args = _hand_inputs(name, module)
    got = run_reference(module, args)
    for g, w in zip(got, _hand_want(name, args), strict=True):
        _close(g, w, 2e-4)


def test_replica_collectives_over_several_replicas_are_a_located_error() -> None:
    from shardc.ir.diagnostics import ExecutionError

    text = _module(
        "%arg0: tensor<2x4xf32>",
        '%0 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, replica_groups = '
        "dense<[[0, 1]]> : tensor<1x2xi64>}> : (tensor<2x4xf32>) -> tensor<2x8xf32>\n"
        "return %0 : tensor<2x8xf32>", "tensor<2x8xf32>")
    module = _round_trip(text)
    with pytest.raises(ExecutionError, match="communicates between the replicas") as info:
        run_reference(module, [np.ones((2, 4), np.float32)])
    assert info.value.loc is not None


def test_sharded_random_bits_are_the_blocks_of_the_global_draw() -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from shardc.pipeline import compile

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("x", "y"))
    out = NamedSharding(mesh, PartitionSpec("x", "y"))
    replicated = NamedSharding(mesh, PartitionSpec())
    fn = jax.jit(lambda k: lax.rng_bit_generator(k, (8, 4))[1], out_shardings=out,
                 in_shardings=(replicated,))
    key = np.array([7, 1, 2, 9], dtype=np.uint32)
    module = import_stablehlo(fn.lower(key).as_text())
    compiled = compile(module)
    (got,) = compiled.run([key])
    _close(got, fn(key))
    assert any(op.name == "spmd.all_slice" for op in compiled.spmd.main.body)
