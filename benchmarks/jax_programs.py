"""Programs written in JAX, for the quality benchmark's training rows: the GPT training step of
examples/gpt_jax.py under each of its shardings, as `jax.jit` compiles it (the user's
in_shardings, XLA deciding everything else) and as shardc compiles the shipped StableHLO text
(examples/jax/gpt_train_<sharding>.mlir, the same lowering); and a max-pooling training step
(`reduce_window` and its gradient `select_and_scatter`) with the batch, channel or pooled
dim sharded, lowered live.

    for program in gpt_programs():
        program.module, program.executable, program.run(*flat_inputs)
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shardc.ir.core import Module

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class JaxProgram:
    name: str  # the sharding: dp, tp, dp_tp, fsdp
    mesh: dict[str, int]
    module: Module  # shardc's import of the shipped text
    executable: Any  # XLA's compiled program
    jitted: Any
    treedef: Any  # the arguments' pytree (the module's arguments are its leaves, in order)
    args: Any = None  # the arguments it was lowered with (a pytree of arrays)

    def run(self, *flat: Any) -> list[Any]:
        import jax

        loss, params = self.jitted(*jax.tree.unflatten(self.treedef, flat))
        return [loss, *jax.tree.leaves(params)]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gpt_jax", ROOT / "examples" / "gpt_jax.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpt_programs() -> Iterator[JaxProgram]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from shardc.stablehlo import import_stablehlo

    g = _generator()
    for name, (axes, table, layer, data) in g.SHARDINGS.items():
        mesh = jax.make_mesh(tuple(axes.values()), tuple(axes))
        params = {
            "table": jnp.zeros((g.VOCAB, g.D)),
            "layers": [{n: jnp.zeros(s) for n, s in g.LAYER_SHAPES.items()}
                       for _ in range(g.LAYERS)],
            "lnf_g": jnp.zeros(g.D), "lnf_b": jnp.zeros(g.D),
        }
        tokens = jnp.zeros((g.BATCH, g.SEQ), jnp.int32)

        def shard(spec: Any, mesh: Any = mesh) -> NamedSharding:
            return NamedSharding(mesh, spec)

        specs = jax.tree.map(shard, g.param_specs(table, layer))
        jitted = jax.jit(g.train_step, in_shardings=(specs, shard(data), shard(data)))
        args = (params, tokens, tokens)
        executable = jitted.lower(*args).compile()
        path = ROOT / "examples" / "jax" / f"gpt_train_{name}.mlir"
        module = import_stablehlo(path.read_text(), str(path))
        yield JaxProgram(name, dict(axes), module, executable, jitted, jax.tree.structure(args),
                         args)


# The max-pool step's input sharding per row: batch on dp, batch and channels, the pooled dim.
POOL_SHARDINGS = {
    "batch": ("dp", None, None, None),
    "batch_channels": ("dp", None, None, "tp"),
    "pooled_dim": (None, "tp", None, None),
    "batch_pooled_dim": ("dp", "tp", None, None),
}


def pool_programs() -> Iterator[JaxProgram]:
    """sum(maxpool(tanh(x * w))^2) and an SGD step of w, x 8x8x8x4 (NHWC), 2x2 windows of
    stride 2, on a dp=2, tp=4 mesh."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from shardc.stablehlo import import_stablehlo

    def loss(w: Any, x: Any) -> Any:
        pooled = jax.lax.reduce_window(
            jnp.tanh(x * w), -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
        )
        return jnp.sum(pooled * pooled)

    def step(w: Any, x: Any) -> Any:
        value, grad = jax.value_and_grad(loss)(w, x)
        return value, w - 0.1 * grad

    mesh = jax.make_mesh((2, 4), ("dp", "tp"))
    for name, spec in POOL_SHARDINGS.items():
        jitted = jax.jit(step, in_shardings=(NamedSharding(mesh, P()),
                                             NamedSharding(mesh, P(*spec))))
        args = (jnp.zeros((4,)), jnp.zeros((8, 8, 8, 4)))
        lowered = jitted.lower(*args)
        module = import_stablehlo(lowered.as_text(), f"max_pool_{name}.mlir")
        yield JaxProgram(name, {"dp": 2, "tp": 4}, module, lowered.compile(), jitted,
                         jax.tree.structure(args))
