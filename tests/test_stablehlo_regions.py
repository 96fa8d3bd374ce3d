"""StableHLO ops with regions: outlined into private functions on import, inlined on export.

The fixtures are JAX's own text (tests/data/stablehlo/*.mlir and regions/*.mlir, jax 0.10.2)
plus one hand-written module whose regions read outer values (captures).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shardc.ir.attributes import Symbol
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.stablehlo import export_stablehlo, import_stablehlo

DATA = Path(__file__).parent / "data" / "stablehlo"

ROUND_TRIP = [
    "while_loop.mlir", "while_loop.propagated.mlir", "extras/while_loop.open.mlir",
    "cond_switch.mlir", "cond_switch.propagated.mlir", "extras/cond_switch.open.mlir",
    "shard_map.mlir", "shard_map.propagated.mlir", "extras/shard_map.open.mlir",
    "shard_map_partial.mlir", "shard_map_partial.propagated.mlir",
    "extras/shard_map_partial.open.mlir",
    "regions/nested.mlir", "regions/capture_case.mlir", "regions/sort2.mlir",
    "regions/argmax.mlir", "regions/while_captures.mlir",
]


@pytest.mark.parametrize("path", ROUND_TRIP)
def test_region_ops_round_trip_exactly(path: str):
    text = (DATA / path).read_text()
    module = import_stablehlo(text, path)
    assert export_stablehlo(module) == text
    native = print_module(module)
    assert print_module(parse_module(native)) == native


def _import(name: str):
    return import_stablehlo((DATA / name).read_text(), name)


def test_while_and_case_captures_become_trailing_operands():
    module = _import("regions/while_captures.mlir")
    ops = list(module.main.body)
    loop, case = ops[0], ops[1]
    assert loop.name == "while" and loop.attributes["captures"] == 1
    arg0 = module.main.args[0]
    assert loop.operands[-1] is arg0  # the body reads %arg0: passed explicitly
    body = module.lookup_function(loop.attributes["body"].name)
    cond = module.lookup_function(loop.attributes["cond"].name)
    assert len(body.args) == len(cond.args) == 3 and body.is_private
    # case: index, then what any branch reads (%0#1, then %arg0), passed to every branch
    assert case.name == "case"
    assert case.operands[1] is loop.results[1] and case.operands[2] is arg0
    for sym in case.attributes["branches"]:
        assert isinstance(sym, Symbol)
        assert len(module.lookup_function(sym.name).args) == 2


def test_outlined_function_names_are_unique_and_readable():
    module = _import("while_loop.mlir")
    names = [f for f in module.functions if f != "main" and f != "closed_call"]
    assert names == ["main_while_cond", "main_while_body", "main_while_cond_1",
                     "main_while_body_1"]


def test_manual_computation_body_and_collective():
    module = _import("shard_map.mlir")
    manual = next(op for op in module.main.body if op.name == "manual_computation")
    assert [a.name for a in manual.attributes["manual_axes"]] == ["dp", "tp"]
    body = module.lookup_function(manual.attributes["body"].name)
    assert [a.type.shape for a in body.args] == [(8, 8), (8, 64)]
    reduce = next(op for op in body.body if op.name == "spmd.all_reduce")
    assert [a.name for a in reduce.attributes["axes"]] == ["tp"]
    assert reduce.attributes["groups"] == ((0, 1, 2, 3), (4, 5, 6, 7))


def test_variadic_reduce_body_keeps_block_argument_order():
    module = _import("regions/argmax.mlir")
    reduce = next(op for f in module.functions.values() for op in f.body
                  if op.name == "reduce" and "body" in op.attributes)
    body = module.lookup_function(reduce.attributes["body"].name)
    # (acc0, acc1, x0, x1): f32, i32, f32, i32
    assert [a.type.dtype for a in body.args] == ["f32", "i32", "f32", "i32"]


def test_region_return_in_generic_form_lists_its_types():
    """`"stablehlo.return"(%s) : (tensor<f32>) -> ()` types the region's results like the
    pretty `stablehlo.return %s : tensor<f32>`."""
    text = """func.func @f(%arg0: tensor<4x6xf32>, %arg1: tensor<f32>) -> tensor<4xf32> {
  %0 = "stablehlo.reduce"(%arg0, %arg1) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.multiply %a, %b : tensor<f32>
    %s = stablehlo.add %m, %a : tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) {dimensions = array<i64: 1>} : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
    module = import_stablehlo(text)
    reduce = module.lookup_function("f").body.first
    body = module.lookup_function(reduce.attributes["body"].name)
    assert [op.name for op in body.body] == ["multiply", "add", "return"]
    assert body.result_types[0].shape == () and body.result_types[0].dtype == "f32"
    assert "stablehlo.multiply %arg2, %arg3 : tensor<f32>" in export_stablehlo(module)


_SORT_CAPTURE = """module @m {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<f32>) -> tensor<8xf32> {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %1 = stablehlo.add %arg2, %arg1 : tensor<f32>
      %2 = stablehlo.compare LT, %1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    }) : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""

_ALL_REDUCE_TWICE = """module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 0]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""

_BAD_GROUPS = (DATA / "shard_map.mlir").read_text().replace(
    "dense<[[0, 1, 2, 3], [4, 5, 6, 7]]>", "dense<[[0, 5, 2, 3], [4, 1, 6, 7]]>")

_MANUAL_CAPTURE = (DATA / "shard_map.mlir").read_text().replace("sdy.return %7", "sdy.return %1")


@pytest.mark.parametrize("text, where, message", [
    (_SORT_CAPTURE, ":3:10:", "comparator reads %arg1 from the enclosing scope"),
    (_ALL_REDUCE_TWICE, ":4:5:", "replica_groups names id 0 more than once"),
    (_BAD_GROUPS, ":9:12:", "are not the device groups of any axes of mesh @mesh"),
    (_MANUAL_CAPTURE, ":14:18:", "body reads %1 from the enclosing scope"),  # at the use
])
def test_region_errors_are_located(text: str, where: str, message: str):
    with pytest.raises(ShardcError) as info:
        import_stablehlo(text, "in.mlir")
    rendered = info.value.render()
    assert rendered.startswith("in.mlir" + where), rendered
    assert message in rendered, rendered


def test_imported_loops_run_to_jax_numbers():
    """A fori_loop holding a cond and an inner loop, and a switch over captured values: the
    imported programs, run by the reference interpreter, give JAX's own numbers."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from shardc.executors.reference import run_reference

    def nested(x, n):
        def body(i, c):
            c = jax.lax.cond(i % 2 == 0, lambda y: y * 2.0, lambda y: jnp.sin(y) + x, c)
            return jax.lax.fori_loop(0, 2, lambda j, d: d + j, c)
        return jax.lax.fori_loop(0, n, body, x)

    def capture_case(x, i):
        a, b = jnp.sin(x), jnp.cos(x)
        return jax.lax.switch(i, [lambda: a + b, lambda: a * b, lambda: a])

    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    for f, extra in ((nested, np.int32(3)), (capture_case, np.int32(1)),
                     (capture_case, np.int32(7))):
        text = jax.jit(f).lower(x, extra).as_text()
        module = import_stablehlo(text, f.__name__)
        (got,) = run_reference(module, [x, np.asarray(extra)])
        np.testing.assert_allclose(got, np.asarray(jax.jit(f)(x, extra)), rtol=1e-5, atol=1e-5)
