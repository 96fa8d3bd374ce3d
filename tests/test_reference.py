"""The reference interpreter: every op against an independent expectation.

Programs are native IR text parsed with `parse_module`; expectations are hand-computed cases,
numpy formulas, and (when JAX is installed) `jax.lax` on random inputs.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from shardc.executors.reference import Interpreter, run_reference
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.parser import parse_module

ROOT = Path(__file__).resolve().parent.parent
BF16 = np.dtype(ml_dtypes.bfloat16)
MLIR_DTYPES = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16",
    BF16: "bf16", np.dtype(np.bool_): "i1", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "ui8",
    np.dtype(np.uint32): "ui32", np.dtype(np.uint64): "ui64",
}
MESH = 'mesh @mesh = <["x"=2, "y"=2]>\n'


def ty(shape: tuple[int, ...], dtype) -> str:
    dims = "".join(f"{n}x" for n in shape)
    return f"tensor<{dims}{MLIR_DTYPES[np.dtype(dtype)]}>"


def run_text(text: str, *inputs, **named) -> list[np.ndarray]:
    module = parse_module(text, "test.mlir")
    return run_reference(module, named if named else list(inputs), check_types=True)


def run_op(line: str, result: str, prefix: str = "", **args: np.ndarray) -> np.ndarray:
    """Run `%0 = <line> : <result>` on the named arguments; returns %0."""
    sig = ", ".join(f"%{k}: {ty(v.shape, v.dtype)}" for k, v in args.items())
    text = f"{prefix}func @main({sig}) -> {result} {{\n  %0 = {line} : {result}\n  return %0\n}}\n"
    (out,) = run_text(text, **args)
    return out


def rand(shape, dtype=np.float32, seed=0, lo=-3.0, hi=3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi), size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def jax_lax():
    pytest.importorskip("jax")
    from jax import lax

    return lax


# ----- element-wise: floats -------------------------------------------------------------------

def _erf_inv(y: float) -> float:
    """erf's inverse by bisection on math.erf (independent of the kernel's scipy)."""
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


FLOAT_UNARY = [
    ("abs", np.abs, (-3, 3)),
    ("negate", np.negative, (-3, 3)),
    ("exponential", np.exp, (-3, 3)),
    ("exponential_minus_one", np.expm1, (-1, 1)),
    ("log", np.log, (0.1, 5)),
    ("log_plus_one", np.log1p, (-0.5, 5)),
    ("sqrt", np.sqrt, (0, 9)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), (0.1, 9)),
    ("cbrt", np.cbrt, (-8, 8)),
    ("tanh", np.tanh, (-3, 3)),
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), (-8, 8)),
    ("sine", np.sin, (-3, 3)),
    ("cosine", np.cos, (-3, 3)),
    ("tan", np.tan, (-1.4, 1.4)),
    ("floor", np.floor, (-3, 3)),
    ("ceil", np.ceil, (-3, 3)),
    ("square", lambda x: x * x, (-3, 3)),
    ("reciprocal", lambda x: 1 / x, (0.5, 3)),
    ("erf", np.vectorize(math.erf), (-4, 4)),
    ("erf_inv", lambda x: np.vectorize(_erf_inv)(x), (-0.999, 0.999)),
]


@pytest.mark.parametrize(("name", "expect", "bounds"), FLOAT_UNARY, ids=[c[0] for c in FLOAT_UNARY])
def test_float_unary_matches_float64_formula(name, expect, bounds):
    x = rand((4, 5), lo=bounds[0], hi=bounds[1])
    out = run_op(f"{name} %x", "tensor<4x5xf32>", x=x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expect(x.astype(np.float64)), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["exponential", "tanh", "erf", "logistic", "add"])
def test_bf16_is_computed_in_f32_and_rounded_once(name):
    x = rand((64,), lo=-2, hi=2).astype(BF16)
    y = rand((64,), seed=1, lo=-2, hi=2).astype(BF16)
    f32 = {"exponential": np.exp, "tanh": np.tanh, "logistic": lambda v: 1 / (1 + np.exp(-v)),
           "erf": np.vectorize(math.erf), "add": None}[name]
    if name == "add":
        out = run_op("add %x, %y", "tensor<64xbf16>", x=x, y=y)
        want = (x.astype(np.float32) + y.astype(np.float32)).astype(BF16)
        np.testing.assert_array_equal(out, want)
    else:
        out = run_op(f"{name} %x", "tensor<64xbf16>", x=x)
        want = f32(x.astype(np.float64)).astype(np.float32).astype(BF16)
        assert out.dtype == BF16
        np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=8e-3)


def test_erf_is_accurate_to_float64_everywhere():
    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, 2.5, 2.4999999999, 40.0]])
    out = run_op("erf %x", "tensor<20005xf64>", x=x)
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(out, want, rtol=1e-14, atol=1e-300)
    special = np.array([np.inf, -np.inf, np.nan, -0.0])
    out = run_op("erf %x", "tensor<4xf64>", x=special)
    assert out[0] == 1 and out[1] == -1 and np.isnan(out[2]) and np.signbit(out[3])


def test_erf_matches_scipy_when_available():
    special = pytest.importorskip("scipy.special")
    x = rand((1000,), np.float32, lo=-5, hi=5)
    out = run_op("erf %x", "tensor<1000xf32>", x=x)
    np.testing.assert_allclose(out, special.erf(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


def test_erf_inv_inverts_erf_with_its_limits():
    # jax.random.normal's sampler: erf_inv of a uniform draw in (-1, 1).
    x = np.concatenate([np.linspace(-0.9999, 0.9999, 2001), [1.0, -1.0, 1.5, 0.0]])
    out = run_op("erf_inv %x", "tensor<2005xf64>", x=x)
    np.testing.assert_allclose([math.erf(v) for v in out[:2001]], x[:2001], rtol=1e-13)
    assert out[2001] == np.inf and out[2002] == -np.inf and np.isnan(out[2003])
    assert out[2004] == 0


def test_rounding_and_sign_edge_cases():
    x = np.array([0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.0, np.nan, np.inf], np.float32)
    t = "tensor<9xf32>"
    afz = run_op("round_nearest_afz %x", t, x=x)
    np.testing.assert_array_equal(afz, [1, -1, 2, 3, -3, 0, -0.0, np.nan, np.inf])
    even = run_op("round_nearest_even %x", t, x=x)
    np.testing.assert_array_equal(even, [0, -0.0, 2, 2, -2, 0, -0.0, np.nan, np.inf])
    sign = run_op("sign %x", t, x=x)
    np.testing.assert_array_equal(sign, [1, -1, 1, 1, -1, 1, -0.0, np.nan, 1])
    assert np.signbit(sign[6]) and not np.signbit(sign[0])


def test_float_binary_ops():
    x = np.array([7.5, -7.5, 1.0, np.nan, -0.0, 2.0], np.float32)
    y = np.array([2.0, 2.0, np.nan, 1.0, 0.0, -3.0], np.float32)
    t = "tensor<6xf32>"
    np.testing.assert_array_equal(run_op("add %x, %y", t, x=x, y=y), x + y)
    np.testing.assert_array_equal(run_op("subtract %x, %y", t, x=x, y=y), x - y)
    np.testing.assert_array_equal(run_op("multiply %x, %y", t, x=x, y=y), x * y)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(run_op("divide %x, %y", t, x=x, y=y), x / y)
    rem = run_op("remainder %x, %y", t, x=x, y=y)
    np.testing.assert_array_equal(rem[:2], [1.5, -1.5])  # sign follows the dividend
    mx = run_op("maximum %x, %y", t, x=x, y=y)
    assert np.isnan(mx[2]) and np.isnan(mx[3]) and mx[0] == 7.5  # NaN propagates
    mn = run_op("minimum %x, %y", t, x=x, y=y)
    assert np.isnan(mn[2]) and mn[5] == -3
    np.testing.assert_allclose(run_op("power %x, %y", t, x=np.abs(x), y=y),
                               np.power(np.abs(x), y), rtol=1e-6)
    np.testing.assert_allclose(run_op("atan2 %x, %y", t, x=x, y=y), np.arctan2(x, y), rtol=1e-6)


def test_integer_divide_by_zero_in_float_gives_ieee():
    x = np.array([1.0, -1.0, 0.0], np.float32)
    out = run_op("divide %x, %y", "tensor<3xf32>", x=x, y=np.zeros(3, np.float32))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


# ----- element-wise: integers -----------------------------------------------------------------


def test_integer_arithmetic_wraps_around():
    big = np.array([2**31 - 1, -(2**31), 100000], np.int32)
    one = np.array([1, -1, 100000], np.int32)
    t = "tensor<3xi32>"
    np.testing.assert_array_equal(run_op("add %x, %y", t, x=big, y=one),
                                  [-(2**31), 2**31 - 1, 200000])
    np.testing.assert_array_equal(run_op("multiply %x, %y", t, x=big, y=one),
                                  [2**31 - 1, -(2**31), 1410065408])  # 1e10 mod 2^32
    np.testing.assert_array_equal(run_op("negate %x", t, x=big), [-(2**31) + 1, -(2**31), -100000])
    np.testing.assert_array_equal(run_op("abs %x", t, x=big), [2**31 - 1, -(2**31), 100000])
    i8 = np.array([127, -128], np.int8)
    np.testing.assert_array_equal(run_op("add %x, %x", "tensor<2xi8>", x=i8), [-2, 0])
    np.testing.assert_array_equal(run_op("square %x", "tensor<2xi8>", x=i8), [1, 0])


def test_integer_divide_truncates_and_remainder_follows_dividend():
    a = np.array([7, -7, 7, -7, 6, -(2**31), -(2**31), 5, -5], np.int32)
    b = np.array([2, 2, -2, -2, 3, -1, 1, 0, 0], np.int32)
    t = "tensor<9xi32>"
    q = run_op("divide %a, %b", t, a=a, b=b)
    np.testing.assert_array_equal(q, [3, -3, -3, 3, 2, -(2**31), -(2**31), -1, -1])
    r = run_op("remainder %a, %b", t, a=a, b=b)
    np.testing.assert_array_equal(r, [1, -1, 1, -1, 0, 0, 0, 5, -5])
    u = np.array([7, 9], np.uint32)
    v = np.array([0, 2], np.uint32)
    np.testing.assert_array_equal(run_op("divide %u, %v", "tensor<2xui32>", u=u, v=v),
                                  [2**32 - 1, 4])
    np.testing.assert_array_equal(run_op("remainder %u, %v", "tensor<2xui32>", u=u, v=v), [7, 1])


def test_integer_divide_and_remainder_match_jax():
    lax = jax_lax()
    a = rand((200,), np.int32, seed=3, lo=-50, hi=50)
    b = rand((200,), np.int32, seed=4, lo=-6, hi=6)  # includes zeros
    t = "tensor<200xi32>"
    np.testing.assert_array_equal(run_op("divide %a, %b", t, a=a, b=b), np.asarray(lax.div(a, b)))
    np.testing.assert_array_equal(run_op("remainder %a, %b", t, a=a, b=b),
                                  np.asarray(lax.rem(a, b)))


def test_integer_power():
    x = np.array([2, -1, -1, 1, 0, 3, -2, 2, 5, 7], np.int32)
    y = np.array([-1, -1, -2, -5, 0, 4, 3, 31, 0, 20], np.int32)
    out = run_op("power %x, %y", "tensor<10xi32>", x=x, y=y)
    want = [0, -1, 1, 1, 1, 81, -8, -(2**31), 1, (7**20) % 2**32 - 2**32 * ((7**20) % 2**32 >= 2**31)]
    np.testing.assert_array_equal(out, want)


def test_bitwise_and_logical_ops():
    a = np.array([0b1100, -1, 0], np.int32)
    b = np.array([0b1010, 5, 7], np.int32)
    t = "tensor<3xi32>"
    np.testing.assert_array_equal(run_op("and %a, %b", t, a=a, b=b), a & b)
    np.testing.assert_array_equal(run_op("or %a, %b", t, a=a, b=b), a | b)
    np.testing.assert_array_equal(run_op("xor %a, %b", t, a=a, b=b), a ^ b)
    np.testing.assert_array_equal(run_op("not %a", t, a=a), ~a)
    p = np.array([True, False, True])
    q = np.array([True, True, False])
    np.testing.assert_array_equal(run_op("and %p, %q", "tensor<3xi1>", p=p, q=q), p & q)
    np.testing.assert_array_equal(run_op("not %p", "tensor<3xi1>", p=p), ~p)


# ----- compare, select, clamp, convert, is_finite ---------------------------------------------


@pytest.mark.parametrize(("direction", "fn"), [
    ("EQ", np.equal), ("NE", np.not_equal), ("GE", np.greater_equal),
    ("GT", np.greater), ("LE", np.less_equal), ("LT", np.less),
])
def test_compare_directions(direction, fn):
    a = np.array([1.0, 2.0, np.nan, -0.0, 3.0], np.float32)
    b = np.array([1.0, 1.0, np.nan, 0.0, 4.0], np.float32)
    out = run_op(f"compare %a, %b {{comparison_direction = {direction}}}", "tensor<5xi1>", a=a, b=b)
    np.testing.assert_array_equal(out, fn(a, b))
    ai = np.array([-3, 5], np.int32)
    bi = np.array([2, 5], np.int32)
    out = run_op(f"compare %a, %b {{comparison_direction = {direction}}}", "tensor<2xi1>",
                 a=ai, b=bi)
    np.testing.assert_array_equal(out, fn(ai, bi))


def test_compare_total_order_and_unsigned():
    a = np.array([-0.0, -np.nan, np.nan, -np.inf, 1.0], np.float32)
    b = np.array([0.0, -np.inf, np.inf, -np.nan, 1.0], np.float32)
    out = run_op("compare %a, %b {comparison_direction = LT, compare_type = TOTALORDER}",
                 "tensor<5xi1>", a=a, b=b)
    np.testing.assert_array_equal(out, [True, True, False, False, False])
    eq = run_op("compare %a, %a {comparison_direction = EQ, compare_type = TOTALORDER}",
                "tensor<5xi1>", a=a)
    assert eq.all()  # NaN equals itself in the total order
    i = np.array([-1, 1], np.int32)
    j = np.array([1, -1], np.int32)
    out = run_op("compare %i, %j {comparison_direction = GT, compare_type = UNSIGNED}",
                 "tensor<2xi1>", i=i, j=j)
    np.testing.assert_array_equal(out, [True, False])


def test_select_with_tensor_and_scalar_predicate():
    p = np.array([True, False, True])
    a = np.array([1, 2, 3], np.int32)
    b = np.array([10, 20, 30], np.int32)
    np.testing.assert_array_equal(run_op("select %p, %a, %b", "tensor<3xi32>", p=p, a=a, b=b),
                                  [1, 20, 3])
    s = np.array(False)
    np.testing.assert_array_equal(run_op("select %s, %a, %b", "tensor<3xi32>", s=s, a=a, b=b), b)


def test_clamp_with_scalar_and_tensor_bounds():
    x = np.array([-5.0, 0.5, 5.0, np.nan], np.float32)
    lo, hi = np.array(-1.0, np.float32), np.array(1.0, np.float32)
    out = run_op("clamp %lo, %x, %hi", "tensor<4xf32>", lo=lo, x=x, hi=hi)
    np.testing.assert_array_equal(out, [-1, 0.5, 1, np.nan])
    lo_t = np.array([0, 1, 2, 3], np.int32)
    xi = np.array([5, -5, 2, 4], np.int32)
    hi_t = np.array([1, 2, 3, 3], np.int32)
    out = run_op("clamp %lo, %x, %hi", "tensor<4xi32>", lo=lo_t, x=xi, hi=hi_t)
    np.testing.assert_array_equal(out, [1, 1, 2, 3])
    b = np.array([-5.0, 0.5, 5.0], BF16)
    out = run_op("clamp %lo, %x, %hi", "tensor<3xbf16>", lo=lo.astype(BF16), x=b,
                 hi=hi.astype(BF16))
    np.testing.assert_array_equal(out.astype(np.float32), [-1, 0.5, 1])


def test_convert_float_to_int_truncates_saturates_and_zeroes_nan():
    x = np.array([1e10, -1e10, np.nan, -3.7, 3.7, 2.1e9, np.inf], np.float32)
    out = run_op("convert %x", "tensor<7xi32>", x=x)
    np.testing.assert_array_equal(out, [2**31 - 1, -(2**31), 0, -3, 3, 2100000000, 2**31 - 1])
    out = run_op("convert %x", "tensor<7xui8>", x=x)
    np.testing.assert_array_equal(out, [255, 0, 0, 0, 3, 255, 255])
    out = run_op("convert %x", "tensor<7xi64>", x=x)
    assert out[0] == 10**10 and out[6] == 2**63 - 1


def test_convert_between_other_types():
    i = np.array([300, -1, 0], np.int32)
    np.testing.assert_array_equal(run_op("convert %i", "tensor<3xui8>", i=i), [44, 255, 0])
    np.testing.assert_array_equal(run_op("convert %i", "tensor<3xi1>", i=i), [True, True, False])
    f = np.array([0.0, -0.0, 0.5, np.nan], np.float32)
    np.testing.assert_array_equal(run_op("convert %f", "tensor<4xi1>", f=f),
                                  [False, False, True, True])
    p = np.array([True, False])
    np.testing.assert_array_equal(run_op("convert %p", "tensor<2xf32>", p=p), [1.0, 0.0])
    x = np.array([1.0 + 2**-9, 3.14159], np.float32)
    out = run_op("convert %x", "tensor<2xbf16>", x=x)
    np.testing.assert_array_equal(out, x.astype(BF16))
    np.testing.assert_array_equal(run_op("convert %o", "tensor<2xf32>", o=out),
                                  out.astype(np.float32))
    big = np.array([2**40 + 1], np.int64)
    np.testing.assert_array_equal(run_op("convert %b", "tensor<1xbf16>", b=big),
                                  np.array([2.0**40], BF16))


def test_is_finite():
    x = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(run_op("is_finite %x", "tensor<4xi1>", x=x),
                                  [True, False, False, False])
    np.testing.assert_array_equal(run_op("is_finite %x", "tensor<4xi1>", x=x.astype(BF16)),
                                  [True, False, False, False])


def test_elementwise_ops_match_jax():
    lax = jax_lax()
    x = rand((3, 7), seed=5)
    y = rand((3, 7), seed=6, lo=0.5, hi=3)
    t = "tensor<3x7xf32>"
    cases = [
        ("logistic %x", lax.logistic(x)), ("rsqrt %y", lax.rsqrt(y)), ("erf %x", lax.erf(x)),
        ("cbrt %x", lax.cbrt(x)), ("remainder %x, %y", lax.rem(x, y)),
        ("atan2 %x, %y", lax.atan2(x, y)), ("power %y, %x", lax.pow(y, x)),
        ("round_nearest_afz %x", lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO)),
        ("round_nearest_even %x", lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)),
    ]
    for line, want in cases:
        np.testing.assert_allclose(run_op(line, t, x=x, y=y), np.asarray(want), rtol=3e-6,
                                   atol=1e-6, err_msg=line)


def test_scalar_programs_keep_arrays():
    text = """
