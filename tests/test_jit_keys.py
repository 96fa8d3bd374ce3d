"""Typed PRNG keys through `shardc.jit` (`jax.random.key`, a batch of keys sharded over a mesh
axis, keys returned, `nnx.Rngs` in a model's state), bit for bit as `jax.jit`; the 64-bit values
of JAX's threefry lowering on the JAX executor; and `jax.random.normal` (chlo.erf_inv)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AbstractMesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc import formats  # noqa: E402
from shardc.executors.jax_arrays import JaxArrayProgram  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)

X = np.linspace(-1, 1, 16 * 32, dtype=np.float32).reshape(16, 32)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"))


def noisy(x, key):
    k1, k2 = jax.random.split(key)
    return x + jax.random.normal(k1, x.shape), k2


def same_key(a, b) -> bool:
    return a.dtype == b.dtype and np.array_equal(jax.random.key_data(a), jax.random.key_data(b))


def test_a_key_in_and_out_is_jax_jits(mesh):
    key = jax.random.key(0)
    want = jax.jit(noisy)(X, key)
    f = shardc.jit(noisy, mesh=mesh, in_shardings=(P("dp"), None))
    y, k = f(X, key)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(want[0]))  # bit for bit
    assert k.dtype == key.dtype and same_key(k, want[1])
    for _ in range(3):  # a loop feeding the key back: one program
        y, k = f(X, k)
        want = jax.jit(noisy)(X, want[1])
    assert same_key(k, want[1]) and f.cache_size() == 1
    # Lowered's shardings are the keys' own (no key-data dim): jax.jit takes them as they are.
    lowered = f.lower(X, key)
    assert lowered.in_shardings[1].spec == P() and lowered.out_shardings[1].spec == P()
    g = jax.jit(noisy, in_shardings=lowered.in_shardings, out_shardings=lowered.out_shardings)
    assert same_key(g(X, key)[1], jax.jit(noisy)(X, key)[1])
    # A Compiled takes the key too.
    assert same_key(lowered.compile()(X, key)[1], jax.jit(noisy)(X, key)[1])


def test_a_batch_of_keys_sharded_over_dp(mesh):
    keys = jax.random.split(jax.random.key(1), 16)

    def per_row(x, keys):
        return x + jax.vmap(lambda k: jax.random.uniform(k, (32,)))(keys)

    f = shardc.jit(per_row, mesh=mesh, in_shardings=(P("dp"), P("dp")))
    np.testing.assert_array_equal(np.asarray(f(X, keys)), np.asarray(jax.jit(per_row)(X, keys)))
    lowered = f.lower(X, keys)
    assert lowered.module.main.args[1].type.shape == (16, 2)  # threefry's key data
    assert str(lowered.module.main.args[1].mapping) == '<@mesh, [{"dp"}, {}]>'
    assert lowered.in_shardings[1] == NamedSharding(mesh, P("dp"))
    # committed keys keep their sharding as the annotation
    placed = jax.device_put(keys, NamedSharding(mesh, P("dp")))
    g = shardc.jit(per_row, mesh=mesh)
    np.testing.assert_array_equal(np.asarray(g(X, placed)), np.asarray(jax.jit(per_row)(X, keys)))
    assert g.lower(X, placed).in_shardings[1].spec == P("dp")
    # lowered for ShapeDtypeStructs of keys, with a sharding: the same
    struct = jax.ShapeDtypeStruct(keys.shape, keys.dtype, sharding=NamedSharding(mesh, P("dp")))
    lowered = g.lower(jax.ShapeDtypeStruct(X.shape, X.dtype), struct)
    assert lowered.module.main.args[1].type.shape == (16, 2)
    assert lowered.in_shardings[1].spec == P("dp")


def test_another_key_implementation(mesh):
    key = jax.random.key(3, impl="rbg")  # 4 words of key data

    def draw(x, key):
        return x * jax.random.uniform(key, x.shape), jax.random.split(key)

    y, ks = shardc.jit(draw, mesh=mesh, in_shardings=(P("dp"), None))(X, key)
    want_y, want_ks = jax.jit(draw)(X, key)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(want_y))
    assert ks.shape == (2,) and same_key(ks, want_ks)


def test_numpy_backend_and_legacy_keys():
    # The numpy backend runs JAX's threefry exactly (uint32 and ui64 arithmetic).
    f = shardc.jit(noisy, mesh=AbstractMesh((2, 4), ("dp", "tp")), backend="numpy",
                   in_shardings=(P("dp"), None))
    for key in (jax.random.key(5), jax.random.PRNGKey(5)):
        y, k = f(X, key)
        want = jax.jit(noisy)(X, key)
        # normal draws through erf_inv: float64 on numpy, XLA's float32 polynomial in JAX
        np.testing.assert_allclose(y, np.asarray(want[0]), rtol=1e-5, atol=1e-5)
        want_data = jax.random.key_data(want[1]) if key.dtype != np.uint32 else want[1]
        got_data = jax.random.key_data(k) if key.dtype != np.uint32 else k
        np.testing.assert_array_equal(np.asarray(got_data), np.asarray(want_data))


def test_the_jax_executor_runs_threefrys_64_bit_values(mesh):
    # JAX lowers threefry with ui64 shifts even with 64-bit mode off; the executor traces
    # such a program with 64-bit types on instead of refusing it.
    assert not jax.config.jax_enable_x64
    legacy = jax.random.PRNGKey(7)
    module = shardc.from_jax(lambda x, k: x + jax.random.uniform(k, x.shape), X, legacy,
                             mesh=mesh, in_shardings=(P("dp"), None))
    assert "ui64" in formats.emit(module, "native")
    result = shardc.compile(module)
    (got,) = result.run([X, np.asarray(legacy)], backend="jax")
    want = jax.jit(lambda x, k: x + jax.random.uniform(k, x.shape))(X, legacy)
    np.testing.assert_array_equal(got, np.asarray(want))


WIDE_ARGUMENT = """mesh @mesh = <["dp"=2]>

