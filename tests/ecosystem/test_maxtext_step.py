"""A MaxText-style decoder training step under `shardc.jit` and `jax.jit` side by side: the
layers' weights stacked on a leading dim and run by `jax.lax.scan`, each layer rematerialised
(`jax.checkpoint`, nothing saved), RMSNorm, rotary embeddings, grouped-query attention (8
query heads over 4 key/value heads) and a SwiGLU MLP, with FSDP x TP shardings (weights over
"fsdp" on their embedding dim and "tp" on heads / hidden units, the batch over "fsdp", the
residual stream constrained as MaxText constrains it), trained with `optax.adamw`."""

from __future__ import annotations

import numpy as np

from tests.ecosystem.harness import RTOL, auto_mesh, require, side_by_side

(optax,) = require("optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

LAYERS, VOCAB, D, Q_HEADS, KV_HEADS, HEAD_DIM, FF, SEQ, BATCH = 3, 64, 32, 8, 4, 8, 64, 16, 4
TX = optax.adamw(1e-2, weight_decay=0.1)

SPECS = {
    "embed": P("tp", "fsdp"),
    "final_norm": P(None),
    "layers": {
        "attn_norm": P(None, None),
        "wq": P(None, "fsdp", "tp", None),
        "wk": P(None, "fsdp", "tp", None),
        "wv": P(None, "fsdp", "tp", None),
        "wo": P(None, "tp", None, "fsdp"),
        "mlp_norm": P(None, None),
        "w_gate": P(None, "fsdp", "tp"),
        "w_up": P(None, "fsdp", "tp"),
        "w_down": P(None, "tp", "fsdp"),
    },
}


def init_params():
    rng = np.random.default_rng(0)

    def normal(*shape, scale=0.1):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    return {
        "embed": normal(VOCAB, D, scale=0.5),
        "final_norm": np.ones(D, np.float32),
        "layers": {
            "attn_norm": np.ones((LAYERS, D), np.float32),
            "wq": normal(LAYERS, D, Q_HEADS, HEAD_DIM),
            "wk": normal(LAYERS, D, KV_HEADS, HEAD_DIM),
            "wv": normal(LAYERS, D, KV_HEADS, HEAD_DIM),
            "wo": normal(LAYERS, Q_HEADS, HEAD_DIM, D),
            "mlp_norm": np.ones((LAYERS, D), np.float32),
            "w_gate": normal(LAYERS, D, FF),
            "w_up": normal(LAYERS, D, FF),
            "w_down": normal(LAYERS, FF, D),
        },
    }


def rms_norm(x, scale):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale


def rope(x, positions):
    """Rotary embeddings on the last dim of x [batch, seq, heads, head_dim]."""
    half = HEAD_DIM // 2
    freq = 1.0 / (10000.0 ** (jnp.arange(half, dtype=jnp.float32) / half))
    angle = positions[:, None].astype(jnp.float32) * freq[None, :]  # [seq, half]
    sin, cos = jnp.sin(angle)[None, :, None, :], jnp.cos(angle)[None, :, None, :]
    first, second = x[..., :half], x[..., half:]
    return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def decoder_layer(x, layer):
    x = jax.lax.with_sharding_constraint(x, P("fsdp", None, None))
    b, s, _ = x.shape
    positions = jnp.arange(s)
    h = rms_norm(x, layer["attn_norm"])
    q = rope(jnp.einsum("bsd,dhk->bshk", h, layer["wq"]), positions)
    k = rope(jnp.einsum("bsd,dhk->bshk", h, layer["wk"]), positions)
    v = jnp.einsum("bsd,dhk->bshk", h, layer["wv"])
    group = Q_HEADS // KV_HEADS  # grouped-query: each key/value head serves `group` queries
    q = q.reshape(b, s, KV_HEADS, group, HEAD_DIM)
    scores = jnp.einsum("bqhgk,bshk->bhgqs", q, k) / np.sqrt(HEAD_DIM)
    causal = jnp.tril(jnp.ones((s, s), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    attended = jnp.einsum("bhgqs,bshk->bqhgk", weights, v).reshape(b, s, Q_HEADS, HEAD_DIM)
    x = x + jnp.einsum("bshk,hkd->bsd", attended, layer["wo"])
    h = rms_norm(x, layer["mlp_norm"])
    gated = jax.nn.silu(h @ layer["w_gate"]) * (h @ layer["w_up"])  # SwiGLU
    return x + gated @ layer["w_down"], None


def loss_fn(params, batch):
    x = params["embed"][batch["tokens"]]
    remat = jax.checkpoint(decoder_layer, policy=jax.checkpoint_policies.nothing_saveable)
    x, _ = jax.lax.scan(remat, x, params["layers"])
    logits = rms_norm(x, params["final_norm"]) @ params["embed"].T  # tied embeddings
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()


def train_step(state, batch):
    params, opt_state = state
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), loss


def test_the_step_is_what_it_says():
    params = init_params()
    batch = make_batch()
    with jax.set_mesh(auto_mesh(("fsdp", "tp"))):
        text = jax.jit(train_step).lower((params, TX.init(params)), batch).as_text()
    assert "stablehlo.while" in text  # the scan over the stacked layers
    assert "stablehlo.optimization_barrier" in text  # the rematerialised layer
    assert params["layers"]["wq"].shape[2] == 2 * params["layers"]["wk"].shape[2]  # GQA


def make_batch():
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ + 1)).astype(np.int32)
    return {"tokens": tokens[:, :-1], "targets": tokens[:, 1:]}


def test_maxtext_style_step_fsdp_tp():
    mesh = auto_mesh(("fsdp", "tp"))
    params = init_params()
    opt_state = TX.init(params)
    opt_specs = optax.tree_map_params(TX, lambda _, s: s, opt_state, SPECS,
                                      transform_non_params=lambda _: P(),
                                      is_leaf=lambda x: isinstance(x, P))
    run = side_by_side(train_step, (params, opt_state), make_batch(), mesh,
                       state_specs=(SPECS, opt_specs), batch_spec=P("fsdp"))
    assert run.leaves == 11 * 3 + 1 + 1  # parameters, mu, nu; adamw's count; the loss
    assert run.max_error <= RTOL, (run.max_error, run.worst_leaf)
    assert 0 < run.shardc_bytes <= run.xla_bytes and run.report_bytes <= run.xla_bytes, run
    assert run.programs == 1 and run.deleted
