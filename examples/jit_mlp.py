"""shardc.jit on a Megatron MLP: 8 simulated CPU devices as a 2x4 ("dp", "tp") mesh.

    python examples/jit_mlp.py

You give the batch split over "dp" and the column/row split of the two weights over "tp";
shardc decides every other sharding and the collectives (one all_reduce over "tp"), runs the
per-device program on the 8 devices and the result is checked against `jax.jit`'s. Exit 1 if
they differ.
"""

from __future__ import annotations

import os
import sys

# Simulated devices on a CPU-only machine (must be set before JAX is imported).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def main() -> int:
    if len(jax.devices()) < 8:
        print(f"error: needs 8 devices, JAX sees {len(jax.devices())} (XLA_FLAGS is "
              f"{os.environ.get('XLA_FLAGS')!r})", file=sys.stderr)
        return 1
    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32)
                 for s in [(16, 64), (64, 256), (256, 64)])

    f = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), P(None, "tp"), P("tp")))
    y = f(x, w1, w2)
    want = jax.jit(mlp)(x, w1, w2)

    lowered = f.lower(x, w1, w2)
    print(lowered.cost_text())
    print(f"result: {y.shape} {y.dtype}, sharding {y.sharding.spec} on "
          f"{len(y.sharding.device_set)} {jax.devices()[0].platform} devices")
    error = float(np.max(np.abs(np.asarray(y) - np.asarray(want))))
    scale = float(np.max(np.abs(np.asarray(want))))
    ok = error <= 1e-5 * scale
    print(f"shardc.jit vs jax.jit: max abs difference {error:.3e} "
          f"(max |value| {scale:.3e}) {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