func @main(%x: tensor<f32>, %y: tensor<f32>) -> (tensor<f32>, tensor<i32>, tensor<i1>, tensor<f32>) {
  %0 = add %x, %y : tensor<f32>
  %1 = convert %0 : tensor<i32>
  %2 = compare %x, %y {comparison_direction = LT} : tensor<i1>
  %3 = select %2, %x, %y : tensor<f32>
  return %0, %1, %2, %3
}
"""
    out = run_text(text, np.array(3e9, np.float32), np.array(1.5, np.float32))
    assert all(isinstance(v, np.ndarray) and v.shape == () for v in out)
    assert out[0] == np.float32(3e9) + np.float32(1.5)
    assert out[1] == 2**31 - 1 and not out[2] and out[3] == np.float32(1.5)


# ----- creating and rearranging data ----------------------------------------------------------


def test_constants():
    text = """
func @main() -> (tensor<2x3xf32>, tensor<2xi32>, tensor<2xf32>, tensor<3xi1>, tensor<2xbf16>) {
  %0 = constant {value = dense<1.5>} : tensor<2x3xf32>
  %1 = constant {value = dense<[7, -8]>} : tensor<2xi32>
  %2 = constant {value = dense<"0x0000803F00000040">} : tensor<2xf32>
  %3 = constant {value = dense<[true, false, true]>} : tensor<3xi1>
  %4 = constant {value = dense<[0.5, -2.0]>} : tensor<2xbf16>
  return %0, %1, %2, %3, %4
}
"""
    a, b, c, d, e = run_text(text)
    np.testing.assert_array_equal(a, np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(b, [7, -8])
    np.testing.assert_array_equal(c, [1.0, 2.0])
    np.testing.assert_array_equal(d, [True, False, True])
    assert e.dtype == BF16 and e.tolist() == [0.5, -2.0]
    a[0, 0] = 3.0  # outputs are the caller's to write
    assert run_text(text)[0][0, 0] == 1.5


def test_iota():
    text = """
