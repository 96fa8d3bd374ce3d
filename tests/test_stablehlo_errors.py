"""Importer error corpus: every bad input is a located ShardcError, never a traceback."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from shardc.ir.diagnostics import ShardcError
from shardc.stablehlo import import_stablehlo

DATA = Path(__file__).parent / "data" / "stablehlo"

HEAD = 'sdy.mesh @mesh = <["dp"=2, "tp"=4]>\n'


def _func(body: str, sig: str = "%arg0: tensor<8x16xf32>", res: str = "tensor<8x16xf32>") -> str:
    return HEAD + f"func.func public @main({sig}) -> {res} {{\n{body}}}\n"


# (name, text, line, col, message fragment)
CASES = [
    ("manual_computation with fewer out_shardings than results", _func(
        "  %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"dp\"}, {}]>] "
        "out_shardings=[<@mesh, [{\"dp\"}, {}]>] manual_axes={\"dp\"} "
        "(%a: tensor<4x16xf32>) {\n"
        "    %1 = stablehlo.negate %a : tensor<4x16xf32>\n"
        "    sdy.return %1, %1 : tensor<4x16xf32>, tensor<4x16xf32>\n"
        "  } : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)\n"
        "  return %0#0 : tensor<8x16xf32>\n"),
     3, 10, "has 1 result sharding for 2 results"),
    ("while with empty regions", _func(
        "  %0:1 = stablehlo.while(%iterArg = %arg0) : tensor<8x16xf32>\n"
        "  cond {\n  } do {\n  }\n  return %0 : tensor<8x16xf32>\n"),
     3, 10, "a region must end with a return"),
    ("sort comparator reads an outer value", _func(
        '  %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64}> ({\n'
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %1 = stablehlo.compare LT, %a, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
        "    stablehlo.return %1 : tensor<i1>\n"
        "  }) : (tensor<8x16xf32>) -> tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n",
        sig="%arg0: tensor<8x16xf32>, %arg1: tensor<f32>"),
     3, 8, "comparator reads %arg1 from the enclosing scope"),
    ("popcnt of floats", _func(
        "  %0 = stablehlo.popcnt %arg0 : tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 3, "takes integers, got f32"),  # verifier errors point at the op's results
    ("manual_computation body not local", _func(
        '  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"dp"}, {}]>] '
        'out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"dp"} (%arg1: tensor<8x16xf32>) {\n'
        "    sdy.return %arg1 : tensor<8x16xf32>\n  } : (tensor<8x16xf32>) -> tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 3, "split by the manual axes of"),
    ("variadic reduce body returns too few", _func(
        "  %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
        "  %0:2 = stablehlo.reduce(%arg0 init: %c), (%arg0 init: %c) across dimensions = [1] "
        ": (tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<f32>) -> "
        "(tensor<8xf32>, tensor<8xf32>)\n"
        "   reducer(%a: tensor<f32>, %b: tensor<f32>) (%c2: tensor<f32>, %d: tensor<f32>)  {\n"
        "    stablehlo.return %a : tensor<f32>\n  }\n"
        "  return %arg0 : tensor<8x16xf32>\n"),
     4, 3, "(acc0, acc1, ..., x0, x1, ...)"),
    ("all_reduce with a device twice", _func(
        '  %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 0]]> : tensor<1x2xi64>, '
        "use_global_device_ids}> ({\n"
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %1 = stablehlo.add %a, %b : tensor<f32>\n"
        "    stablehlo.return %1 : tensor<f32>\n"
        "  }) : (tensor<8x16xf32>) -> tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n"),
     3, 3, "replica_groups names id 0 more than once"),
    ("unknown mesh", _func(
        "  %0 = sdy.sharding_constraint %arg0 <@nope, [{}, {}]> : tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 38, "unknown mesh @nope"),
    ("unknown axis", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"pp"}, {}]>}'),
     2, 1, "'func.func' op arg 0 - unknown axis 'pp'"),
    ("axis used twice", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"dp"}]>}'),
     2, 1, "used twice"),
    ("sharding rank", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}]>}'),
     2, 1, "has 1 dims but the tensor"),
    ("malformed sharding", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp" {}]>}'),
     2, 49, "malformed sharding"),
    ("per-value count", _func(
        "  %0 = stablehlo.tanh %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>, "
        "<@mesh, [{}, {}]>]>} : tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n"),
     3, 8, "2 shardings for 1 results"),
    ("undefined value", _func(
        "  %0 = stablehlo.tanh %nope : tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n"),
     3, 23, "undefined value %nope"),
    ("signature type mismatch", _func(
        "  %0 = stablehlo.reshape %arg0 : (tensor<4x16xf32>) -> tensor<128xf32>\n"
        "  return %arg0 : tensor<8x16xf32>\n"),
     3, 35, "operand 0 has type tensor<8x16xf32>"),
    ("element-wise shape", _func(
        "  %0 = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>\n  return %0 : tensor<8x16xf32>\n"),
     3, 37, "operand 0 has type"),
    ("unsupported element type", _func(
        "  %0 = stablehlo.convert %arg0 : (tensor<8x16xf32>) -> tensor<8x16xf8E4M3FN>\n"
        "  return %arg0 : tensor<8x16xf32>\n"),
     3, 56, "unsupported element type 'f8E4M3FN'"),
    # A type MLIR accepts but shardc cannot represent: at the first op that uses the argument
    # (its operand), else at the type once the body is read.
    ("dynamic shape, at its first use", _func(
        "  %0 = stablehlo.negate %arg1 : tensor<8x16xf32>\n"
        "  %1 = stablehlo.abs %arg0 : tensor<?x16xf32>\n  return %0 : tensor<8x16xf32>\n",
        sig="%arg0: tensor<?x16xf32>, %arg1: tensor<8x16xf32>"),
     4, 22, "'stablehlo.abs' op operand 0: unsupported type 'tensor<?x16xf32>'"),
    ("unranked argument no op uses", _func(
        "  %0 = stablehlo.negate %arg1 : tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n",
        sig="%arg0: tensor<*xf32>, %arg1: tensor<8x16xf32>"),
     2, 31, "unsupported type 'tensor<*xf32>'"),
    # ... unless its sharding is invalid as far as MLIR can tell: that is MLIR's error.
    ("sharding of another rank on a dynamic argument", _func(
        "  return %arg0 : tensor<?x16xf32>\n", res="tensor<?x16xf32>",
        sig='%arg0: tensor<?x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}]>}'),
     2, 1, "'func.func' op arg 0 - sharding <@mesh, [{\"dp\"}]> has 1 dims but the tensor "
     "tensor<?x16xf32> has rank 2"),
    ("sharding on an unranked argument", _func(
        "  return %arg0 : tensor<*xf32>\n", res="tensor<*xf32>",
        sig="%arg0: tensor<*xf32> {sdy.sharding = #sdy.sharding<@mesh, []>}"),
     2, 1, "'func.func' op arg 0 - only ranked tensors can have a sharding"),
    ("dynamic result type, after the body's own error", _func(
        "  %0 = stablehlo.negate %arg0 : tensor<8x16xf32>\n  return %0, %0 : tensor<8x8xf32>\n",
        res="tensor<2x?xf32>"),
     4, 3, "returns 2 values but lists 1 types"),
    ("tuple result of an op", _func(
        "  %0 = stablehlo.custom_call @f(%arg0) : (tensor<8x16xf32>) -> tuple<tensor<8xf32>>\n"
        "  return %arg0 : tensor<8x16xf32>\n", res="tuple<tensor<8xf32>>"),
     3, 64, "unsupported type 'tuple<tensor<8xf32>>' (shardc's IR has no tuple types)"),
    ("func_data_flow_edge of a reducer's argument", _func(
        '  %0 = "stablehlo.reduce"(%arg0, %arg1) ({\n'
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %e = sdy.func_data_flow_edge %b : tensor<f32>\n"
        "    %s = stablehlo.maximum %a, %e : tensor<f32>\n"
        '    "stablehlo.return"(%s) : (tensor<f32>) -> ()\n'
        "  }) {dimensions = array<i64: 1>} : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>\n"
        "  return %0 : tensor<8xf32>\n",
        sig="%arg0: tensor<8x16xf32>, %arg1: tensor<f32>", res="tensor<8xf32>"),
     5, 10, "sdy.func_data_flow_edge to be a block argument of a func op, not of a region"),
    ("duplicate attribute", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig="%arg0: tensor<8x16xf32> {a.b = 1 : i32, a.b = 2 : i32}"),
     2, 64, "attribute 'a.b' is given twice"),
    ("all_to_all parameters sharing a dim", HEAD + (
        "func.func @f(%arg0: tensor<8x8x4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, "
        '[{"dp"}, {"tp"}, {}, {}]>}) -> tensor<8x8x4x4xf32> {\n'
        '  %0 = sdy.all_to_all [{"dp"}: 0->2, {"tp"}: 1->2] %arg0 out_sharding=<@mesh, '
        '[{}, {}, {"dp", "tp"}, {}]> : tensor<8x8x4x4xf32>\n'
        "  return %0 : tensor<8x8x4x4xf32>\n}\n"),
     3, 3, "dim 2 appears in two all_to_all parameters"),
    ("reduction on all_gather", HEAD + (
        "func.func @f(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, "
        '[{"dp"}, {}]>}) -> tensor<8x16xf32> {\n'
        '  %0 = sdy.all_gather max [{"dp"}, {}] %arg0 out_sharding=<@mesh, [{}, {}]> '
        ": tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n}\n"),
     3, 23, "only sdy.all_reduce and sdy.reduce_scatter take a reduction"),
    ("missing callee", _func(
        "  %0 = call @nope(%arg0) : (tensor<8x16xf32>) -> tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 3, "calls @nope, which is not defined"),
    ("result count", _func(
        "  %0:2 = stablehlo.tanh %arg0 : tensor<8x16xf32>\n  return %0#0 : tensor<8x16xf32>\n"),
     3, 3, "defines 2 values but its type lists 1 result"),
    ("return type", _func("  return %arg0 : tensor<8x8xf32>\n"),
     3, 18, "operand 0 has type"),
    ("bad dense", _func(
        "  %0 = stablehlo.constant dense<[1, 2]> : tensor<3xi32>\n"
        "  return %arg0 : tensor<8x16xf32>\n"),
     3, 3, "dense literal has shape [2], result [3]"),
    ("other dialect's mesh", 'sdy.mesh @m = #foo.mesh<[], device_ids=[0]>\n', 1, 15,
     "unsupported mesh"),
    ("malformed long mesh", 'sdy.mesh @m = #sdy.mesh<["x"=2, 3]>\n', 1, 15, "malformed mesh"),
    ("syntax", _func("  %0 = stablehlo.tanh %arg0, : tensor<8x16xf32>\n"
                     "  return %0 : tensor<8x16xf32>\n"),
     3, 30, "unexpected ':'"),
    ("truncated", _func("  %0 = stablehlo.tanh %arg0 : tensor<8x16xf32>\n")[:-3], 3, 47,
     "unexpected end of input"),
    # Issue 13: what Shardy's verifier and parser reject, at the op (or function) MLIR names.
    ("manual_computation in_sharding of another rank", _func(
        '  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"dp"}]>] '
        'out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"dp"} (%a: tensor<4x16xf32>) {\n'
        "    sdy.return %a : tensor<4x16xf32>\n"
        "  } : (tensor<8x16xf32>) -> tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 8, "operand - sharding doesn't match tensor rank: 1 != 2"),
    ("nested manual_computation re-binds an axis", _func(
        '  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"tp"}, {}]>] '
        'out_shardings=[<@mesh, [{"tp"}, {}]>] manual_axes={"tp"} (%a: tensor<2x16xf32>) {\n'
        '    %1 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{}, {}]>] '
        'out_shardings=[<@mesh, [{}, {}]>] manual_axes={"tp"} (%b: tensor<2x16xf32>) {\n'
        "      sdy.return %b : tensor<2x16xf32>\n"
        "    } : (tensor<2x16xf32>) -> tensor<2x16xf32>\n"
        "    sdy.return %1 : tensor<2x16xf32>\n"
        "  } : (tensor<8x16xf32>) -> tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     4, 10, 'operates on axis "tp" which is already bound by a parent'),
    ("named_computation out_sharding of another rank", _func(
        '  %0 = sdy.named_computation<"g">(%arg0) out_shardings=[<@mesh, [{}, {}, {}]>] '
        "(%a: tensor<8x16xf32>) {\n"
        "    sdy.return %a : tensor<8x16xf32>\n"
        "  } : (tensor<8x16xf32>) -> tensor<8x16xf32>\n"
        "  return %0 : tensor<8x16xf32>\n"),
     3, 8, "out_shardings - sharding doesn't match tensor rank: 3 != 2"),
    ("priority with a leading zero", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}p007, {}]>}'),
     2, 49, "leading zeros are not allowed, got: p007"),
    ("priority past int64", _func(
        "  return %arg0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}p'
            + "9" * 20 + ']>}'),
     2, 49, "expecting integer priority"),
    ("unreduced twice", _func(
        '  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, '
        '[{}, {}], unreduced={"dp"}, replicated={"tp"}, unreduced={"tp"}>]>} : tensor<8x16xf32>\n'
        "  return %0 : tensor<8x16xf32>\n"),
     3, 32, "'unreduced=' written twice"),
    ("closed empty dim with a priority, at the op", _func(
        '  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, '
        '[{"dp"}, {}p2]>]>} : tensor<8x16xf32>\n'
        "  return %0 : tensor<8x16xf32>\n"),
     3, 8, "cannot have a priority"),
    ("bad result sharding, at the function", HEAD + "func.func public @main(\n"
        "    %arg0: tensor<8x16xf32>)\n"
        '    -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"pp"}]>}) {\n'
        "  return %arg0 : tensor<8x16xf32>\n}\n",
     2, 1, "'func.func' op result 0 - unknown axis 'pp'"),
    ("maximal sharding of rank 1 on an op without results", 'sdy.mesh @one = <[], device_ids=[3]>\n'
        + _func('  stablehlo.custom_call @log(%arg0) {has_side_effect = true, sdy.sharding = '
                "#sdy.sharding_per_value<[<@one, [{}]>]>} : (tensor<8x16xf32>) -> ()\n"
                "  return %arg0 : tensor<8x16xf32>\n"),
     4, 3, "a maximal sharding can only have a sharding with rank 0"),
    # MLIR verifies a function's argument attributes after the ops inside it.
    ("invalid argument sharding, after the body's verifier error", _func(
        "  %0 = sdy.data_flow_edge %arg0 : tensor<8x16xf32>\n"
        "  %1 = stablehlo.negate %arg0 : tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n",
        sig='%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"pp"}, {}]>}'),
     3, 3, "expected input of sdy.data_flow_edge to have a single user"),
]


@pytest.mark.parametrize(("text", "line", "col", "fragment"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_is_located(text: str, line: int, col: int, fragment: str):
    with pytest.raises(ShardcError) as info:
        import_stablehlo(text, "bad.mlir")
    err = info.value
    rendered = err.render()
    assert fragment in err.message, rendered
    assert err.loc is not None and (err.loc.line, err.loc.col) == (line, col), rendered
    assert rendered.startswith(f"bad.mlir:{line}:{col}: error: ")


def test_truncated_corpus_never_tracebacks():
    text = (DATA / "extras/transformer_block.open.mlir").read_text()
    for cut in range(0, len(text), max(len(text) // 150, 1)):
        try:
            import_stablehlo(text[:cut], "cut.mlir")
        except ShardcError as e:
            assert e.render().startswith(("cut.mlir:", "error:"))


def test_garbled_corpus_never_tracebacks():
    text = (DATA / "embedding_logits_xent.mlir").read_text()
    for i in range(0, len(text), max(len(text) // 120, 1)):
        for junk in ("}", "%", "<", '"', "x", "0"):
            with contextlib.suppress(ShardcError):
                import_stablehlo(text[:i] + junk + text[i + 1 :], "junk.mlir")
