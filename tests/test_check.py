"""`shardc run --check` (compiler/check.py): the float64 reference, the bound derived from the
unsharded run's own error, NaN/inf handling, integers; the promotion to f64 it runs."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.check import BASELINE_FACTOR, CheckOptions, expect, expectations, judge
from shardc.cli import main
from shardc.executors.promote import NotPromotable, promote_floats, widen
from shardc.executors.reference import run_reference
from shardc.ir.parser import parse_module
from shardc.stablehlo import import_stablehlo

# JAX writes f32 -inf as its bit pattern; read as an f64 pattern it would be a tiny number.
NEG_INF = """
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.maximum %arg0, %0 : tensor<4xf32>
  %c = stablehlo.constant dense<[1.0, 2.5, -3.0, 0.1]> : tensor<4xbf16>
  %2 = stablehlo.multiply %arg1, %c : tensor<4xbf16>
  %3 = stablehlo.convert %2 : (tensor<4xbf16>) -> tensor<4xf32>
  return %1, %3 : tensor<4xf32>, tensor<4xf32>
}
"""


def test_promotion_widens_values_constants_and_inputs_exactly() -> None:
    import ml_dtypes

    module = import_stablehlo(NEG_INF, "neg_inf")
    wide = promote_floats(module)
    assert {v.type.dtype for f in wide.functions.values() for op in f.body
            for v in op.results} <= {"f64"}
    assert [a.type.dtype for a in module.main.args] == ["f32", "bf16"]  # the original stays
    x = np.array([-np.inf, 1.0, -2.0, 3.5], np.float32)
    y = np.array([1.0, -2.0, 0.5, 3.0], ml_dtypes.bfloat16)
    assert widen(x).dtype == np.float64 and widen(y).dtype == np.float64
    assert np.array_equal(widen(y), y.astype(np.float64))
    got = run_reference(wide, [widen(x), widen(y)])
    want = run_reference(module, [x, y])
    assert got[0].dtype == np.float64 and np.array_equal(got[0], want[0].astype(np.float64))
    # bf16 0.1 is 0.10009765625: the promoted program keeps the constant's own value
    assert got[1][3] == pytest.approx(3.0 * float(ml_dtypes.bfloat16(0.1)), rel=1e-15)


def test_bitcasts_and_random_floats_are_not_promoted() -> None:
    text = ("func @main(%a: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>) {\n"
            "  %0 = bitcast_convert %a : tensor<4xi32>\n  %1 = add %a, %a : tensor<4xf32>\n"
            "  return %0, %1\n}\n")
    with pytest.raises(NotPromotable, match="bitcast_convert.*f32 to i32"):
        promote_floats(parse_module(text, "b.mlir"))
    # the check then compares against the program's own precision, and says so
    x = np.arange(4, dtype=np.float32)
    found, notes = expectations(parse_module(text, "b.mlir"), [x])
    assert found[0].is_exact and found[1].want.dtype == np.float64  # f32 values, widened
    assert "own precision" in notes[0] and "b.mlir:2:" in notes[0]
    assert found[1].bound == pytest.approx(1e-5 * 6.0)  # the fixed floor: no other run


def test_the_bound_is_the_unsharded_error_times_c_plus_the_floor() -> None:
    r64 = np.array([1.0, -2.0, 4.0])
    run = np.array([1.0, -2.0 + 1e-3, 4.0], np.float32)  # the unsharded run misses by 1e-3
    e = expect(r64, [run], dtype="float32")
    assert e.baseline == pytest.approx(1e-3, rel=1e-4)
    assert e.bound == pytest.approx(BASELINE_FACTOR * e.baseline + 1e-5 * 4.0)
    assert judge(r64 + 7e-3, e).ok  # within 8x what the unsharded program misses by
    assert not judge(r64 + 9e-3, e).ok
    text = judge(r64 + 9e-3, e).text
    assert text.endswith("FAILED") and "8 x unsharded error 1.000e-03 + 1e-05 x max |value|" in text


def test_nan_and_inf_are_compared_exactly_and_an_all_nan_output_is_not_checked() -> None:
    r64 = np.array([np.nan, np.inf, 1.0, 2.0])
    run = r64.astype(np.float32)
    e = expect(r64, [run], dtype="float32")
    assert e.nonfinite == 2 and e.finite == 2 and e.checked
    assert judge(run, e).ok
    assert not judge(np.array([1.0, np.inf, 1.0, 2.0], np.float32), e).ok  # NaN expected
    assert not judge(np.array([np.nan, np.inf, np.nan, 2.0], np.float32), e).ok
    nan = expect(np.full(3, np.nan), [np.full(3, np.nan, np.float32)], dtype="float32")
    assert not nan.checked and "not checked" in judge(np.full(3, np.nan), nan).text
    assert not judge(np.zeros(3, np.float32), nan).ok  # still: NaN where NaN belongs


def test_elements_the_program_overflows_are_not_compared() -> None:
    r64 = np.array([1e39, 1.0])  # finite in f64, inf in f32
    run = np.array([np.inf, 1.0], np.float32)
    e = expect(r64, [run], dtype="float32")
    assert e.skipped == 1 and e.finite == 1
    assert judge(np.array([-np.inf, 1.0], np.float32), e).ok
    assert not judge(np.array([np.inf, 1.5], np.float32), e).ok


def test_integers_equal_an_unsharded_run() -> None:
    want = np.array([3, 1, 2], np.int32)
    e = expect(want, [np.array([3, 1, 0], np.int32)])  # e.g. an argmax the backend breaks
    assert judge(want, e).ok and judge(np.array([3, 1, 0], np.int32), e).ok
    verdict = judge(np.array([3, 2, 2], np.int32), e)
    assert not verdict.ok and "1 of 3 elements differ" in verdict.text


def test_fixed_tolerances_replace_the_bound() -> None:
    want = np.array([1.0, 2.0], np.float32)
    e = expect(want, options=CheckOptions(rtol=0.1))
    assert e.bound == pytest.approx(0.2) and "tolerance 0.1" in judge(want, e).text
    assert judge(want + 0.19, e).ok and not judge(want + 0.21, e).ok
    assert expect(want, options=CheckOptions(atol=0.5)).bound == pytest.approx(0.5 + 2e-5)


NAN_PROGRAM = """mesh @m = <["x"=2]>
func @main(%a: tensor<8xf32, <@m, [{"x"}]>>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c = constant {value = dense<-1.0>} : tensor<8xf32>
  %0 = sqrt %c : tensor<8xf32>
  %1 = add %a, %0 : tensor<8xf32>
  %2 = multiply %a, %a : tensor<8xf32>
  return %1, %2
}
"""


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_the_cli_reports_outputs_it_cannot_check(tmp_path, capsys, backend) -> None:
    if backend == "jax":
        pytest.importorskip("jax")
    path = tmp_path / "nan.mlir"
    path.write_text(NAN_PROGRAM)
    assert main(["run", str(path), "--check", "--backend", backend]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].endswith("not checked (no finite element in the reference)")
    assert "8 NaN/inf elements compared exactly" in lines[0]
    assert lines[1].endswith(" ok") and "x unsharded error" in lines[1]
    assert "warning: 1 of 2 outputs not checked" in err


def test_an_empty_output_is_checked_and_passes() -> None:
    e = expect(np.zeros((0, 3)), [np.zeros((0, 3), np.float32)], dtype="float32")
    verdict = judge(np.zeros((0, 3), np.float32), e)
    assert e.checked and verdict.ok and verdict.text.endswith(" ok")
    assert not judge(np.zeros((1, 3), np.float32), e).ok  # the shape is still compared
