"""A decoder written the way a JAX user stacks layers: weights stacked on a leading dim and run
by `jax.lax.scan`, each layer rematerialised (`jax.checkpoint`), bfloat16 activations over
float32 parameters, causal `jax.nn.dot_product_attention` with a `with_sharding_constraint`
on the heads, trained with gradient accumulation (`optax.MultiSteps` over `optax.adamw`: a
`lax.cond` choosing between accumulating and applying, on a 0-d step count). Under
`shardc.jit` and `jax.jit` side by side: heads and the MLP on "tp" with the batch on "dp"
(the optimizer state's shardings from the parameters' with `optax.tree_map_params`), and
unannotated. The state is donated; the 5-step loop applies the update twice."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ecosystem.harness import RTOL, auto_mesh, require, side_by_side

(optax,) = require("optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

LAYERS, D, HEADS, VOCAB = 2, 32, 4, 64
TX = optax.MultiSteps(optax.adamw(1e-2), every_k_schedule=2).gradient_transformation()
PARAM_SPECS = {"emb": P(None, "tp"), "qkv": P(None, None, None, "tp", None),
               "o": P(None, "tp", None, None), "up": P(None, None, "tp"),
               "down": P(None, "tp", None)}


def init():
    rng = np.random.default_rng(0)
    shapes = {"emb": (VOCAB, D), "qkv": (LAYERS, D, 3, HEADS, D // HEADS),
              "o": (LAYERS, HEADS, D // HEADS, D), "up": (LAYERS, D, 4 * D),
              "down": (LAYERS, 4 * D, D)}
    params = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
    return params, TX.init(params)


def layer(h, w):
    qkv = jnp.einsum("bsd,dthk->tbshk", h, w["qkv"].astype(jnp.bfloat16))
    qkv = jax.lax.with_sharding_constraint(qkv, P(None, "dp", None, "tp", None))
    att = jax.nn.dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
    h = h + jnp.einsum("bshk,hkd->bsd", att, w["o"].astype(jnp.bfloat16))
    up = jax.nn.gelu(h @ w["up"].astype(jnp.bfloat16))
    return h + up @ w["down"].astype(jnp.bfloat16), None


def loss_fn(params, tokens):
    h = params["emb"][tokens[:, :-1]].astype(jnp.bfloat16)
    stacked = {k: v for k, v in params.items() if k != "emb"}
    h, _ = jax.lax.scan(jax.checkpoint(layer), h, stacked)
    logits = h.astype(jnp.float32) @ params["emb"].T
    return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()


def train_step(state, tokens):
    params, opt_state = state
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), loss


@pytest.mark.parametrize("annotate", [True, False], ids=["megatron", "unannotated"])
def test_multisteps_scan_attention_step(annotate):
    mesh = auto_mesh(("dp", "tp"))
    state = init()
    specs = None
    if annotate:
        opt_specs = optax.tree_map_params(TX, lambda _, spec: spec, state[1], PARAM_SPECS,
                                          transform_non_params=lambda _: P())
        specs = (PARAM_SPECS, opt_specs)
    tokens = np.random.default_rng(1).integers(0, VOCAB, (8, 17)).astype(np.int32)
    run = side_by_side(train_step, state, tokens, mesh, state_specs=specs,
                       batch_spec=P("dp") if annotate else None)
    assert run.max_error <= RTOL, (run.max_error, run.worst_leaf)
    assert run.deleted and run.programs == 1
    assert np.allclose(*zip(*run.losses), rtol=1e-5), run.losses
    assert run.losses[0] == run.losses[1] and run.losses[2][0] < run.losses[1][0]  # accumulated
    # XLA's CPU backend widens bf16 collectives to f32, so the HLO's bytes (both sides read the
    # same way) exceed the report's, which counts what shardc's program asks for
    assert run.shardc_bytes <= run.xla_bytes and run.report_bytes <= run.shardc_bytes, run
