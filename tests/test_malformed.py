"""A corpus of malformed inputs: every one gives a located error and exit 1, never a traceback."""

from __future__ import annotations

import re

import pytest

from shardc.cli import main

GOOD_HEAD = 'mesh @m = <["x"=2, "y"=4]>\n\n'


def fn(body: str, args: str = "%a: tensor<8x8xf32>", results: str = "tensor<8x8xf32>") -> str:
    return GOOD_HEAD + f"func @main({args}) -> {results} {{\n{body}\n}}\n"


CASES: dict[str, tuple[str, str]] = {
    # name: (text, a fragment the message must contain)
    "bad_token": ("func @main() { $ }", "unexpected character"),
    "unknown_op": (
        fn("  %0 = frobnicate %a : tensor<8x8xf32>\n  return %0"),
        "unknown op 'frobnicate'",
    ),
    "undefined_value": (
        fn("  %0 = tanh %zz : tensor<8x8xf32>\n  return %0"),
        "undefined value %zz",
    ),
    "redefined_value": (
        fn("  %0 = tanh %a : tensor<8x8xf32>\n  %0 = tanh %a : tensor<8x8xf32>\n  return %0"),
        "defined twice",
    ),
    "missing_return": (fn("  %0 = tanh %a : tensor<8x8xf32>"), "must end with a 'return'"),
    "wrong_return_type": (fn("  return %a", results="tensor<4x8xf32>"), "returns tensor<4x8xf32>"),
    "wrong_result_shape": (
        fn("  %0 = tanh %a : tensor<8x4xf32>\n  return %0"),
        "operands and attributes give",
    ),
    "binary_shape_mismatch": (
        fn(
            "  %0 = add %a, %b : tensor<8x8xf32>\n  return %0",
            args="%a: tensor<8x8xf32>, %b: tensor<8x4xf32>",
        ),
        "equal shapes",
    ),
    "dot_contracting_mismatch": (
        fn(
            "  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x8xf32>\n  return %0",
            args="%a: tensor<8x8xf32>, %b: tensor<4x8xf32>",
        ),
        "contracting dims",
    ),
    "dot_dim_out_of_range": (
        fn(
            "  %0 = dot_general %a, %a {lhs_contracting_dims = [5], rhs_contracting_dims = [0]} : tensor<8x8xf32>\n  return %0"
        ),
        "out of range",
    ),
    "wrong_operand_count": (
        fn("  %0 = tanh %a, %a : tensor<8x8xf32>\n  return %0"),
        "takes 1 operand",
    ),
    "missing_attr": (
        fn("  %0 = transpose %a : tensor<8x8xf32>\n  return %0"),
        "needs attribute 'permutation'",
    ),
    "unknown_attr": (
        fn("  %0 = transpose %a {perm = [1, 0]} : tensor<8x8xf32>\n  return %0"),
        "no attribute 'perm'",
    ),
    "attr_wrong_kind": (
        fn('  %0 = transpose %a {permutation = "x"} : tensor<8x8xf32>\n  return %0'),
        "array of integers",
    ),
    "bad_permutation": (
        fn("  %0 = transpose %a {permutation = [0, 0]} : tensor<8x8xf32>\n  return %0"),
        "not a permutation",
    ),
    "bad_keyword": (
        fn(
            "  %0 = compare %a, %a {comparison_direction = BIGGER} : tensor<8x8xi1>\n  return %0",
            results="tensor<8x8xi1>",
        ),
        "one of EQ",
    ),
    "duplicate_axis": (
        fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"x"}, {"x"}]>>'),
        "used twice",
    ),
    "unknown_axis": (
        fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"z"}, {}]>>'),
        "unknown axis 'z'",
    ),
    "unknown_mesh": (
        fn("  return %a", args="%a: tensor<8x8xf32, <@nope, [{}, {}]>>"),
        "unknown mesh @nope",
    ),
    "rank_mismatch": (fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"x"}]>>'), "has rank 2"),
    "bad_sub_axis": (
        fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"y":(1)3}, {}]>>'),
        "does not divide",
    ),
    "priority_on_closed_empty": (
        fn("  return %a", args="%a: tensor<8x8xf32, <@m, [{}p1, {}]>>"),
        "priority",
    ),
    "overlapping_sub_axes": (
        fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"y":(1)2}, {"y"}]>>'),
        "used twice",
    ),
    "replicated_and_sharded": (
        fn("  return %a", args='%a: tensor<8x8xf32, <@m, [{"x"}, {}], replicated={"x"}>>'),
        "used twice",
    ),
    "mesh_twice": ('mesh @m = <["x"=2]>\nmesh @m = <["y"=2]>\n', "declared twice"),
    "mesh_axis_twice": ('mesh @m = <["x"=2, "x"=4]>\n', "declares axis 'x' twice"),
    "bad_device_ids": ('mesh @m = <["x"=2], device_ids=[0, 0]>\n', "permutation"),
    "truncated_file": (
        GOOD_HEAD + "func @main(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {\n  %0 = tanh",
        "unexpected end of input",
    ),
    "truncated_type": (GOOD_HEAD + "func @main(%a: tensor<8x8xf32", "unexpected end of input"),
    "huge_number": (
        fn(
            "  %0 = transpose %a {permutation = [99999999999999999999999, 0]} : tensor<8x8xf32>\n  return %0"
        ),
        "not a permutation",
    ),
    "deep_nesting": (
        fn(
            "  %0 = constant {value = dense<"
            + "[" * 3000
            + "1"
            + "]" * 3000
            + ">} : tensor<f32>\n  return %a"
        ),
        "error",
    ),
    "unknown_dtype": (fn("  return %a", args="%a: tensor<8x8xf7>"), "unexpected"),
    "function_twice": ("func @f() {\n  return\n}\n\nfunc @f() {\n  return\n}\n", "defined twice"),
    "call_unknown": (
        fn("  %0 = call %a {callee = @nope} : tensor<8x8xf32>\n  return %0"),
        "not defined",
    ),
    "collective_wrong_result": (
        fn(
            '  %0 = all_gather %a {gathering_axes = [["y"], []]} : tensor<8x8xf32, <@m, [{"x", "y"}, {}]>>\n  return %0',
            args='%a: tensor<8x8xf32, <@m, [{"x", "y"}, {}]>>',
        ),
        "does not match",
    ),
    "constraint_without_sharding": (
        fn("  %0 = sharding_constraint %a : tensor<8x8xf32>\n  return %0"),
        "must carry a sharding",
    ),
    "ragged_dense": (
        fn("  %0 = constant {value = dense<[[1, 2], [3]]>} : tensor<2x2xi32>\n  return %a"),
        "ragged",
    ),
    "reshape_count": (fn("  %0 = reshape %a : tensor<8x9xf32>\n  return %a"), "cannot reshape"),
    "duplicate_attr": (
        fn(
            "  %0 = transpose %a {permutation = [1, 0], permutation = [1, 0]} : tensor<8x8xf32>\n  return %0"
        ),
        "given twice",
    ),
    "results_without_types": (fn("  %0 = tanh %a\n  return %0"), "lists 0 result types"),
    "binary_garbage": ("\x00\x01\x02", "unexpected character"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_input_gives_located_error(name: str, tmp_path, capsys) -> None:
    text, fragment = CASES[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(text)
    code = main(["opt", str(path)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and "internal compiler error" not in err, err
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: error: ", err), err
    assert fragment in err, err


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


def test_unreadable_inputs_are_user_errors(tmp_path, capsys) -> None:
    assert main(["opt", str(tmp_path / "missing.mlir")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["opt", str(tmp_path)]) == 1
    bad = tmp_path / "latin1.mlir"
    bad.write_bytes(b"func @f() {\xff}")
    assert main(["opt", str(bad)]) == 1
    assert "not UTF-8" in capsys.readouterr().err


def test_bad_usage_exits_2(tmp_path, capsys) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text("func @f() {\n  return\n}\n")
    assert main(["opt", str(path), "-p", "no-such-pass"]) == 2
    assert "unknown pass 'no-such-pass'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["opt"])
    assert exc.value.code == 2
