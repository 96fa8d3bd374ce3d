"""An MLP trained with `optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))` under
`shardc.jit` and `jax.jit` side by side: Megatron on "tp" with the batch on "dp" (the optimizer
state's shardings from the parameters' with `optax.tree_map_params`), and unannotated. The
state is donated; adam's step count is a 0-d leaf."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ecosystem.harness import RTOL, auto_mesh, require, side_by_side

(optax,) = require("optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

TX = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
PARAM_SPECS = {"w1": P(None, "tp"), "b1": P("tp"), "w2": P("tp", None), "b2": P()}


def init():
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((32, 128)).astype(np.float32) * 0.2,
              "b1": np.zeros(128, np.float32),
              "w2": rng.standard_normal((128, 8)).astype(np.float32) * 0.2,
              "b2": np.zeros(8, np.float32)}
    return params, TX.init(params)


def train_step(state, batch):
    params, opt_state = state

    def loss_fn(p):
        h = jax.nn.relu(batch["x"] @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - batch["y"]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), loss


@pytest.mark.parametrize("annotate", [True, False], ids=["megatron", "unannotated"])
def test_optax_chain_mlp_step(annotate):
    mesh = auto_mesh(("dp", "tp"))
    state = init()
    specs = None
    if annotate:
        opt_specs = optax.tree_map_params(TX, lambda _, spec: spec, state[1], PARAM_SPECS,
                                          transform_non_params=lambda _: P())
        specs = (PARAM_SPECS, opt_specs)
        assert opt_specs[1][0].mu == PARAM_SPECS and opt_specs[1][0].count == P()
    rng = np.random.default_rng(1)
    batch = {"x": rng.standard_normal((16, 32)).astype(np.float32),
             "y": rng.standard_normal((16, 8)).astype(np.float32)}
    run = side_by_side(train_step, state, batch, mesh, state_specs=specs,
                       batch_spec=P("dp") if annotate else None)
    assert run.leaves == 4 + 1 + 8 + 1  # parameters, adam's count, mu and nu, the loss
    assert run.max_error <= RTOL, (run.max_error, run.worst_leaf)
    assert run.shardc_bytes <= run.xla_bytes and run.report_bytes <= run.xla_bytes, run
    assert (run.shardc_bytes > 0) == annotate
    assert run.programs == 1 and run.deleted
