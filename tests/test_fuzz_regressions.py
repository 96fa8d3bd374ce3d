"""What the fuzzer found (tests/fuzzing, benchmarks/fuzz.py), each minimised to a regression
test: the program compiles, and runs on the simulated devices to the reference's numbers."""

from __future__ import annotations

import pytest

from shardc.cli import main
from tests.fuzzing.oracle import check_program

MESH_XYZ = 'mesh @mesh = <["x"=2, "y"=2, "z"=4]>\n'

CASES = {
    # spmd: top_k in a program without any mesh asked for its operand's layout on the
    # function's mesh, which it has none of (an internal AssertionError; fuzz seed 71).
    "top_k_without_a_mesh": """func @main(%a: tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xi32>) {
  %0, %1 = top_k %a {k = 3} : tensor<4x3xf32>, tensor<4x3xi32>
  return %0, %1
}
""",
    # propagate: a p1 dim of two sub-axes was withheld into `replicated`, which merged them
    # into "z"; restoring it removed neither, so "z" was in the dim and replicated at once.
    "priority_sub_axes_restored": MESH_XYZ
    + """
func @main(%a: tensor<8xf32, <@mesh, [{"z":(2)2, "z":(1)2, ?}p1]>>) -> tensor<8xf32> {
  %0 = reshard %a : tensor<8xf32, <@mesh, [{"y", "z", "x"}]>>
  %1 = maximum %0, %a : tensor<8xf32>
  return %1
}
""",
    # insert-reshards: a reshape 2x1 -> 2 whose unit dim is sharded on "x" (padded: only the
    # first device holds the data) was done locally; every other device produced zeros.
    "reshape_drops_sharded_unit_dim": """mesh @mesh = <["x"=4]>
func @main(%a: tensor<2x1xf32, <@mesh, [{}, {"x"}]>>) -> tensor<2xf32, <@mesh, [{"x"}]>> {
  %0 = reshape %a : tensor<2xf32>
  return %0
}
""",
    # insert-reshards: 5x4 -> 2x10 factors apart (i=5, l=2 only in the operand, j=2, k=5
    # only in the result); the result's j was sharded and spmd could not reshape the block.
    "reshape_one_sided_factor": """mesh @mesh = <["x"=2, "y"=2]>
func @main(%a: tensor<5x4xf32>) -> tensor<2x10xf32, <@mesh, [{"x"}, {"y"}]>> {
  %0 = reshape %a : tensor<2x10xf32>
  return %0
}
""",
    # remove-size-one-axes: dropping "x" (size 1) left "y":(1)2, "y":(2)2 side by side, a
    # sharding the verifier rejects (they must merge into "y").
    "size_one_axis_between_sub_axes": """mesh @mesh = <["x"=1, "y"=4]>
func @main(%a: tensor<6x4xf32, <@mesh, [{"y":(1)2, "x", "y":(2)2}, {}]>>) -> tensor<6x4xf32> {
  %0 = negate %a : tensor<6x4xf32>
  return %0
}
""",
    # insert-reshards: the operand's last dim (factor m) sharded on "x" while the result's dim
    # 12 (factors l, m: m minor, l unsharded) cannot spell m's axes; spmd then found the
    # factor sharded on one side only.
    "reshape_minor_factor_after_unsharded_one": """mesh @mesh = <["x"=2, "y"=3]>
func @main(%a: tensor<3x4x4xf32, <@mesh, [{"y"}, {}, {"x"}]>>) -> tensor<4x12xf32, <@mesh, [{}, {"y", "x", ?}]>> {
  %0 = reshape %a : tensor<4x12xf32>
  return %0
}
""",
    # propagate: members of one sharding group constrained two ways were an error; Shardy
    # warns and gives each member an open sharding constraint instead.
    "sharding_group_conflict": """mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %0 = add %a, %a : tensor<8x6xf32>
  %1 = sharding_constraint %0 : tensor<8x6xf32, <@mesh, [{"y":(2)2}, {}]>>
  %2 = maximum %1, %a : tensor<8x6xf32>
  sharding_group %0 {group_id = 1}
  sharding_group %2 {group_id = 1}
  %3 = sharding_constraint %2 : tensor<8x6xf32, <@mesh, [{"y":(1)2}p1, {}]>>
  return %3
}
""",
    # propagate: a while result in a sharding group took the group's sharding, but its loop
    # body's argument and result did not (insert-reshards: "values that stand for one
    # loop-carried value have different shardings").
    "sharding_group_on_a_loop_result": """mesh @mesh = <["x"=3, "z"=3]>
func @main(%a0: tensor<9xf32, <@mesh, [{"x", ?}]>>, %a1: tensor<9xf32>) -> tensor<9xf32, <@mesh, [{"z"}]>> {
  %0 = subtract %a1, %a0 : tensor<9xf32>
  %1 = constant {value = dense<0>} : tensor<i32>
  %2, %3 = while %1, %a0 {cond = @cond, body = @body} : tensor<i32>, tensor<9xf32>
  sharding_group %3 {group_id = 1}
  sharding_group %0 {group_id = 1}
  return %0
}
func private @cond(%0: tensor<i32>, %1: tensor<9xf32>) -> tensor<i1> {
  %2 = constant {value = dense<1>} : tensor<i32>
  %3 = compare %0, %2 {comparison_direction = LT} : tensor<i1>
  return %3
}
func private @body(%0: tensor<i32>, %1: tensor<9xf32>) -> (tensor<i32>, tensor<9xf32>) {
  %4 = constant {value = dense<1>} : tensor<i32>
  %5 = add %0, %4 : tensor<i32>
  %6 = tanh %1 : tensor<9xf32>
  return %5, %6
}
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_like_the_reference(name):
    outcome = check_program(CASES[name])
    assert outcome.kind == "ok", outcome.message


def test_size_one_axis_removal_merges_sub_axes(tmp_path, capsys):
    path = tmp_path / "a.mlir"
    path.write_text(CASES["size_one_axis_between_sub_axes"])
    assert main(["opt", str(path), "-p", "remove-size-one-axes"]) == 0
    assert '[{"y"}, {}]' in capsys.readouterr().out


def test_one_sided_reshape_factors_stay_unsharded(tmp_path, capsys):
    path = tmp_path / "a.mlir"
    path.write_text(CASES["reshape_one_sided_factor"])
    assert (
        main(["opt", str(path), "-p", "propagation-pipeline,close-shardings,insert-reshards"]) == 0
    )
    out = capsys.readouterr().out
    assert "reshape %a : tensor<2x10xf32, <@mesh, [{}, {}]>>" in out
    assert 'reshard %0 : tensor<2x10xf32, <@mesh, [{"x"}, {"y"}]>>' in out


def test_sharded_unit_dim_is_gathered_before_a_reshape_drops_it(tmp_path, capsys):
    path = tmp_path / "a.mlir"
    path.write_text(CASES["reshape_drops_sharded_unit_dim"])
    assert (
        main(["opt", str(path), "-p", "propagation-pipeline,close-shardings,insert-reshards"]) == 0
    )
    out = capsys.readouterr().out
    assert "reshard %a : tensor<2x1xf32, <@mesh, [{}, {}]>>" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # the executor's numpy conversion overflowed (an internal error) on an i32 of 2^63
        ("func @main() -> tensor<i32> {\n  %0 = constant {value = dense<9223372036854775808>} "
         ": tensor<i32>\n  return %0\n}\n",
         "a.mlir:2:3: error: 'constant' op dense literal value 9223372036854775808 is out of "
         "range for i32"),
        # a float literal for an integer type became inf (a loop bound of ~2^31 iterations:
        # the run never ended; fuzz seed 73)
        ("func @main() -> tensor<i32> {\n  %0 = constant {value = dense<1e309>} "
         ": tensor<i32>\n  return %0\n}\n",
         "a.mlir:2:3: error: 'constant' op dense literal value inf is not an integer, as i32"),
        # replica groups were read with Python's literal parser: garbage was a SyntaxError
        ("func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
         '  %0 = "stablehlo.all_reduce"(%a) <{replica_groups = dense<[[0, 1]x, [2, 3]]> : '
         "tensor<2x2xi64>}> ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
         "    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n"
         "  }) : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
         "expected integers in nested lists"),
        # a hex element inside a dense list stayed a ("hex", text) pair and crashed the printer
        ("func @main() -> tensor<2xi32> {\n  %0 = constant {value = dense<[0x7FC00000, 2]>} "
         ": tensor<2xi32>\n  return %0\n}\n",
         "a.mlir:2:26: error: a hexadecimal element inside a dense list is not supported"),
        # a named computation whose body returns fewer values than it has results: IndexError
        ('sdy.mesh @m = <["a"=2]>\nfunc.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {\n'
         '  %0 = sdy.named_computation<"f">(%a) out_shardings=[<@m, [{"a"}]>] '
         "(%b: tensor<8xf32>) {\n    sdy.return\n  } : (tensor<8xf32>) -> tensor<8xf32>\n"
         "  return %0 : tensor<8xf32>\n}\n",
         "a.mlir:3:8: error: 'sdy.named_computation' op: has 1 result but its body returns 0 values"),
    ],
)
def test_malformed_literals_are_located_errors(tmp_path, capsys, text, message):
    path = tmp_path / "a.mlir"
    path.write_text(text)
    assert main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and "internal compiler error" not in err


def test_signless_integer_literals_take_their_bit_patterns(tmp_path, capsys):
    """MLIR reads `dense<4294967295> : tensor<i32>` as -1 (signless), so does shardc."""
    path = tmp_path / "a.mlir"
    path.write_text("func @main() -> tensor<2xi32> {\n  %0 = constant {value = "
                    "dense<[4294967295, 7]>} : tensor<2xi32>\n  return %0\n}\n")
    assert main(["run", str(path)]) == 0
    assert "[-1  7]" in capsys.readouterr().out


def test_run_check_takes_equal_infinities_as_equal(tmp_path, capsys):
    """`run --check` compared inf with inf as nan (inf - inf) and called a correct run wrong."""
    path = tmp_path / "a.mlir"
    path.write_text('mesh @m = <["x"=2]>\nfunc @main(%a: tensor<8xf32, <@m, [{"x"}]>>) -> '
                    "tensor<8xf32> {\n  %c = constant {value = dense<1e309>} : tensor<8xf32>\n"
                    "  %0 = multiply %a, %c : tensor<8xf32>\n  return %0\n}\n")
    assert main(["run", str(path), "--check"]) == 0
    assert "max abs error 0.000e+00" in capsys.readouterr().out


def test_run_check_compares_complex_outputs_as_complex():
    """`run --check` cast complex outputs to float64 (numpy's ComplexWarning in the fuzz test):
    two outputs that differ only in their imaginary parts compared equal."""
    import numpy as np

    from shardc.check import CheckOptions, expect, judge

    want = np.array([1 + 2j, 3 - 1j], np.complex64)
    fixed = expect(want, options=CheckOptions(rtol=1e-5))
    verdict = judge(want.conj(), fixed)
    assert not verdict.ok and verdict.error == pytest.approx(4.0)
    assert judge(want.copy(), fixed).ok and judge(want.copy(), fixed).error == 0.0
    # the derived bound (the default) compares complex numbers as complex too
    assert not judge(want.conj(), expect(want.astype(np.complex128), [want])).ok
    inf = np.array([complex(np.inf, 0)], np.complex64)
    assert judge(inf, expect(inf, options=CheckOptions(rtol=1e-5))).ok
