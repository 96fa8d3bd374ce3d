"""cse in compile's per-device pipeline: the program computes exactly what it computed without
it, issues the same collectives, and holds each expression Shardy's splitter copied once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shardc.executors.numpy_exec import NumpyExecutor
from shardc.ir.core import Module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassManager, parse_pipeline
from shardc.pipeline import compile
from tests.spmd.test_combine_collectives import _close, _import, _inputs

ROOT = Path(__file__).resolve().parent.parent.parent
GPT = ROOT / "examples" / "jax"


def _count(module: Module, name: str) -> int:
    return sum(op.name == name for f in module.functions.values() for op in f.body)


def _ops(module: Module) -> int:
    return sum(len(f.body) for f in module.functions.values())


@pytest.mark.parametrize("name", ["dp", "tp", "dp_tp"])
def test_cse_keeps_every_result_and_collective(name: str) -> None:
    module = _import(GPT / f"gpt_train_{name}.mlir")
    result = compile(module)
    # The same global program through the per-device pipeline without cse.
    plain = result.module.clone()
    PassManager(parse_pipeline("spmd,inline-calls,combine-collectives")).run(plain)
    assert _ops(result.spmd) < _ops(plain)
    for kind in ("spmd.all_reduce", "spmd.all_gather", "spmd.reduce_scatter", "spmd.all_slice",
                 "spmd.all_to_all", "spmd.collective_permute"):
        assert _count(result.spmd, kind) == _count(plain, kind), kind
    inputs = _inputs(module)
    got = NumpyExecutor(result.spmd).run(inputs)
    want = NumpyExecutor(plain).run(inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)  # the same ops on the same values: bit for bit


def test_cse_gives_the_same_program_every_time() -> None:
    module = _import(GPT / "gpt_train_dp_tp.mlir")
    assert print_module(compile(module).spmd) == print_module(compile(module).spmd)


def test_a_rope_table_is_computed_once_per_device() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.sharding import PartitionSpec as P

    import shardc

    def rope(x):  # cos and sin of one angle table, each read by two multiplies
        angles = jnp.arange(x.shape[0], dtype=jnp.float32)[:, None] * jnp.arange(
            x.shape[1] // 2, dtype=jnp.float32)[None, :]
        cos, sin = jnp.cos(angles), jnp.sin(angles)
        x1, x2 = x[:, ::2], x[:, 1::2]
        return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)

    mesh = jax.make_mesh((2,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    f = shardc.jit(rope, mesh=mesh, in_shardings=(P("x"),))
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    spmd = f.lower(x).spmd
    assert _count(spmd, "cosine") == 1 and _count(spmd, "sine") == 1
    assert _count(spmd, "iota") <= 2
    _close([np.asarray(f(x))], [np.asarray(jax.jit(rope)(x))])