func @main() -> (tensor<2x3xi32>, tensor<2x3xf32>) {
  %0 = iota {iota_dimension = 1} : tensor<2x3xi32>
  %1 = iota {iota_dimension = 0} : tensor<2x3xf32>
  return %0, %1
}
"""
    a, b = run_text(text)
    np.testing.assert_array_equal(a, [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(b, [[0, 0, 0], [1, 1, 1]])


def test_broadcast_in_dim():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_op("broadcast_in_dim %x {broadcast_dimensions = [0, 2]}", "tensor<2x4x3xf32>", x=x)
    np.testing.assert_array_equal(out, np.broadcast_to(x[:, None, :], (2, 4, 3)))
    out = run_op("broadcast_in_dim %x {broadcast_dimensions = [1, 0]}", "tensor<3x2xf32>", x=x)
    np.testing.assert_array_equal(out, x.T)  # dims out of order transpose
    c = np.arange(3, dtype=np.int32).reshape(1, 3)
    out = run_op("broadcast_in_dim %c {broadcast_dimensions = [0, 1]}", "tensor<4x3xi32>", c=c)
    np.testing.assert_array_equal(out, np.broadcast_to(c, (4, 3)))
    s = np.array(2.5, np.float32)
    out = run_op("broadcast_in_dim %s {broadcast_dimensions = []}", "tensor<2x2xf32>", s=s)
    np.testing.assert_array_equal(out, np.full((2, 2), 2.5))


def test_reshape_transpose_reverse():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_op("reshape %x", "tensor<6x4xi32>", x=x), x.reshape(6, 4))
    out = run_op("transpose %x {permutation = [2, 0, 1]}", "tensor<4x2x3xi32>", x=x)
    np.testing.assert_array_equal(out, x.transpose(2, 0, 1))
    out = run_op("reverse %x {dimensions = [0, 2]}", "tensor<2x3x4xi32>", x=x)
    np.testing.assert_array_equal(out, x[::-1, :, ::-1])


def test_concatenate():
    a = np.ones((2, 3), np.float32)
    b = np.zeros((1, 3), np.float32)
    c = np.full((2, 3), 2, np.float32)
    out = run_op("concatenate %a, %b, %a {dimension = 0}", "tensor<5x3xf32>", a=a, b=b)
    np.testing.assert_array_equal(out, np.concatenate([a, b, a]))
    out = run_op("concatenate %a, %c {dimension = 1}", "tensor<2x6xf32>", a=a, c=c)
    np.testing.assert_array_equal(out, np.concatenate([a, c], axis=1))


def test_slice_with_strides():
    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    line = "slice %x {start_indices = [1, 0], limit_indices = [6, 9], strides = [2, 3]}"
    np.testing.assert_array_equal(run_op(line, "tensor<3x3xf32>", x=x), x[1:6:2, 0:9:3])
    line = "slice %x {start_indices = [2, 4], limit_indices = [4, 4]}"
    assert run_op(line, "tensor<2x0xf32>", x=x).shape == (2, 0)


def test_pad_interior_and_negative_edges():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    v = np.array(0, np.int32)
    line = ("pad %x, %v {edge_padding_low = [1, -1], edge_padding_high = [0, 2], "
            "interior_padding = [1, 1]}")
    out = run_op(line, "tensor<4x6xi32>", x=x, v=v)
    np.testing.assert_array_equal(out, [
        [0, 0, 0, 0, 0, 0],
        [0, 2, 0, 3, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [0, 5, 0, 6, 0, 0],
    ])
    line = "pad %x, %v {edge_padding_low = [0, -2], edge_padding_high = [-1, -1]}"
    np.testing.assert_array_equal(run_op(line, "tensor<1x0xi32>", x=x, v=v).shape, (1, 0))


@pytest.mark.parametrize("config", [
    ((1, 2), (2, 0), (0, 1)), ((-1, 0), (3, -2), (2, 0)), ((0, -3), (-2, 1), (1, 2)),
])
def test_pad_matches_jax(config):
    lax = jax_lax()
    lo, hi, interior = config
    x = rand((4, 5), seed=7)
    v = np.array(-9.0, np.float32)
    want = np.asarray(lax.pad(x, v, list(zip(lo, hi, interior))))
    line = (f"pad %x, %v {{edge_padding_low = {list(lo)}, edge_padding_high = {list(hi)}, "
            f"interior_padding = {list(interior)}}}")
    out = run_op(line, ty(want.shape, np.float32), x=x, v=v)
    np.testing.assert_array_equal(out, want)


# ----- dot_general and reduce -----------------------------------------------------------------


def test_dot_general_matmul_and_batched():
    a = rand((4, 5), seed=1)
    b = rand((5, 3), seed=2)
    out = run_op("dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}",
                 "tensor<4x3xf32>", a=a, b=b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    q = rand((5, 2, 4, 3), seed=3)  # lhs dims: k, b, m, c
    k = rand((3, 6, 2, 5), seed=4)  # rhs dims: c, n, b, k
    line = ("dot_general %q, %k {lhs_batching_dims = [1], rhs_batching_dims = [2], "
            "lhs_contracting_dims = [0, 3], rhs_contracting_dims = [3, 0]}")
    out = run_op(line, "tensor<2x4x6xf32>", q=q, k=k)
    np.testing.assert_allclose(out, np.einsum("kbmc,cnbk->bmn", q, k), rtol=1e-5, atol=1e-5)
    out = run_op("dot_general %a, %a {}", "tensor<4x5x4x5xf32>", a=a)  # outer product
    np.testing.assert_allclose(out, np.einsum("ij,kl->ijkl", a, a), rtol=1e-6)


def test_dot_general_result_dtype():
    a = rand((4, 8), BF16, seed=1)
    b = rand((8, 2), BF16, seed=2)
    dims = "{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}"
    out = run_op(f"dot_general %a, %b {dims}", "tensor<4x2xf32>", a=a, b=b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6)
    i = np.full((2, 64), 100, np.int8)
    j = np.full((64, 2), 100, np.int8)
    out = run_op(f"dot_general %i, %j {dims}", "tensor<2x2xi32>", i=i, j=j)
    np.testing.assert_array_equal(out, np.full((2, 2), 640000))
    out = run_op(f"dot_general %i, %j {dims}", "tensor<2x2xi8>", i=i, j=j)
    np.testing.assert_array_equal(out, np.full((2, 2), np.int32(640000).astype(np.int8)))


def test_dot_general_matches_jax():
    lax = jax_lax()
    lhs = rand((3, 4, 5, 6), seed=8)
    rhs = rand((6, 3, 7, 4), seed=9)
    dims = (((3, 1), (0, 3)), ((0,), (1,)))
    want = np.asarray(lax.dot_general(lhs, rhs, dims))
    line = ("dot_general %l, %r {lhs_batching_dims = [0], rhs_batching_dims = [1], "
            "lhs_contracting_dims = [3, 1], rhs_contracting_dims = [0, 3]}")
    out = run_op(line, ty(want.shape, np.float32), l=lhs, r=rhs)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


REDUCE_CASES = [
    ("add", np.sum, 0.0), ("multiply", np.prod, 1.0), ("maximum", np.max, -np.inf),
    ("minimum", np.min, np.inf),
]


@pytest.mark.parametrize(("kind", "fn", "init"), REDUCE_CASES, ids=[c[0] for c in REDUCE_CASES])
def test_reduce_kinds(kind, fn, init):
    x = rand((3, 4, 5), seed=2, lo=0.5, hi=1.5)
    v = np.array(init, np.float32)
    out = run_op(f"reduce %x, %v {{dimensions = [0, 2], kind = {kind}}}", "tensor<4xf32>", x=x, v=v)
    np.testing.assert_allclose(out, fn(x, axis=(0, 2)), rtol=1e-5)


def test_reduce_combines_init_once_and_handles_empty_dims():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    ten = np.array(10, np.int32)
    out = run_op("reduce %x, %v {dimensions = [1], kind = add}", "tensor<2xi32>", x=x, v=ten)
    np.testing.assert_array_equal(out, [13, 22])
    e = np.zeros((0, 3), np.float32)
    ninf = np.array(-np.inf, np.float32)
    out = run_op("reduce %e, %v {dimensions = [0], kind = maximum}", "tensor<3xf32>", e=e, v=ninf)
    np.testing.assert_array_equal(out, [-np.inf] * 3)
    out = run_op("reduce %x, %v {dimensions = [], kind = add}", "tensor<2x3xi32>", x=x, v=ten)
    np.testing.assert_array_equal(out, x + 10)
    big = np.full((4,), 2**30, np.int32)
    zero = np.array(0, np.int32)
    out = run_op("reduce %b, %v {dimensions = [0], kind = add}", "tensor<i32>", b=big, v=zero)
    assert out == 0  # wraps in i32, no widening


def test_reduce_logical_and_bitwise():
    p = np.array([[True, False], [True, True]])
    t = np.array(True)
    f = np.array(False)
    np.testing.assert_array_equal(
        run_op("reduce %p, %t {dimensions = [1], kind = and}", "tensor<2xi1>", p=p, t=t),
        [False, True])
    np.testing.assert_array_equal(
        run_op("reduce %p, %f {dimensions = [0], kind = or}", "tensor<2xi1>", p=p, f=f),
        [True, True])
    i = np.array([0b1100, 0b1010], np.int32)
    ones = np.array(-1, np.int32)
    assert run_op("reduce %i, %o {dimensions = [0], kind = and}", "tensor<i32>", i=i, o=ones) == 8


def test_reduce_bf16_accumulates_in_f32():
    x = np.full((1024,), 1.0, BF16)
    z = np.array(0.0, BF16)
    out = run_op("reduce %x, %z {dimensions = [0], kind = add}", "tensor<bf16>", x=x, z=z)
    assert out.dtype == BF16 and float(out) == 1024.0  # a bf16 accumulator stalls at 256


def test_reduce_matches_jax():
    lax = jax_lax()
    x = rand((4, 6, 5), seed=11)
    for kind, fn, init in [("add", lax.add, 0.5), ("maximum", lax.max, -2.0),
                           ("minimum", lax.min, 0.25)]:
        v = np.array(init, np.float32)
        want = np.asarray(lax.reduce(x, v, fn, (1,)))
        out = run_op(f"reduce %x, %v {{dimensions = [1], kind = {kind}}}", "tensor<4x5xf32>",
                     x=x, v=v)
        np.testing.assert_allclose(out, want, rtol=1e-5, err_msg=kind)


# ----- gather ---------------------------------------------------------------------------------


def test_gather_embedding_lookup_with_clamping():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[2, 0], [3, 9]], np.int32)  # 9 is clamped to 3; -1 would clamp to 0
    line = ("gather %t, %i {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], "
            "index_vector_dim = 2, slice_sizes = [1, 3]}")
    out = run_op(line, "tensor<2x2x3xf32>", t=table, i=ids)
    np.testing.assert_array_equal(out, table[np.clip(ids, 0, 3)])


def test_gather_window_clamps_to_fit_the_operand():
    x = np.arange(10, dtype=np.int32)
    starts = np.array([[-5], [3], [8]], np.int32)
    line = ("gather %x, %s {offset_dims = [1], start_index_map = [0], index_vector_dim = 1, "
            "slice_sizes = [4]}")
    out = run_op(line, "tensor<3x4xi32>", x=x, s=starts)
    np.testing.assert_array_equal(out, [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]])


def test_gather_index_vector_dim_in_the_middle():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    idx = np.array([[[1, 2], [3, 0]], [[0, 4], [2, 1]]], np.int32)  # dims: batch, ivd, batch
    line = ("gather %x, %i {offset_dims = [], collapsed_slice_dims = [0, 1], "
            "start_index_map = [1, 0], index_vector_dim = 1, slice_sizes = [1, 1]}")
    out = run_op(line, "tensor<2x2xf32>", x=x, i=idx)
    # index vector (a, b) at [p, :, q] reads x[b, a]
    want = np.array([[x[idx[p, 1, q], idx[p, 0, q]] for q in range(2)] for p in range(2)])
    np.testing.assert_array_equal(out, want)


GATHER_CASES = [
    # operand shape, indices shape, offset_dims, collapsed, start_index_map, slice_sizes,
    # operand_batching_dims, start_indices_batching_dims
    ((5, 7), (3, 1), (1,), (0,), (0,), (1, 7), (), ()),
    ((5, 7, 3), (2, 4, 2), (2, 3, 4), (), (2, 0), (2, 7, 2), (), ()),
    ((6, 5, 4), (3, 2), (1,), (0, 2), (2, 0), (1, 3, 1), (), ()),
    ((3, 8, 5), (3, 4, 1), (2,), (1,), (1,), (1, 1, 5), (0,), (0,)),
    ((8, 3, 2, 5), (4, 2, 3, 1), (3,), (0,), (0,), (1, 1, 1, 5), (1, 2), (2, 1)),
    ((3, 5, 4), (3, 2, 1), (2, 3), (), (2,), (1, 5, 2), (0,), (0,)),
    ((4, 5), (3, 0), (1, 2), (), (), (2, 3), (), ()),
]


@pytest.mark.parametrize("case", GATHER_CASES)
def test_gather_matches_jax(case):
    lax = jax_lax()
    shape, ishape, offset, collapsed, smap, sizes, obatch, ibatch = case
    x = rand(shape, seed=12)
    idx = rand(ishape, np.int32, seed=13, lo=-2, hi=max(shape) + 2)
    dnums = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed,
                                       start_index_map=smap, operand_batching_dims=obatch,
                                       start_indices_batching_dims=ibatch)
    want = np.asarray(lax.gather(x, idx, dnums, sizes, mode=lax.GatherScatterMode.CLIP))
    line = (f"gather %x, %i {{offset_dims = {list(offset)}, collapsed_slice_dims = "
            f"{list(collapsed)}, operand_batching_dims = {list(obatch)}, "
            f"start_indices_batching_dims = {list(ibatch)}, start_index_map = {list(smap)}, "
            f"index_vector_dim = {len(ishape) - 1}, slice_sizes = {list(sizes)}}}")
    out = run_op(line, ty(want.shape, np.float32), x=x, i=idx)
    np.testing.assert_array_equal(out, want)


# ----- scatter --------------------------------------------------------------------------------

SCATTER_LINE = ("scatter %x, %i, %u {{update_window_dims = [1], inserted_window_dims = [0], "
                "scatter_dims_to_operand_dims = [0], index_vector_dim = 1, kind = {kind}}}")


def test_scatter_kinds_with_duplicate_indices():
    x = np.ones((4, 2), np.float32)
    idx = np.array([[1], [3], [1]], np.int32)
    u = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    t = "tensor<4x2xf32>"
    out = run_op(SCATTER_LINE.format(kind="add"), t, x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [[1, 1], [7, 9], [1, 1], [4, 5]])
    out = run_op(SCATTER_LINE.format(kind="multiply"), t, x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [[1, 1], [5, 12], [1, 1], [3, 4]])
    out = run_op(SCATTER_LINE.format(kind="maximum"), t, x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [[1, 1], [5, 6], [1, 1], [3, 4]])
    out = run_op(SCATTER_LINE.format(kind="minimum"), t, x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [[1, 1], [1, 1], [1, 1], [1, 1]])
    idx = np.array([[2], [0], [3]], np.int32)
    out = run_op(SCATTER_LINE.format(kind="replace"), t, x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [[3, 4], [1, 1], [1, 2], [5, 6]])
    np.testing.assert_array_equal(x, np.ones((4, 2)))  # the operand is not written


def test_scatter_skips_out_of_bounds_windows():
    x = np.zeros(6, np.int32)
    idx = np.array([[0], [4], [5], [-1], [2]], np.int32)
    u = np.array([[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]], np.int32)
    line = ("scatter %x, %i, %u {update_window_dims = [1], scatter_dims_to_operand_dims = [0], "
            "index_vector_dim = 1, kind = add}")
    out = run_op(line, "tensor<6xi32>", x=x, i=idx, u=u)
    np.testing.assert_array_equal(out, [1, 1, 5, 5, 2, 2])  # windows at 5 and -1 do not fit


def test_scatter_into_a_scalar_combines_every_update():
    x = np.array(1.0, np.float32)
    idx = np.zeros((3, 0), np.int32)
    u = np.array([2.0, 3.0, 4.0], np.float32)
    line = ("scatter %x, %i, %u {{update_window_dims = [], scatter_dims_to_operand_dims = [], "
            "index_vector_dim = 1, kind = {kind}}}")
    assert run_op(line.format(kind="add"), "tensor<f32>", x=x, i=idx, u=u) == 10.0
    assert run_op(line.format(kind="maximum"), "tensor<f32>", x=x, i=idx, u=u) == 4.0


def test_scatter_bf16_add():
    x = np.zeros((2, 2), BF16)
    idx = np.array([[0], [0]], np.int32)
    u = np.array([[1.5, 2], [0.5, 3]], BF16)
    out = run_op(SCATTER_LINE.format(kind="add"), "tensor<2x2xbf16>", x=x, i=idx, u=u)
    assert out.dtype == BF16 and out.astype(np.float32).tolist() == [[2, 5], [0, 0]]


SCATTER_CASES = [
    # operand, indices, updates, update_window_dims, inserted, sdod, input_batching,
    # scatter_indices_batching
    ((6, 4), (5, 1), (5, 4), (1,), (0,), (0,), (), ()),
    ((6, 5, 4), (3, 2), (3, 2, 3), (1, 2), (1,), (1, 0), (), ()),
    ((5, 6), (2, 3, 2), (2, 3), (), (0, 1), (0, 1), (), ()),
    ((3, 8, 5), (3, 4, 1), (3, 4, 5), (2,), (1,), (1,), (0,), (0,)),
    ((4, 7), (2, 4, 1), (2, 4, 3), (2,), (), (1,), (0,), (1,)),
    ((6, 5), (4, 1), (4, 3), (1,), (0,), (0,), (), ()),
    ((4, 3), (2, 0), (2, 4, 3), (1, 2), (), (), (), ()),
]


@pytest.mark.parametrize("kind", ["add", "maximum", "minimum", "multiply", "replace"])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_scatter_matches_jax(case, kind):
    lax = jax_lax()
    shape, ishape, ushape, window, inserted, sdod, ibatch, sibatch = case
    x = rand(shape, seed=14)
    idx = rand(ishape, np.int32, seed=15, lo=-1, hi=max(shape) + 1)
    if kind == "replace":  # with duplicates the winner is unspecified: make indices unique
        if ishape[-1] == 0:
            pytest.skip("every update replaces the same window: no defined winner")
        flat = idx.reshape(-1, ishape[-1])
        flat[:] = np.arange(flat.shape[0])[:, None] % min(shape)
    u = rand(ushape, seed=16)
    dnums = lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=inserted,
                                        scatter_dims_to_operand_dims=sdod,
                                        operand_batching_dims=ibatch,
                                        scatter_indices_batching_dims=sibatch)
    fn = {"add": lax.scatter_add, "maximum": lax.scatter_max, "minimum": lax.scatter_min,
          "multiply": lax.scatter_mul, "replace": lax.scatter}[kind]
    want = np.asarray(fn(x, idx, u, dnums, mode=lax.GatherScatterMode.FILL_OR_DROP))
    line = (f"scatter %x, %i, %u {{update_window_dims = {list(window)}, inserted_window_dims = "
            f"{list(inserted)}, input_batching_dims = {list(ibatch)}, "
            f"scatter_indices_batching_dims = {list(sibatch)}, scatter_dims_to_operand_dims = "
            f"{list(sdod)}, index_vector_dim = {len(ishape) - 1}, kind = {kind}}}")
    out = run_op(line, ty(shape, np.float32), x=x, i=idx, u=u)
    np.testing.assert_allclose(out, want, rtol=1e-6)


# ----- calls, sharding ops and collectives ----------------------------------------------------


def test_call_into_private_functions_with_several_results():
    text = """
