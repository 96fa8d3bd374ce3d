"""One process of a 2-process cluster running `shardc.jit` unchanged under
`jax.distributed.initialize` (tests/test_distributed.py starts two of these).

    python tests/jit_cluster_worker.py 127.0.0.1:PORT PROCESS_ID

Each process passes the same global inputs (numpy, and a global jax.Array built with
`jax.make_array_from_callback`) and checks the shards it holds against `jax.jit`'s result.
It joins the cluster as docs/jax.md ("Many processes and hosts") says a cluster on one machine
should: everything it listens on stays on loopback.
"""

from __future__ import annotations

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.distributed import bind_cpu_collectives  # noqa: E402


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def main() -> int:
    coordinator, process_id = sys.argv[1], int(sys.argv[2])
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=2,
                               process_id=process_id, initialization_timeout=60,
                               coordinator_bind_address=coordinator)
    bind_cpu_collectives("127.0.0.1")  # gloo, which JAX binds to the hostname's address
    # "dp" across the processes, "tp" within each: FSDP-style weights sharded over "dp"
    # make the all-gathers cross processes.
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32)
                 for s in [(16, 64), (64, 256), (256, 64)])
    want = np.asarray(mlp(x, w1, w2))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), P("dp", "tp"), P("tp", "dp")))
    gx = jax.make_array_from_callback(x.shape, NamedSharding(mesh, P("dp")), lambda i: x[i])
    failures = 0
    for args in ((x, w1, w2), (gx, w1, w2)):
        y = f(*args)
        assert not y.is_fully_addressable  # a global array: half of it lives elsewhere
        for shard in y.addressable_shards:
            got = np.asarray(shard.data)
            if not np.allclose(got, want[shard.index], rtol=1e-4, atol=1e-3):
                failures += 1
    process_of = [d.process_index for d in mesh.devices.flat]  # by mesh position = device id
    crossing = [c for c in f.lower(x, w1, w2).report["collectives"]
                if any(len({process_of[d] for d in g}) > 1 for g in c["groups"])]
    print(f"process {process_id}: sharding {y.sharding.spec}, {len(crossing)} collectives "
          f"across processes, {failures} failures, cache {f.cache_size()}", flush=True)
    return 1 if failures or not crossing else 0


if __name__ == "__main__":
    raise SystemExit(main())
