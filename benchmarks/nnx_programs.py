"""A Flax NNX training step, for the benchmarks that compare shardc's per-device program with
what `jax.jit` compiles: a 2-layer transformer LM (`nnx.Embed`, `nnx.MultiHeadAttention` with a
causal mask, `nnx.LayerNorm`, a ReLU MLP of `nnx.Linear`s, logits against the tied embedding),
softmax cross-entropy, `optax.adamw`, as a pure function of the `nnx.split` parameters and the
optimizer state, under two shardings on 8 CPU devices:

- `dp` (dp=8): tokens and labels on dp; parameters and optimizer state replicated;
- `dp_tp` (dp=2, tp=4): tokens on dp; attention heads and the MLP's hidden dim on tp
  (Megatron), the optimizer state sharded as its parameter.

    for program in nnx_programs():          # none when flax or optax is not installed
        program.module, program.executable, program.jitted, program.args

Needs `flax` and `optax` (`pip install flax optax`); `available()` says whether they are there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

from jax_programs import JaxProgram

VOCAB, D, HEADS, FF, LAYERS, BATCH, SEQ = 256, 64, 4, 256, 2, 8, 16

# Parameter path -> spec on ("dp", "tp"): Megatron on the heads and the MLP's hidden dim.
_TP = {
    ("query", "kernel"): (None, "tp", None), ("key", "kernel"): (None, "tp", None),
    ("value", "kernel"): (None, "tp", None), ("query", "bias"): ("tp", None),
    ("key", "bias"): ("tp", None), ("value", "bias"): ("tp", None),
    ("out", "kernel"): ("tp", None, None),
    ("up", "kernel"): (None, "tp"), ("up", "bias"): ("tp",), ("down", "kernel"): ("tp", None),
}


def available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("flax", "optax"))


def _model() -> tuple[Any, Any]:
    import jax
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.ln1 = nnx.LayerNorm(D, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=HEADS, in_features=D, decode=False,
                                               rngs=rngs)
            self.ln2 = nnx.LayerNorm(D, rngs=rngs)
            self.up = nnx.Linear(D, FF, rngs=rngs)
            self.down = nnx.Linear(FF, D, rngs=rngs)

        def __call__(self, x: Any, mask: Any) -> Any:
            x = x + self.attn(self.ln1(x), mask=mask)
            return x + self.down(jax.nn.relu(self.up(self.ln2(x))))

    class LM(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.embed = nnx.Embed(VOCAB, D, rngs=rngs)
            self.blocks = nnx.List([Block(rngs) for _ in range(LAYERS)])
            self.ln = nnx.LayerNorm(D, rngs=rngs)

        def __call__(self, tokens: Any) -> Any:
            x = self.embed(tokens)
            mask = nnx.make_causal_mask(tokens)
            for block in self.blocks:
                x = block(x, mask)
            return self.embed.attend(self.ln(x))

    return nnx.split(LM(nnx.Rngs(0)), nnx.Param)


def nnx_programs() -> Iterator[JaxProgram]:
    if not available():
        return
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from shardc.stablehlo import import_stablehlo

    graphdef, params = _model()
    tx = optax.adamw(1e-3)
    opt_state = tx.init(params)

    def step(params: Any, opt_state: Any, tokens: Any, labels: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            logits = nnx.merge(graphdef, p)(tokens)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, new_state = tx.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates), new_state

    tokens = jnp.asarray(
        jax.random.randint(jax.random.key(1), (BATCH, SEQ), 0, VOCAB), jnp.int32)
    for name, axes in (("dp", {"dp": 8}), ("dp_tp", {"dp": 2, "tp": 4})):
        mesh = jax.make_mesh(tuple(axes.values()), tuple(axes))

        def spec(path: Any, leaf: Any, tp: bool = name == "dp_tp", mesh: Any = mesh) -> Any:
            keys = tuple(str(getattr(k, "key", getattr(k, "name", k))) for k in path)
            entries = _TP.get(keys[-3:-1] if keys and keys[-1] == "value" else keys[-2:])
            if not tp or entries is None or len(entries) != getattr(leaf, "ndim", 0):
                entries = ()
            return NamedSharding(mesh, P(*entries))

        shardings = (jax.tree_util.tree_map_with_path(spec, params),
                     jax.tree_util.tree_map_with_path(spec, opt_state),
                     NamedSharding(mesh, P("dp")), NamedSharding(mesh, P("dp")))
        jitted = jax.jit(step, in_shardings=shardings)
        args = (params, opt_state, tokens, tokens)
        lowered = jitted.lower(*args)
        module = import_stablehlo(lowered.as_text(), f"nnx_{name}.mlir")
        yield JaxProgram(name, dict(axes), module, lowered.compile(), jitted,
                         jax.tree.structure(args), args)
