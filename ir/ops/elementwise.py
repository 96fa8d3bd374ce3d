"""Element-wise ops (StableHLO semantics: operands of one shape, no implicit broadcasting).

%1 = tanh %0 : tensor<8x16xf32>
%2 = add %0, %1 : tensor<8x16xf32>
%3 = compare %0, %1 {comparison_direction = GT} : tensor<8x16xi1>
%4 = select %3, %0, %1 : tensor<8x16xf32>
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import ELEMENTWISE, OpDef, op_error, opt, register, req
from shardc.ir.types import COMPLEX_PARTS, TensorType, is_float

UNARY = (
    "abs",
    "negate",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "sqrt",
    "rsqrt",
    "cbrt",
    "tanh",
    "logistic",
    "sine",
    "cosine",
    "tan",
    "floor",
    "ceil",
    "round_nearest_even",
    "round_nearest_afz",
    "sign",
    "not",
    "erf",
    "erf_inv",
    "square",
    "reciprocal",
    "popcnt",
    "count_leading_zeros",
)
BINARY = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "power",
    "atan2",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
)
# The special functions JAX writes as `chlo.*` ops (jnp.sinh, jnp.arcsin, lax.lgamma,
# lax.digamma, lax.erfc, lax.bessel_i1e; lax.nextafter, lax.zeta, lax.polygamma): floats in,
# the same type out. Apart from UNARY/BINARY, whose ops StableHLO has and Shardy has rules for.
SPECIAL_UNARY = ("sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "lgamma",
                 "digamma", "erfc", "bessel_i1e")
SPECIAL_BINARY = ("next_after", "zeta", "polygamma")
DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")


def _same_shape(op: Operation, types: list[TensorType]) -> TensorType:
    first = types[0]
    for i, t in enumerate(types[1:], start=1):
        if t.shape != first.shape:
            raise op_error(
                op,
                f"operand {i} has shape {list(t.shape)} but operand 0 has {list(first.shape)}; "
                "element-wise ops need equal shapes (use broadcast_in_dim first)",
            )
    return first


def _infer_same(op: Operation) -> list[TensorType]:
    types = [v.type for v in op.operands]
    first = _same_shape(op, types)
    for i, t in enumerate(types[1:], start=1):
        if t.dtype != first.dtype:
            raise op_error(
                op, f"operand {i} has element type {t.dtype}, operand 0 has {first.dtype}"
            )
    return [TensorType(first.shape, first.dtype)]


def _infer_float(op: Operation) -> list[TensorType]:
    out = _infer_same(op)
    if not is_float(out[0].dtype):
        raise op_error(op, f"takes floats, got {out[0].dtype}")
    return out


def _infer_compare(op: Operation) -> list[TensorType]:
    t = _infer_same(op)[0]
    return [TensorType(t.shape, "i1")]


def _infer_convert(op: Operation) -> list[TensorType] | None:
    t = op.operand(0).type
    if op.results and op.results[0].type.shape != t.shape:
        raise op_error(
            op, f"result shape {list(op.results[0].type.shape)} != operand shape {list(t.shape)}"
        )
    return None


def _infer_select(op: Operation) -> list[TensorType]:
    pred, a, b = (v.type for v in op.operands)
    if pred.dtype != "i1":
        raise op_error(op, f"predicate must have element type i1, got {pred.dtype}")
    if pred.shape not in ((), a.shape):
        raise op_error(op, "predicate must be a scalar or have the shape of the other operands")
    _same_shape(op, [a, b])
    if a.dtype != b.dtype:
        raise op_error(op, f"operands 1 and 2 have element types {a.dtype} and {b.dtype}")
    return [TensorType(a.shape, a.dtype)]


def _infer_clamp(op: Operation) -> list[TensorType]:
    lo, x, hi = (v.type for v in op.operands)
    for name, t in (("min", lo), ("max", hi)):
        if t.shape not in ((), x.shape):
            raise op_error(op, f"{name} must be a scalar or have the operand's shape")
        if t.dtype != x.dtype:
            raise op_error(op, f"{name} has element type {t.dtype}, operand has {x.dtype}")
    return [TensorType(x.shape, x.dtype)]


# StableHLO's element type constraints: these ops take integers (no i1), or integers and i1.
_INTEGER_OPS = ("popcnt", "count_leading_zeros", "shift_left", "shift_right_arithmetic",
                "shift_right_logical")
_LOGICAL_OPS = ("not", "and", "or", "xor")


def _infer_integer(op: Operation) -> list[TensorType]:
    out = _infer_same(op)
    dtype = out[0].dtype
    is_int = dtype.startswith(("i", "ui"))
    if op.name in _INTEGER_OPS and (not is_int or dtype == "i1"):
        raise op_error(op, f"takes integers, got {dtype}")
    if op.name in _LOGICAL_OPS and not is_int:
        raise op_error(op, f"takes integers or i1, got {dtype}")
    return out


def _infer_abs(op: Operation) -> list[TensorType]:
    """abs of a complex number is its real modulus: complex<f32> -> f32 (StableHLO)."""
    t = op.operand(0).type
    return [TensorType(t.shape, COMPLEX_PARTS.get(t.dtype, t.dtype))]


for _name in UNARY:
    infer = _infer_integer if _name in _INTEGER_OPS + _LOGICAL_OPS else _infer_same
    infer = _infer_abs if _name == "abs" else infer
    register(OpDef(_name, 1, 1, {}, infer, traits=frozenset({ELEMENTWISE})))
for _name in BINARY:
    infer = _infer_integer if _name in _INTEGER_OPS + _LOGICAL_OPS else _infer_same
    register(OpDef(_name, 2, 1, {}, infer, traits=frozenset({ELEMENTWISE})))
for _arity, _names in ((1, SPECIAL_UNARY), (2, SPECIAL_BINARY)):
    for _name in _names:
        register(OpDef(_name, _arity, 1, {}, _infer_float, traits=frozenset({ELEMENTWISE})))

register(OpDef("convert", 1, 1, {}, _infer_convert, traits=frozenset({ELEMENTWISE})))
register(
    OpDef(
        "is_finite",
        1,
        1,
        {},
        lambda op: [TensorType(op.operand(0).type.shape, "i1")],
        traits=frozenset({ELEMENTWISE}),
    )
)
register(
    OpDef(
        "compare",
        2,
        1,
        {
            "comparison_direction": req("keyword", *DIRECTIONS),
            "compare_type": opt("keyword", None, "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
        },
        _infer_compare,
        traits=frozenset({ELEMENTWISE}),
    )
)
register(OpDef("select", 3, 1, {}, _infer_select, traits=frozenset({ELEMENTWISE})))
register(
    OpDef(
        "reduce_precision",
        1,
        1,
        {"exponent_bits": req("int"), "mantissa_bits": req("int")},
        _infer_same,
        traits=frozenset({ELEMENTWISE}),
    )
)


def _infer_part(op: Operation) -> list[TensorType]:
    t = op.operand(0).type
    if t.dtype not in COMPLEX_PARTS:
        raise op_error(op, f"takes a complex operand, got {t.dtype}")
    return [TensorType(t.shape, COMPLEX_PARTS[t.dtype])]


def _infer_complex(op: Operation) -> list[TensorType]:
    t = _infer_same(op)[0]
    parts = {v: k for k, v in COMPLEX_PARTS.items()}
    if t.dtype not in parts:
        raise op_error(op, f"takes f32 or f64 parts, got {t.dtype}")
    return [TensorType(t.shape, parts[t.dtype])]


for _name in ("real", "imag"):
    register(OpDef(_name, 1, 1, {}, _infer_part, traits=frozenset({ELEMENTWISE})))
register(OpDef("complex", 2, 1, {}, _infer_complex, traits=frozenset({ELEMENTWISE})))
register(OpDef("clamp", 3, 1, {}, _infer_clamp, traits=frozenset({ELEMENTWISE})))
