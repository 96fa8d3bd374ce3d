"""The driver keeps its per-op record on the op (`Operation.scratch`, passes/propagation/state.py's
`Site`) only while propagation runs: afterwards, and after a failed run, no op carries one, and
a second run starts from nothing."""

from __future__ import annotations

import pytest

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.builder import Builder
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline


def _mlp(layers: int) -> Module:
    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((8, 16), "f32", mesh.spec("dp", None), name="x")
        for i in range(layers):
            w1 = f.arg((16, 32), "f32", mesh.spec(None, "tp"), name=f"w1_{i}")
            w2 = f.arg((32, 16), "f32", mesh.spec("tp", None), name=f"w2_{i}")
            x = b.add(x, b.matmul(b.tanh(b.matmul(x, w1)), w2))
        f.returns(x)
    return b.module


def _propagate(module: Module) -> None:
    load_all_passes()
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())


def test_no_op_keeps_a_site_after_propagation() -> None:
    module = _mlp(3)
    _propagate(module)
    ops = list(module.walk())
    assert ops and all(op.scratch is None for op in ops)
    tanh = next(op for op in ops if op.name == "tanh")
    assert str(tanh.results[0].mapping) == '<@mesh, [{"dp", ?}, {"tp", ?}]>'


def test_a_second_run_gives_the_first_runs_answer() -> None:
    once, twice = _mlp(2), _mlp(2)
    _propagate(once)
    _propagate(twice)
    _propagate(twice)
    assert print_module(twice) == print_module(once)


def test_a_failed_run_leaves_no_site() -> None:
    module = _mlp(2)
    tanh = next(op for op in module.walk() if op.name == "tanh")
    tanh.attributes["sdy.sharding_rule"] = OpaqueAttr("#sdy.op_sharding_rule<([i, j])->(")
    with pytest.raises(ShardcError):
        _propagate(module)
    assert all(op.scratch is None for op in module.walk())
