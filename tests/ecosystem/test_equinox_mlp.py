"""An Equinox MLP (`eqx.nn.MLP`, its arrays split off with `eqx.partition`) trained with
`optax.adam` under `shardc.jit` and `jax.jit` side by side, with the batch on "dp" and the
hidden layer Megatron-sharded on "tp" (set with `eqx.tree_at`), and unannotated."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ecosystem.harness import RTOL, auto_mesh, require, side_by_side

eqx, optax = require("equinox", "optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

TX = optax.adam(1e-2)


@pytest.mark.parametrize("annotate", [True, False], ids=["megatron", "unannotated"])
def test_equinox_mlp_step(annotate):
    mesh = auto_mesh(("dp", "tp"))
    model = eqx.nn.MLP(32, 8, 128, 1, activation=jax.nn.gelu, key=jax.random.key(0))
    params, static = eqx.partition(model, eqx.is_array)

    def train_step(state, batch):
        params, opt_state = state

        def loss_fn(p):
            predict = jax.vmap(eqx.combine(p, static))
            return jnp.mean((predict(batch["x"]) - batch["y"]) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = TX.update(grads, opt_state, params)
        return (eqx.apply_updates(params, updates), opt_state), loss

    specs = None
    if annotate:
        replicated = jax.tree_util.tree_map(lambda _: P(), params)
        hidden, out = params.layers
        param_specs = eqx.tree_at(
            lambda m: (m.layers[0].weight, m.layers[0].bias, m.layers[1].weight), replicated,
            (P("tp", None), P("tp"), P(None, "tp")))
        assert hidden.weight.shape == (128, 32) and out.weight.shape == (8, 128)
        opt_specs = optax.tree_map_params(TX, lambda _, s: s, TX.init(params), param_specs,
                                          transform_non_params=lambda _: P(),
                                          is_leaf=lambda x: isinstance(x, P))
        specs = (param_specs, opt_specs)
    rng = np.random.default_rng(1)
    batch = {"x": rng.standard_normal((16, 32)).astype(np.float32),
             "y": rng.standard_normal((16, 8)).astype(np.float32)}
    run = side_by_side(train_step, (params, TX.init(params)), batch, mesh, state_specs=specs,
                       batch_spec=P("dp") if annotate else None)
    assert run.leaves == 4 + 1 + 8 + 1  # weights and biases, count, mu and nu, the loss
    assert run.max_error <= RTOL, (run.max_error, run.worst_leaf)
    assert run.shardc_bytes <= run.xla_bytes and run.report_bytes <= run.xla_bytes, run
    assert (run.shardc_bytes > 0) == annotate
    assert run.programs == 1 and run.deleted