func private @sum_diff(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = add %a, %b : tensor<3xf32>
  %1 = subtract %a, %b : tensor<3xf32>
  return %0, %1
}
func private @twice(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = add %a, %a : tensor<3xf32>
  return %0
}
func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %s, %d = call %x, %y {callee = @sum_diff} : tensor<3xf32>, tensor<3xf32>
  %t = call %s {callee = @twice} : tensor<3xf32>
  %u = call %t {callee = @twice} : tensor<3xf32>
  return %u, %d
}
"""
    x = np.array([1, 2, 3], np.float32)
    y = np.array([10, 20, 30], np.float32)
    u, d = run_text(text, x, y)
    np.testing.assert_array_equal(u, 4 * (x + y))
    np.testing.assert_array_equal(d, x - y)


def test_sharding_ops_and_collectives_are_identity_on_the_global_value():
    text = MESH + """
func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = sharding_constraint %x : tensor<4x4xf32, <@mesh, [{"x"}, {}]>>
  sharding_group %0 {group_id = 0}
  %1 = propagation_barrier %0 {allowed_direction = FORWARD} : tensor<4x4xf32>
  %2 = reshard %1 : tensor<4x4xf32, <@mesh, [{"x"}, {"y"}]>>
  %3 = all_gather %2 {gathering_axes = [[], ["y"]]} : tensor<4x4xf32, <@mesh, [{"x"}, {}]>>
  %4 = all_slice %3 {slicing_axes = [[], ["y"]]} : tensor<4x4xf32, <@mesh, [{"x"}, {"y"}]>>
  %5 = all_to_all %4 {params = [{"x"}: 0->1]}
       : tensor<4x4xf32, <@mesh, [{}, {"y", "x"}]>>
  %6 = collective_permute %5 : tensor<4x4xf32, <@mesh, [{}, {"x", "y"}]>>
  %7 = dot_general %6, %6 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
       : tensor<4x4xf32, <@mesh, [{}, {}], unreduced={"x", "y"}>>
  %8 = all_reduce %7 {reduction_axes = ["x"]} : tensor<4x4xf32, <@mesh, [{}, {}], unreduced={"y"}>>
  %9 = reduce_scatter %8 {scatter_axes = [["y"], []]} : tensor<4x4xf32, <@mesh, [{"y"}, {}]>>
  return %6, %9
}
"""
    x = rand((4, 4), seed=17)
    a, b = run_text(text, x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_allclose(b, x @ x, rtol=1e-6)
    assert a is not x  # a returned input is copied for the caller


def test_mlp_example_matches_numpy():
    module = parse_module((ROOT / "examples" / "mlp.mlir").read_text(), "mlp.mlir")
    x, w1, w2 = rand((16, 64), seed=1), rand((64, 256), seed=2), rand((256, 64), seed=3)
    (out,) = run_reference(module, {"x": x, "w1": w1, "w2": w2})
    np.testing.assert_allclose(out, np.maximum(x @ w1, 0) @ w2, rtol=1e-5, atol=1e-4)
    (again,) = Interpreter(module).run([x, w1, w2])  # positional inputs, same answer
    np.testing.assert_array_equal(again, out)


def test_values_used_after_many_ops_survive_freeing():
    text = """
