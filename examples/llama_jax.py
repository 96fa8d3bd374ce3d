"""A Llama-style decoder LM training step written in JAX: RMSNorm, RoPE, grouped-query attention,
SwiGLU, a cross-entropy loss, and AdamW (as optax.adamw computes it: bias-corrected moments,
decoupled weight decay, a step count). Plain JAX, no Flax or optax, so it lowers anywhere JAX does.

    cfg = small()                         # issue 31's small LM: d_model 64, vocab 256, 2 layers
    cfg = llama3_8b()                     # Llama-3-8B's shape: 32 layers, d_model 4096, ...
    step = make_step(cfg)                 # step(params, m, v, count, tokens, targets)
    args = abstract_args(cfg)             # jax.ShapeDtypeStruct pytrees: nothing is allocated
    specs = expert_specs(cfg, ("data", "fsdp"), "fsdp", "tensor")   # MaxText-style shardings
    acts = expert_activations(("data", "fsdp"), "tensor")          # ... and its constraints
    specs = megatron_specs(cfg, "data", "model")                    # tensor parallel + data

The expert plan is written the way MaxText's logical-axis rules write it: FSDP ("fsdp") on the
embed dims of every weight, tensor parallelism ("tensor") on heads, KV heads, the MLP dim and the
vocab, the batch on data x fsdp; norms replicated; the optimizer state laid out as its parameter.
With `scan=True` the layers' weights are stacked and the blocks run under `jax.lax.scan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


@dataclass(frozen=True)
class Config:
    layers: int = 2
    d_model: int = 64
    heads: int = 8
    kv_heads: int = 4
    d_head: int = 8
    d_ff: int = 256
    vocab: int = 256
    batch: int = 8
    seq: int = 32
    dtype: str = "float32"
    scan: bool = False


def small(**changes: Any) -> Config:
    """Issue 31's small LM (d_model 64, vocab 256, batch 8 x 32, 2 layers)."""
    return Config(**changes)


def llama3_8b(layers: int = 32, batch: int = 256, seq: int = 8192, **changes: Any) -> Config:
    """Llama-3-8B's shape: d_model 4096, 32 heads of 128, 8 KV heads, SwiGLU 14336, vocab
    128256, bf16 weights (f32 optimizer state)."""
    return Config(layers=layers, d_model=4096, heads=32, kv_heads=8, d_head=128, d_ff=14336,
                  vocab=128256, batch=batch, seq=seq, dtype="bfloat16", **changes)


def _layer_shapes(c: Config) -> dict[str, tuple[int, ...]]:
    return {
        "attn_norm": (c.d_model,),
        "wq": (c.d_model, c.heads, c.d_head),
        "wk": (c.d_model, c.kv_heads, c.d_head),
        "wv": (c.d_model, c.kv_heads, c.d_head),
        "wo": (c.heads, c.d_head, c.d_model),
        "mlp_norm": (c.d_model,),
        "w_gate": (c.d_model, c.d_ff),
        "w_up": (c.d_model, c.d_ff),
        "w_down": (c.d_ff, c.d_model),
    }


def param_shapes(c: Config) -> dict[str, Any]:
    layer = _layer_shapes(c)
    layers: Any = (
        {k: (c.layers, *s) for k, s in layer.items()}
        if c.scan
        else [dict(layer) for _ in range(c.layers)]
    )
    return {"embed": (c.vocab, c.d_model), "layers": layers, "final_norm": (c.d_model,),
            "unembed": (c.d_model, c.vocab)}


