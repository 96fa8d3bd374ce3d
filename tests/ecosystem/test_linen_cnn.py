"""A Flax linen CNN (convolution, BatchNorm with its mutable `batch_stats`, max pooling,
dropout drawing from a PRNG key carried in the state) trained with `optax.sgd` with momentum,
under `shardc.jit` and `jax.jit` side by side: the batch on "dp" with the parameters
replicated, and unannotated. The state (parameters, batch statistics, momentum, key) is
donated."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ecosystem.harness import RTOL, auto_mesh, require, side_by_side

flax, optax = require("flax", "optax")

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

TX = optax.sgd(0.1, momentum=0.9)


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.relu(nn.BatchNorm(use_running_average=not train)(nn.Conv(8, (3, 3))(x)))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.Dropout(0.25, deterministic=not train)(x)
        return nn.Dense(10)(x.reshape(x.shape[0], -1))


MODEL = CNN()


def init():
    x = np.zeros((16, 8, 8, 3), np.float32)
    v = MODEL.init({"params": jax.random.key(0), "dropout": jax.random.key(1)}, x, False)
    params = jax.tree_util.tree_map(np.asarray, v["params"])
    stats = jax.tree_util.tree_map(np.asarray, v["batch_stats"])
    return params, stats, TX.init(params), jax.random.key(2)


def train_step(state, batch):
    params, stats, opt_state, key = state
    key, dropout = jax.random.split(key)

    def loss_fn(p):
        logits, updated = MODEL.apply({"params": p, "batch_stats": stats}, batch["x"], True,
                                      rngs={"dropout": dropout}, mutable=["batch_stats"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["y"]).mean()
        return loss, updated["batch_stats"]

    (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), stats, opt_state, key), loss


@pytest.mark.parametrize("annotate", [True, False], ids=["batch", "unannotated"])
def test_linen_cnn_batchnorm_dropout_step(annotate):
    mesh = auto_mesh(("dp", "tp"))
    state = init()
    rng = np.random.default_rng(1)
    batch = {"x": rng.standard_normal((16, 8, 8, 3)).astype(np.float32),
             "y": rng.integers(0, 10, 16).astype(np.int32)}
    specs = jax.tree_util.tree_map(lambda _: P(), state) if annotate else None
    run = side_by_side(train_step, state, batch, mesh, state_specs=specs,
                       batch_spec=P("dp") if annotate else None)
    # conv and dense kernels and biases, BatchNorm's scale and bias, its mean and var, the
    # momentum of each parameter, the key, the loss
    assert run.leaves == 6 + 2 + 6 + 1 + 1
    assert run.max_error <= RTOL, (run.max_error, run.worst_leaf)
    # the same dropout masks: a mask drawn differently changes the loss by far more than this
    assert np.allclose(*zip(*run.losses), rtol=1e-5), run.losses
    assert run.deleted and run.programs == 1
    assert run.shardc_bytes == run.report_bytes
    assert run.shardc_bytes <= run.xla_bytes, (run.shardc_bytes, run.xla_bytes)