func @main(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  %0 = add %x, %x : tensor<2xi32>
  %1 = multiply %0, %0 : tensor<2xi32>
  %unused = negate %1 : tensor<2xi32>
  %2 = add %1, %0 : tensor<2xi32>
  %3 = add %2, %x : tensor<2xi32>
  return %3, %0
}
"""
    x = np.array([1, 2], np.int32)
    a, b = run_text(text, x)
    np.testing.assert_array_equal(a, [4 + 2 + 1, 16 + 4 + 2])
    np.testing.assert_array_equal(b, [2, 4])


# ----- errors ---------------------------------------------------------------------------------


@pytest.fixture
def mlp():
    return parse_module((ROOT / "examples" / "mlp.mlir").read_text(), "mlp.mlir")


def test_wrong_input_count_names_the_arguments(mlp):
    with pytest.raises(ExecutionError, match=r"@main takes 3 inputs \(%x, %w1, %w2\), got 2"):
        run_reference(mlp, [np.zeros((16, 64), np.float32)] * 2)


def test_wrong_shape_names_the_argument(mlp):
    x, w1, w2 = (np.zeros(s, np.float32) for s in [(16, 64), (64, 256), (256, 64)])
    with pytest.raises(ExecutionError, match=r"argument %w1 \(#1\).*expects shape \[64, 256\]"):
        run_reference(mlp, [x, w1.T, w2])


def test_wrong_dtype_names_the_argument(mlp):
    x, w1, w2 = (np.zeros(s, np.float32) for s in [(16, 64), (64, 256), (256, 64)])
    with pytest.raises(ExecutionError, match=r"argument %w2 \(#2\).*element type f32.*float64"):
        run_reference(mlp, {"x": x, "w1": w1, "w2": w2.astype(np.float64)})


def test_wrong_or_missing_names(mlp):
    x, w1, w2 = (np.zeros(s, np.float32) for s in [(16, 64), (64, 256), (256, 64)])
    with pytest.raises(ExecutionError, match="no argument named %w3"):
        run_reference(mlp, {"x": x, "w1": w1, "w3": w2})
    with pytest.raises(ExecutionError, match="missing input for argument %w2"):
        run_reference(mlp, {"x": x, "%w1": w1})


def test_unknown_function_and_custom_call(mlp):
    with pytest.raises(ExecutionError, match=r"no function @forward.*@main"):
        run_reference(mlp, [], function="forward")
    text = """
func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = custom_call %x {call_target_name = "my_op"} : tensor<2xf32>
  return %0
}
"""
    with pytest.raises(ExecutionError, match='custom_call "my_op"') as info:
        run_text(text, np.zeros(2, np.float32))
    assert info.value.loc is not None and info.value.loc.line == 3
