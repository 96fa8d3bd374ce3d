"""Generate the JAX-lowered GPT training steps in examples/jax/: a GPT written in JAX (token
embedding with `jnp.take`, causal multi-head attention, layer norm, ReLU MLP, logits against the
tied embedding, cross-entropy with `take_along_axis`), one SGD step (`jax.value_and_grad`, every
parameter updated), lowered with `jax.jit(step, in_shardings=...)` under four shardings:

    python examples/gpt_jax.py            # write examples/jax/gpt_train_<sharding>.mlir
    python examples/gpt_jax.py --check    # exit 1 if a file is out of date (same JAX version)

| file | mesh | shardings |
|---|---|---|
| `gpt_train_dp.mlir` | dp=8 | tokens and labels on dp; weights replicated |
| `gpt_train_tp.mlir` | tp=8 | heads, d_ff and the embedding's vocab on tp (Megatron) |
| `gpt_train_dp_tp.mlir` | dp=2, tp=4 | both |
| `gpt_train_fsdp.mlir` | dp=8 | tokens on dp; every weight's first dim on dp |

Each file is `jax.jit(...).lower(...).as_text()` (StableHLO + sdy) after a comment line naming
the JAX version; shardc imports it as it is:

    shardc run examples/jax/gpt_train_dp_tp.mlir --check
    shardc run examples/jax/gpt_train_dp_tp.mlir --backend jax --check

Parameters enter at unit scale and the model scales each product by 1/sqrt(fan in), so random
standard-normal inputs (what `shardc run` draws) are a well-conditioned step. `--check` needs the
JAX version the files were made with (the text is JAX's), and says so otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = Path(__file__).resolve().parent / "jax"
VOCAB, D, HEADS, DH, FF, LAYERS, BATCH, SEQ = 256, 64, 8, 8, 256, 2, 8, 16
LR = 0.1
LAYER_SHAPES = {
    "ln1_g": (D,), "ln1_b": (D,),
    "wq": (D, HEADS, DH), "wk": (D, HEADS, DH), "wv": (D, HEADS, DH), "wo": (HEADS, DH, D),
    "ln2_g": (D,), "ln2_b": (D,), "w1": (D, FF), "w2": (FF, D),
}


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b


def loss_fn(params, tokens, labels):
    x = jnp.take(params["table"], tokens, axis=0)
    causal = jnp.tril(jnp.ones((SEQ, SEQ), bool))
    for p in params["layers"]:
        h = layer_norm(x, p["ln1_g"], p["ln1_b"])
        q, k, v = (jnp.einsum("bsd,dhk->bhsk", h, p[w]) / np.sqrt(D) for w in ("wq", "wk", "wv"))
        s = jnp.einsum("bhqk,bhsk->bhqs", q, k) / np.sqrt(DH)
        a = jax.nn.softmax(jnp.where(causal, s, -1e9), axis=-1)
        o = jnp.einsum("bhqs,bhsk->bqhk", a, v)
        x = x + jnp.einsum("bqhk,hkd->bqd", o, p["wo"]) / np.sqrt(HEADS * DH)
        h = layer_norm(x, p["ln2_g"], p["ln2_b"])
        x = x + (jax.nn.relu(h @ p["w1"] / np.sqrt(D)) @ p["w2"]) / np.sqrt(FF)
    h = layer_norm(x, params["lnf_g"], params["lnf_b"])
    logp = jax.nn.log_softmax(h @ params["table"].T / np.sqrt(D), axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1).mean()


def train_step(params, tokens, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, labels)
    return loss, jax.tree.map(lambda p, g: p - LR * g, params, grads)


def grads_step(params, tokens, labels):
    """The step's loss and gradients: what a data-parallel step all-reduces (an SGD update
    p - lr*g at unit-scale p hides the gradients' rounding; this does not)."""
    return jax.value_and_grad(loss_fn)(params, tokens, labels)


def param_specs(table: P, layer: dict[str, P], layers: int = LAYERS) -> dict:
    """The parameters' pytree of specs (the final layer norm replicated)."""
    return {
        "table": table,
        "layers": [dict(layer) for _ in range(layers)],
        "lnf_g": P(), "lnf_b": P(),
    }


_NORMS = {n: P() for n in ("ln1_g", "ln1_b", "ln2_g", "ln2_b")}
_TP = {**_NORMS, "wq": P(None, "tp"), "wk": P(None, "tp"), "wv": P(None, "tp"),
       "wo": P("tp"), "w1": P(None, "tp"), "w2": P("tp")}
SHARDINGS = {
    # name: (mesh axes, table, per-layer specs, token spec)
    "dp": ({"dp": 8}, P(), {n: P() for n in LAYER_SHAPES}, P("dp")),
    "tp": ({"tp": 8}, P("tp"), _TP, P()),
    "dp_tp": ({"dp": 2, "tp": 4}, P("tp"), _TP, P("dp")),
    "fsdp": ({"dp": 8}, P("dp"), {**_NORMS, **{w: P("dp") for w in LAYER_SHAPES
                                                if w not in _NORMS}}, P("dp")),
}


def step_arguments(name: str, layers: int = LAYERS) -> tuple:
    """`(args, in_shardings)` of a step with `layers` layers under sharding `name`: zero
    parameters, tokens and labels, and their NamedShardings on the sharding's mesh."""
    axes, table, layer, data = SHARDINGS[name]
    mesh = jax.make_mesh(tuple(axes.values()), tuple(axes))
    params = {
        "table": jnp.zeros((VOCAB, D)),
        "layers": [{n: jnp.zeros(s) for n, s in LAYER_SHAPES.items()} for _ in range(layers)],
        "lnf_g": jnp.zeros(D), "lnf_b": jnp.zeros(D),
    }
    tokens = jnp.zeros((BATCH, SEQ), jnp.int32)

    def shard(spec: P) -> NamedSharding:
        return NamedSharding(mesh, spec)

    specs = jax.tree.map(shard, param_specs(table, layer, layers))
    return (params, tokens, tokens), (specs, shard(data), shard(data))


def lowered_text(name: str, layers: int = LAYERS, step=train_step) -> str:
    """`step` (`train_step` or `grads_step`) with `layers` layers, lowered under sharding
    `name`."""
    args, shardings = step_arguments(name, layers)
    return jax.jit(step, in_shardings=shardings).lower(*args).as_text()


def header() -> str:
    return f"// Generated by examples/gpt_jax.py with jax {jax.__version__}; do not edit.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the files are current")
    args = parser.parse_args(argv)
    if len(jax.devices()) < 8:
        print("error: needs 8 devices (set XLA_FLAGS before importing jax)", file=sys.stderr)
        return 1
    OUT.mkdir(exist_ok=True)
    stale = []
    for name in SHARDINGS:
        path = OUT / f"gpt_train_{name}.mlir"
        text = header() + lowered_text(name)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if args.check and current is not None and not current.startswith(header()):
            print(f"{path.name} was made with another JAX version: {current.splitlines()[0]}")
            return 1
        if current != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run python examples/gpt_jax.py)")
        return 1
    if not args.check:
        print(f"wrote {len(stale)} file(s)" + (f": {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
