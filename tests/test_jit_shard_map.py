"""A `jax.shard_map` inside a function given to shardc.jit, as users write ring attention or
expert parallelism: the body's collectives (ppermute, psum_scatter, all_gather, all_to_all,
psum/pmax over one or both axes) and `axis_index` (JAX's `partition_id` arithmetic) run on the
JAX backend as on the numpy one, to jax.jit's numbers."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def _ring(a):  # each device's block moves one step round "tp", plus its index there
    moved = jax.lax.ppermute(a, "tp", [(j, (j + 1) % 4) for j in range(4)])
    return moved + jax.lax.axis_index("tp").astype(a.dtype)


def _scatter_gather(a):
    c = jax.lax.psum_scatter(a, "tp", scatter_dimension=1, tiled=True)
    return jax.lax.all_gather(c * 2, "tp", axis=1, tiled=True)


def _all_to_all(a):
    return jax.lax.all_to_all(a, "tp", 1, 0, tiled=True)


def _normalised(a):  # a max over both axes, a sum over "dp"
    return a / jax.lax.pmax(jnp.max(jnp.abs(a)), ("dp", "tp")) + jax.lax.psum(a, "dp")


def _dp_gather(a):
    return jax.lax.all_gather(a, "dp", axis=0, tiled=True) * 2


BODIES = {"ring": (_ring, P("dp", "tp")), "scatter_gather": (_scatter_gather, P("dp", "tp")),
          "all_to_all": (_all_to_all, P(("dp", "tp"))), "normalised": (_normalised, P("dp", "tp")),
          "dp_gather": (_dp_gather, P(None, "tp"))}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_shard_map_bodies_run_on_both_backends(mesh, name):
    body, out_spec = BODIES[name]
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 64

    def f(a):
        return jax.shard_map(body, mesh=mesh, in_specs=P("dp", "tp"), out_specs=out_spec,
                             check_vma=False)(a) * 3

    sharded = NamedSharding(mesh, P("dp", "tp"))
    want = np.asarray(jax.jit(f, in_shardings=sharded)(x))
    jitted = shardc.jit(f, mesh=mesh, in_shardings=sharded)
    got = jitted(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # XLA compiles N replicas of the per-device program (compiler/executors/xla_replicas.py),
    # from JAX's trace when the body has a replica-group collective of its own (ppermute,
    # all_gather, psum_scatter, all_to_all), else printed by shardc (its psum and pmax are
    # spmd.all_reduce)
    (compiled,) = jitted.programs()
    assert compiled.program().route == ("text" if name == "normalised" else "trace")
    simulated = shardc.jit(f, mesh=mesh, in_shardings=sharded, backend="numpy")(x)
    np.testing.assert_allclose(simulated, want, rtol=1e-6)
