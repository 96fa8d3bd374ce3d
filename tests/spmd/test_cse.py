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


def _clone_then_cse(module: Module) -> Module:
    copy = module.clone()
    PassManager(parse_pipeline("cse")).run(copy)
    return copy


@pytest.mark.parametrize("name", ["dp", "tp", "dp_tp"])
def test_the_merged_copy_is_the_copy_after_cse(name: str) -> None:
    """`compile` copies the global program with cse run as the copy is made: the same program,
    op for op and name for name, as copying and then running the pass; the original keeps
    every op and use."""
    from shardc.passes.spmd.cse import merged_copy

    program = compile(_import(GPT / f"gpt_train_{name}.mlir")).module
    before = print_module(program)
    uses = [len(r.uses) for f in program.functions.values() for op in f.body for r in op.results]
    merged = merged_copy(program)
    want = _clone_then_cse(program)
    assert _ops(merged) < _ops(program)
    assert print_module(merged) == print_module(want)
    assert print_module(program) == before
    assert uses == [len(r.uses) for f in program.functions.values() for op in f.body
                    for r in op.results]
    # the copy's use lists are its own and whole: every use is an operand of an op in it
    for f in merged.functions.values():
        ops = set(f.body)
        for op in f.body:
            for i, v in enumerate(op.operands):
                assert any(u.op is op and u.index == i for u in v.uses)
            assert all(u.op in ops for r in op.results for u in r.uses)


def test_the_merged_copy_of_the_filecheck_cases_is_the_copy_after_cse() -> None:
    """cse's FileCheck cases (chains, -0.0 against 0.0, collectives, shardings) copied with cse
    run as the copy is made: what the pass makes of them, to the names."""
    from shardc.ir.parser import parse_module
    from shardc.passes.spmd.cse import merged_copy

    path = ROOT / "tests" / "filecheck" / "spmd" / "cse.mlir"
    module = parse_module(path.read_text(), str(path))
    merged = merged_copy(module)
    assert print_module(merged) == print_module(_clone_then_cse(module))
    assert _ops(merged) < _ops(module)
    assert [op.name for op in merged.main.body][:4] == ["iota", "cosine", "constant", "constant"]
