"""auto-shard checked outside shardc's cost model: the chosen shardings handed to `jax.jit`, and
XLA's compiled collectives compared with shardc's prediction (docs/autoshard.md, "Checked by
XLA"), on the small Llama-style training step of examples/llama_jax.py (8 CPU devices)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax", reason="the XLA check needs jax")

ROOT = Path(__file__).resolve().parents[2]


def _benchmarks(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return __import__(name)


@pytest.fixture(scope="module")
def auto_sharded():
    import shardc
    from tests.test_examples import load_example

    lm = load_example("llama_jax")
    cfg = lm.small(layers=1)
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    f = shardc.jit(lm.make_step(cfg), mesh=mesh, backend="numpy",
                   in_shardings=lm.unannotated_specs(cfg), auto_shard=True)
    return lm, cfg, mesh, f.lower(*lm.abstract_args(cfg))


def _xla_bytes(compiled) -> int:
    quality = _benchmarks("quality")
    return sum(c.bytes_per_device for c in quality.parse_hlo_collectives(compiled.as_text(), 8))


def test_xla_with_shardcs_layouts_moves_what_shardc_predicts(auto_sharded) -> None:
    # Every value of the auto-sharded program pinned to shardc's layout: XLA's partitioner then
    # has the same layouts to move between, and its collectives move the bytes shardc's report
    # counts (within 10%; the figures are in docs/autoshard.md).
    import numpy as np

    from shardc.executors.jax_global import jit_global

    _, _, _, lowered = auto_sharded
    module = lowered.module
    jitted, _, _, _ = jit_global(module, every_value=True)
    dtypes = {"f32": np.float32, "i32": np.int32, "bf16": jax.numpy.bfloat16}
    args = [jax.ShapeDtypeStruct(a.type.shape, dtypes[a.type.dtype]) for a in module.main.args]
    xla = _xla_bytes(jitted.lower(*args).compile())
    shardc_bytes = lowered.report["total_comm_bytes"]
    assert shardc_bytes > 0
    assert abs(xla - shardc_bytes) <= 0.1 * shardc_bytes, (xla, shardc_bytes)


def test_xla_given_only_the_argument_shardings_moves_more(auto_sharded) -> None:
    # What a user gets from jax.jit with the chosen in/out shardings alone: XLA's own
    # propagation decides the rest, and on this step it moves several times more (docs).
    from shardc.jax_api import to_jax_shardings

    lm, cfg, mesh, lowered = auto_sharded
    ins, outs = to_jax_shardings(lowered.module, mesh)
    step = lm.make_step(cfg)
    flat, tree = jax.tree.flatten(lm.abstract_args(cfg))

    def flat_step(*xs):
        return tuple(jax.tree.leaves(step(*jax.tree.unflatten(tree, xs))))

    compiled = jax.jit(flat_step, in_shardings=ins, out_shardings=outs).lower(*flat).compile()
    assert _xla_bytes(compiled) > 2 * lowered.report["total_comm_bytes"]
