"""The programs of benchmarks/jit.py: training steps as people write them in JAX.

- `llama(layers)`: a Llama-style decoder (RMSNorm, rotary embeddings, grouped-query attention
  with 8 query and 2 key/value heads, a SwiGLU MLP), its cross-entropy loss, `jax.grad` and an
  SGD update, weights Megatron-sharded over `tp` and the batch over `dp`;
- `nnx()`: a 2-layer Flax NNX language model (`nnx.MultiHeadAttention`, `nnx.LayerNorm`, a
  GELU MLP) trained by `optax.adamw`, the batch sharded over `dp` and the parameters and the
  optimizer state left to each compiler (jax.jit replicates them, shardc's propagation decides).

Each returns `(step, args, in_specs)`: the function, its arguments (numpy arrays and pytrees)
and a PartitionSpec (or None) per positional argument, for `jax.jit` and `shardc.jit` alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

VOCAB, D, HEADS, KV_HEADS, FFN, SEQ, BATCH = 256, 128, 8, 2, 256, 64, 8


def llama(layers: int) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    hd = D // HEADS
    rng = np.random.default_rng(0)

    def arr(*shape: int) -> np.ndarray:
        return (0.05 * rng.standard_normal(shape)).astype(np.float32)

    def rms(x, w):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w

    def rope(x):
        t = x.shape[1]
        freqs = 1.0 / (10000 ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))
        angles = jnp.arange(t, dtype=jnp.float32)[:, None] * freqs[None, :]
        cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
        x1, x2 = x[..., ::2], x[..., 1::2]
        return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)

    def block(h, p):
        b, t, _ = h.shape
        x = rms(h, p["attn_norm"])
        q = rope((x @ p["wq"]).reshape(b, t, HEADS, hd))
        k = rope((x @ p["wk"]).reshape(b, t, KV_HEADS, hd))
        v = (x @ p["wv"]).reshape(b, t, KV_HEADS, hd)
        k, v = (jnp.repeat(a, HEADS // KV_HEADS, axis=2) for a in (k, v))
        scores = jnp.einsum("bthd,bshd->bhts", q, k) / hd**0.5
        scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -1e9)
        out = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, -1), v).reshape(b, t, D)
        h = h + out @ p["wo"]
        x = rms(h, p["mlp_norm"])
        return h + (jax.nn.silu(x @ p["w_gate"]) * (x @ p["w_up"])) @ p["w_down"]

    def loss(params, tokens, targets):
        h = params["embed"][tokens]
        for p in params["layers"]:
            h = block(h, p)
        logp = jax.nn.log_softmax(rms(h, params["norm"]) @ params["head"], -1)
        return -jnp.take_along_axis(logp, targets[..., None], -1).mean()

    def step(params, tokens, targets):
        value, grads = jax.value_and_grad(loss)(params, tokens, targets)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

    def layer() -> dict[str, np.ndarray]:
        return {"attn_norm": np.ones(D, np.float32), "wq": arr(D, D),
                "wk": arr(D, KV_HEADS * hd), "wv": arr(D, KV_HEADS * hd), "wo": arr(D, D),
                "mlp_norm": np.ones(D, np.float32), "w_gate": arr(D, FFN), "w_up": arr(D, FFN),
                "w_down": arr(FFN, D)}

    params = {"embed": arr(VOCAB, D), "layers": [layer() for _ in range(layers)],
              "norm": np.ones(D, np.float32), "head": arr(D, VOCAB)}
    column, row = P(None, "tp"), P("tp")
    layer_spec = {"attn_norm": P(), "wq": column, "wk": column, "wv": column, "wo": row,
                  "mlp_norm": P(), "w_gate": column, "w_up": column, "w_down": row}
    specs = {"embed": P(), "layers": [layer_spec] * layers, "norm": P(), "head": column}
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    targets = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    return step, (params, tokens, targets), (specs, P("dp"), P("dp"))


def nnx() -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    import jax
    import optax
    from flax import nnx as fnnx
    from jax.sharding import PartitionSpec as P

    class Block(fnnx.Module):
        def __init__(self, rngs: fnnx.Rngs):
            self.norm1 = fnnx.LayerNorm(D, rngs=rngs)
            self.attn = fnnx.MultiHeadAttention(HEADS, D, decode=False, rngs=rngs)
            self.norm2 = fnnx.LayerNorm(D, rngs=rngs)
            self.up = fnnx.Linear(D, FFN, rngs=rngs)
            self.down = fnnx.Linear(FFN, D, rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.down(jax.nn.gelu(self.up(self.norm2(x))))

    class LM(fnnx.Module):
        def __init__(self, rngs: fnnx.Rngs):
            self.embed = fnnx.Embed(VOCAB, D, rngs=rngs)
            self.blocks = fnnx.List([Block(rngs) for _ in range(2)])
            self.head = fnnx.Linear(D, VOCAB, rngs=rngs)

        def __call__(self, tokens):
            x = self.embed(tokens)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    graphdef, params = fnnx.split(LM(fnnx.Rngs(0)), fnnx.Param)
    tx = optax.adamw(1e-3)

    def step(params, opt_state, tokens, targets):
        def loss(params):
            logits = fnnx.merge(graphdef, params)(tokens)
            return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    rng = np.random.default_rng(0)
    params = jax.tree_util.tree_map(np.asarray, params)
    opt_state = jax.tree_util.tree_map(np.asarray, tx.init(params))
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    targets = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    return step, (params, opt_state, tokens, targets), (None, None, P("dp"), P("dp"))


def build(name: str) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """`llama2`, `llama8`, `llama32` (the layer count) or `nnx`."""
    if name == "nnx":
        return nnx()
    return llama(int(name.removeprefix("llama")))
