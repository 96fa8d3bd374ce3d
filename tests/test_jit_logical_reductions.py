"""`jnp.any`/`jnp.all` and bitwise `or`/`and` reductions over sharded dims under `shardc.jit`:
the pending value is combined by an `spmd.all_reduce` of the same kind (logical on booleans,
bitwise on integers), on both backends, equal to `jax.jit`'s and in no more collectives than
XLA issues (where XLA:CPU compiles it: a sharded integer bitwise all-reduce it does not)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardc

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices")


def _flags(x, xi):
    return (jnp.isnan(x).any(), (x > 1).all(), (x > 0).any(0), (x > -2).all(1))


def _bits(x, xi):
    return (jax.lax.reduce(xi, np.int32(0), jax.lax.bitwise_or, (0,)),
            jax.lax.reduce(xi, np.int32(-1), jax.lax.bitwise_and, (1,)))


@pytest.mark.parametrize("backend", ["jax", "numpy"])
@pytest.mark.parametrize("f", [_flags, _bits], ids=["any-all", "bitwise"])
def test_logical_reductions_over_sharded_dims(f, backend):
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    x[3, 5] = 2.5  # one column's `> 0` rests on one device's rows, `all(> -2)` on one entry
    x[11, 30] = -3.0
    xi = rng.integers(0, 1 << 20, (16, 32)).astype(np.int32)
    spec = (P("dp", "tp"), P("dp", "tp"))
    g = shardc.jit(f, mesh=mesh if backend == "jax" else mesh.abstract_mesh,
                   in_shardings=spec, backend=backend)
    want = jax.jit(f)(x, xi)
    for got, expected in zip(g(x, xi), want, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    # The per-device program reduces with the same kind, and issues no more all-reduces than
    # XLA's compiled program does.
    lowered = g.lower(x, xi)
    kinds = {"or"} if f is _flags else {"or", "and"}
    per_device = lowered.as_text("spmd")
    assert all(f"kind = {k}, groups" in per_device for k in kinds), per_device
    issued = lowered.report["issued"]
    assert set(issued["by_kind"]) == {"all_reduce"}, issued
    if f is _bits:
        # (XLA:CPU cannot compile this one sharded: "Unsupported reduction computation" for an
        # integer all-reduce with bitwise_or; shardc's JAX backend gathers and folds instead.)
        assert issued["count"] == 2, issued
        return
    xla = jax.jit(f, in_shardings=tuple(NamedSharding(mesh, s) for s in spec)).lower(
        x, xi).compile().as_text()
    xla_count = xla.count(" all-reduce(") + xla.count(" all-reduce-start(")
    assert 0 < issued["count"] <= xla_count, (issued["count"], xla_count)
