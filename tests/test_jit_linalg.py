"""`jnp.linalg` under shardc.jit: JAX lowers it to typed-FFI LAPACK calls (`lapack_*_ffi`),
which the JAX executor re-issues as written (`jax.ffi.ffi_call`: target, attributes, layouts,
aliases) on the per-device operands. Unbatched, each runs on whole matrices; batched with the
batch dim sharded, each device factors its own matrices and nothing is communicated."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.executors.jax_ops.custom_calls import _ffi_attributes  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)


def _spd(a):
    return a @ jnp.swapaxes(a, -1, -2) + a.shape[-1] * jnp.eye(a.shape[-1])


FUNCTIONS = {
    "solve": lambda a: jnp.linalg.solve(_spd(a), a),
    "inv": lambda a: jnp.linalg.inv(_spd(a)),
    "eigh": lambda a: jnp.linalg.eigh(_spd(a))[0],
    "svd": lambda a: jnp.linalg.svd(a, compute_uv=False),
    "qr": lambda a: jnp.abs(jnp.linalg.qr(a)[1]),
    "slogdet": lambda a: jnp.linalg.slogdet(a)[1],
    "cholesky": lambda a: jnp.linalg.cholesky(_spd(a)),
}


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_linalg_runs_to_jax_numbers(mesh, name):
    fn = FUNCTIONS[name]
    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    text = jax.jit(fn).lower(a).as_text()
    assert "lapack_" in text  # a LAPACK call, not an expansion
    got = shardc.jit(fn, mesh=mesh)(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(fn)(a)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["solve", "eigh", "slogdet"])
def test_a_sharded_batch_factors_in_place(mesh, name):
    fn = FUNCTIONS[name]
    a = np.random.default_rng(1).standard_normal((8, 16, 16)).astype(np.float32)
    batch = NamedSharding(mesh, P("x"))
    ours = shardc.jit(fn, mesh=mesh, in_shardings=batch)
    got = ours(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(fn)(a)), rtol=1e-4, atol=1e-4)
    assert got.sharding.spec[0] == "x"
    assert ours.lower(a).report["total_comm_bytes"] == 0


def test_attributes_read_as_typed_numpy_scalars():
    got = _ffi_attributes('{mode = 86 : ui8, eps = 1.0e-05 : f32, on = true, name = "a,\\"b"}')
    assert got == {"mode": 86, "eps": np.float32(1e-5), "on": True, "name": 'a,"b'}
    assert got["mode"].dtype == np.uint8 and got["eps"].dtype == np.float32
    assert _ffi_attributes('""') is None  # an opaque backend_config string: not typed FFI


def test_a_custom_call_that_is_not_typed_ffi(mesh, monkeypatch):
    # XLA compiles it when shardc prints the per-device program itself (ApproxTopK: XLA:CPU
    # computes it exactly); the JAX executor's trace cannot re-issue it: a located error.
    from shardc.executors import jax_arrays

    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    f = shardc.jit(lambda x: jax.lax.approx_max_k(x, 2)[0], mesh=mesh)
    np.testing.assert_array_equal(np.asarray(f(a)), np.asarray(jax.lax.approx_max_k(a, 2)[0]))
    assert f.programs()[0].program().route == "text"
    monkeypatch.setattr(jax_arrays, "replica_text", lambda program: None)
    with pytest.raises(shardc.ShardcError, match='ApproxTopK.*typed-FFI') as info:
        shardc.jit(lambda x: jax.lax.approx_max_k(x, 2)[0], mesh=mesh)(a)
    assert info.value.loc is not None