func @main(%x: tensor<4xui64, <@mesh, [{"dp"}]>>) -> tensor<4xui64> {
  %0 = add %x, %x : tensor<4xui64>
  return %0
}
"""


def test_64_bit_values_at_the_boundary():
    # Host arrays (the executor's run): ui64 in and out, kept whole.
    result = shardc.compile(shardc.parse(WIDE_ARGUMENT))
    x = np.array([2**40, 3, 2**63 - 1, 7], np.uint64)
    (got,) = result.run([x], backend="jax")
    assert got.dtype == np.uint64 and got.tolist() == (x + x).tolist()
    # jax.Arrays: a ui64 argument needs 64-bit mode, which says so.
    with pytest.raises(shardc.ExecutionError, match="argument 0 of @main is ui64, which a "
                       "jax.Array holds only with 64-bit mode on"):
        JaxArrayProgram(result.spmd)


def test_normal_draws_import_erf_inv(mesh):
    f = shardc.jit(lambda k: jax.random.normal(k, (16, 8)), mesh=mesh,
                   out_shardings=P("dp", "tp"))
    key = jax.random.key(11)
    y = f(key)
    assert "erf_inv" in f.lower(key).as_text()
    np.testing.assert_array_equal(np.asarray(y), np.asarray(jax.random.normal(key, (16, 8))))
    assert y.sharding.spec == P("dp", "tp")


def test_nnx_rngs_in_the_state_and_dropout(mesh):
    nnx = pytest.importorskip("flax.nnx", reason="needs flax (pip install 'shardc[ecosystem]')")

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(32, 32, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.lin(x))

    graphdef, state = nnx.split(Model(nnx.Rngs(0)))

    def forward(state, x):
        model = nnx.merge(graphdef, state)
        return model(x), nnx.state(model)

    f = shardc.jit(forward, mesh=mesh, in_shardings=(None, P("dp")))
    got = want = (None, state)
    for _ in range(3):
        got = f(got[1], X)
        want = jax.jit(forward)(want[1], X)
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
        for a, b in zip(jax.tree_util.tree_leaves(got[1]), jax.tree_util.tree_leaves(want[1]),
                        strict=True):
            if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
                assert same_key(a, b)
            else:
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert f.cache_size() == 1
