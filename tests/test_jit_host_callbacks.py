"""Python host callbacks under `shardc.jit` (JAX backend): `jax.debug.print` runs once, as
under `jax.jit`; `jax.pure_callback` and `io_callback` return their results to the program;
programs holding them are not written to the persistent cache (their functions are this
process's); a module's text with such a callback is a located error, never a crash."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardc
from shardc.cli import main

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices")

X = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 100


@pytest.fixture(params=["auto", "explicit"])
def mesh(request):
    kind = jax.sharding.AxisType.Auto if request.param == "auto" else jax.sharding.AxisType.Explicit
    return jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(kind, kind))


def test_debug_print_runs_once_with_the_whole_value(mesh, capfd):
    def step(x):
        jax.debug.print("total {t:.3f}", t=x.sum())
        return jnp.tanh(x) * 2

    y = shardc.jit(step, mesh=mesh, in_shardings=(P("dp", "tp"),))(X)
    jax.effects_barrier()
    np.testing.assert_allclose(np.asarray(y), np.tanh(X) * 2, rtol=1e-6)
    printed = capfd.readouterr().out.splitlines()
    assert printed == [f"total {X.sum():.3f}"], printed


def test_pure_and_io_callbacks_return_their_results(mesh):
    calls = []

    def host_sin(a):
        return np.sin(a)

    def host_count(a):
        calls.append(a.shape)
        return (a * 0 + len(calls)).astype(a.dtype)

    def step(x):
        s = jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        c = io_callback(host_count, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return s @ x.T + c.sum()

    f = shardc.jit(step, mesh=mesh, in_shardings=(P("dp"),))
    y = jax.block_until_ready(f(X))  # (the callbacks run with the step, asynchronously)
    # each device calls the io_callback once, on the whole (replicated) operand
    assert calls and all(shape == X.shape for shape in calls), calls
    expected = np.sin(X) @ X.T
    got = np.asarray(y) - np.asarray(y)[0, 0] + expected[0, 0]  # the count differs per device
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
    # A second call reuses the program and calls the Python functions again.
    before = len(calls)
    jax.block_until_ready(f(X))
    assert len(calls) > before and f.cache_size() == 1


def test_programs_with_callbacks_skip_the_persistent_cache(tmp_path, mesh):
    def step(x):
        return jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1

    options = shardc.CompileOptions(cache_dir=str(tmp_path))
    y = shardc.jit(step, mesh=mesh, in_shardings=(P("dp"),), options=options)(X)
    np.testing.assert_allclose(np.asarray(y), np.cos(X) + 1, rtol=1e-6)
    assert not any(p.is_file() for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))


def test_a_callback_in_a_modules_text_is_a_located_error(tmp_path, capsys):
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))

    def step(x):
        jax.debug.print("{}", x.sum())
        return x * 2

    path = tmp_path / "cb.mlir"
    path.write_text(jax.jit(step, in_shardings=(NamedSharding(mesh, P("dp")),)).lower(X).as_text())
    code = main(["run", str(path), "--input-format", "sdy", "--backend", "jax"])
    err = capsys.readouterr().err
    assert code == 1, (code, err)
    assert f"{path}:7:" in err and "is a Python host callback" in err, err


def test_numpy_backend_calls_each_callback_once(mesh, capfd):
    calls = []

    def host_count(a):
        calls.append(a.shape)
        return (a * 0 + len(calls)).astype(a.dtype)

    def step(x):
        jax.debug.print("total {t:.3f}", t=x.sum())
        s = jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        c = io_callback(host_count, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return s @ x.T + c.sum()

    # (a concrete mesh: JAX lowers no host callback on an AbstractMesh)
    y = shardc.jit(step, mesh=mesh, backend="numpy", in_shardings=(P("dp"),))(X)
    np.testing.assert_allclose(y, np.sin(X) @ X.T + X.size, rtol=1e-5)
    assert calls == [X.shape]  # once, on the whole operand, as jax.jit calls it
    assert capfd.readouterr().out.splitlines() == [f"total {X.sum():.3f}"]


@pytest.mark.parametrize("auto_shard", [False, True], ids=["unannotated", "auto-shard"])
def test_a_callback_in_a_program_without_shardings(mesh, auto_shard, capfd):
    # JAX then prints only the callback's one-device mesh: the program still runs on the jit's
    # mesh (and auto-shard shards over it), the callback once.
    w = np.ones((32, 64), np.float32) / 32

    def step(x, w):
        jax.debug.print("total {t:.3f}", t=x.sum())
        return jnp.tanh(x @ w)

    y = jax.block_until_ready(shardc.jit(step, mesh=mesh, auto_shard=auto_shard)(X, w))
    np.testing.assert_allclose(np.asarray(y), np.tanh(X @ w), rtol=1e-5)
    assert len(y.sharding.device_set) == 8
    jax.effects_barrier()
    assert capfd.readouterr().out.splitlines() == [f"total {X.sum():.3f}"]