def rms_norm(x, w):
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def rope(x, pos):
    """Rotary embeddings on x [batch, seq, heads, d_head]."""
    d = x.shape[-1]
    inv = 1.0 / (10000.0 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
    ang = pos[:, None].astype(jnp.float32) * inv[None, :]
    sin, cos = jnp.sin(ang)[None, :, None, :], jnp.cos(ang)[None, :, None, :]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(x.dtype)


def _pin(x, specs: dict[str, P] | None, name: str):
    """`x` constrained to the activation sharding `specs[name]` (MaxText's logical constraints),
    or left alone."""
    if specs is None or name not in specs:
        return x
    return jax.lax.with_sharding_constraint(x, specs[name])


def block(c: Config, p, x, pos, acts: dict[str, P] | None = None):
    x = _pin(x, acts, "residual")
    h = rms_norm(x, p["attn_norm"])
    q = _pin(jnp.einsum("bsd,dhk->bshk", h, p["wq"]), acts, "heads")
    k = _pin(jnp.einsum("bsd,dhk->bshk", h, p["wk"]), acts, "heads")
    v = _pin(jnp.einsum("bsd,dhk->bshk", h, p["wv"]), acts, "heads")
    q, k = rope(q, pos), rope(k, pos)
    group = c.heads // c.kv_heads
    q = q.reshape(q.shape[0], q.shape[1], c.kv_heads, group, c.d_head)
    s = jnp.einsum("bqngk,bsnk->bngqs", q, k) / math.sqrt(c.d_head)
    mask = jnp.tril(jnp.ones((c.seq, c.seq), bool))
    s = jnp.where(mask, s.astype(jnp.float32), -1e9)
    a = jax.nn.softmax(s, axis=-1).astype(x.dtype)
    o = jnp.einsum("bngqs,bsnk->bqngk", a, v).reshape(x.shape[0], x.shape[1], c.heads, c.d_head)
    x = _pin(x + jnp.einsum("bshk,hkd->bsd", o, p["wo"]), acts, "residual")
    h = rms_norm(x, p["mlp_norm"])
    f = _pin(jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"]), acts, "mlp")
    return x + f @ p["w_down"]


def loss_fn(c: Config, params, tokens, targets, acts: dict[str, P] | None = None):
    x = params["embed"][tokens]
    pos = jnp.arange(c.seq)
    if c.scan:
        x, _ = jax.lax.scan(lambda h, p: (block(c, p, h, pos, acts), None), x, params["layers"])
    else:
        for p in params["layers"]:
            x = block(c, p, x, pos, acts)
    x = rms_norm(_pin(x, acts, "residual"), params["final_norm"])
    logits = _pin((x @ params["unembed"]).astype(jnp.float32), acts, "logits")
    lse = jax.nn.logsumexp(logits, axis=-1)
    gold = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(lse - gold)


def make_step(c: Config, acts: dict[str, P] | None = None, lr: float = 1e-3, b1: float = 0.9,
              b2: float = 0.95, eps: float = 1e-8, wd: float = 0.1):
    """step(params, m, v, count, tokens, targets) -> (params, m, v, count, loss): one AdamW
    step (optax.adamw's update). `acts`: activation shardings (`expert_activations`), applied
    as sharding constraints (trace under the mesh: `jax.sharding.use_abstract_mesh`)."""

    def step(params, m, v, count, tokens, targets):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(c, p, tokens, targets, acts))(params)
        count = count + 1
        t = count.astype(jnp.float32)
        c1, c2 = 1 - b1**t, 1 - b2**t

        def update(p, g, mi, vi):
            g = g.astype(jnp.float32)
            mi = b1 * mi + (1 - b1) * g
            vi = b2 * vi + (1 - b2) * g * g
            u = (mi / c1) / (jnp.sqrt(vi / c2) + eps) + wd * p.astype(jnp.float32)
            return (p.astype(jnp.float32) - lr * u).astype(p.dtype), mi, vi

        out = jax.tree.map(update, params, grads, m, v)
        leaf = lambda o: isinstance(o, tuple)  # noqa: E731
        new = [jax.tree.map(lambda o, i=i: o[i], out, is_leaf=leaf) for i in range(3)]
        return new[0], new[1], new[2], count, loss

    return step


def _is_shape(s: Any) -> bool:
    return isinstance(s, tuple) and all(isinstance(n, int) for n in s)


def abstract_args(c: Config) -> tuple[Any, ...]:
    """The step's arguments as `jax.ShapeDtypeStruct`s (params in `c.dtype`, moments f32)."""
    shapes = param_shapes(c)
    dt = jnp.dtype(c.dtype)
    params = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, dt), shapes, is_leaf=_is_shape)
    moments = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, jnp.float32), shapes,
                           is_leaf=_is_shape)
    count = jax.ShapeDtypeStruct((), jnp.int32)
    tokens = jax.ShapeDtypeStruct((c.batch, c.seq), jnp.int32)
    return params, moments, moments, count, tokens, tokens


def _specs(c: Config, layer: dict[str, P], embed: P, unembed: P, norm: P,
           data: Any) -> tuple[Any, ...]:
    if c.scan:
        layers: Any = {k: P(None, *s) for k, s in layer.items()}
    else:
        layers = [dict(layer) for _ in range(c.layers)]
    params = {"embed": embed, "layers": layers, "final_norm": norm, "unembed": unembed}
    return params, params, params, P(), P(data, None), P(data, None)


def expert_specs(c: Config, batch: Any, fsdp: str, tensor: str) -> tuple[Any, ...]:
    """MaxText-style shardings (module docstring) for the step's arguments; `batch`: the axis
    or axes of the batch (e.g. ("data", "fsdp"))."""
    layer = {
        "attn_norm": P(None),
        "wq": P(fsdp, tensor, None),
        "wk": P(fsdp, tensor, None),
        "wv": P(fsdp, tensor, None),
        "wo": P(tensor, None, fsdp),
        "mlp_norm": P(None),
        "w_gate": P(fsdp, tensor),
        "w_up": P(fsdp, tensor),
        "w_down": P(tensor, fsdp),
    }
    return _specs(c, layer, P(tensor, fsdp), P(fsdp, tensor), P(None), batch)


def expert_activations(batch: Any, tensor: str) -> dict[str, P]:
    """MaxText-style activation constraints: the batch on `batch` everywhere, heads, the MLP dim
    and the vocab on `tensor`, the residual stream's embed dim replicated."""
    return {
        "residual": P(batch, None, None),
        "heads": P(batch, None, tensor, None),
        "mlp": P(batch, None, tensor),
        "logits": P(batch, None, tensor),
    }


def megatron_specs(c: Config, data: str, model: str) -> tuple[Any, ...]:
    """Megatron: heads, the MLP dim and the vocab on `model`, the batch on `data`."""
    layer = {
        "attn_norm": P(None),
        "wq": P(None, model, None),
        "wk": P(None, model, None),
        "wv": P(None, model, None),
        "wo": P(model, None, None),
        "mlp_norm": P(None),
        "w_gate": P(None, model),
        "w_up": P(None, model),
        "w_down": P(model, None),
    }
    return _specs(c, layer, P(model, None), P(None, model), P(None), data)


def unannotated_specs(c: Config) -> tuple[Any, ...]:
    """No sharding anywhere but the step count (a 0-d value: replicated)."""
    none = jax.tree.map(lambda s: None, param_shapes(c), is_leaf=_is_shape)
    return none, none, none, P(), None, None
