"""`shardc.jit` on meshes with Explicit axes (`jax.make_mesh`'s default): a function written
for JAX's explicit sharding (`out_sharding=`, `jax.sharding.reshard`) runs as under `jax.jit`,
with JAX's shardings as constraints; an unannotated one is still shardc's to decide, where
explicit mode would reject an ambiguous contraction."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardc

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices")


@pytest.fixture
def mesh():
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        yield mesh


def _explicit(x, w):
    h = jnp.dot(x, w, out_sharding=P("dp", "tp"))
    return jax.sharding.reshard(jax.nn.relu(h), P("dp", None)).sum(-1)


def _arrays(mesh):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 64)).astype(np.float32)
    return (jax.device_put(x, NamedSharding(mesh, P("dp"))),
            jax.device_put(w, NamedSharding(mesh, P(None, "tp"))))


def test_explicit_sharding_program_runs_as_under_jax_jit(mesh):
    x, w = _arrays(mesh)
    g = shardc.jit(_explicit)
    got, want = g(x, w), jax.jit(_explicit)(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got.sharding.spec == want.sharding.spec == P("dp")
    lowered = g.lower(x, w)
    # JAX's shardings are kept: h on (dp, tp), then gathered along tp by the reshard.
    text = lowered.as_text()
    assert '[{"dp"}, {"tp"}]' in text, text
    assert [(c["kind"], c["axes"]) for c in lowered.report["collectives"]] == [
        ("all_gather", ["tp"])]
    # The numpy backend on the abstract mesh, arguments given as numpy arrays.
    h = shardc.jit(_explicit, mesh=mesh.abstract_mesh, backend="numpy",
                   in_shardings=(P("dp"), P(None, "tp")))
    np.testing.assert_allclose(h(np.asarray(x), np.asarray(w)), np.asarray(want), rtol=1e-5)


def test_unannotated_program_is_shardc_s_to_decide(mesh):
    x, w = _arrays(mesh)
    w2 = jax.device_put(np.asarray(w).T.copy(), NamedSharding(mesh, P("tp")))

    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    with pytest.raises(Exception, match="ambiguous"):
        jax.jit(mlp)(x, w, w2)  # explicit mode: the contraction over tp has no sharding
    y = shardc.jit(mlp)(x, w, w2)  # traced on Auto axes: shardc decides (an all_reduce)
    want = jax.nn.relu(np.asarray(x) @ np.asarray(w)) @ np.asarray(w2)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


def test_a_function_failing_on_both_meshes_raises_its_own_error(mesh):
    x, w = _arrays(mesh)

    def broken(x, w):
        raise ValueError("the user's own error")

    with pytest.raises(ValueError, match="the user's own error"):
        shardc.jit(broken)(x, w)
