"""Element-wise ops, and the other ops written in the plain `stablehlo.x %a, ... : types` syntax.

    %0 = stablehlo.add %arg0, %arg1 : tensor<8xf32>          <-> add
    %1 = stablehlo.compare GT, %0, %c : (...) -> tensor<8xi1> <-> compare {GT}
    %2 = chlo.erf %1 : tensor<8xf32> -> tensor<8xf32>        <-> erf (also erf_inv, square, tan)

`stablehlo.optimization_barrier {attrs} %a, %b : types` is read and printed here too. The plain
syntax (`SIMPLE_OP` in grammar.lark) also spells `reshape` and `dynamic_update_slice`, whose
generic forms and printers are in shape.py and indexing.py. A native op no family prints is
printed here, as `stablehlo.<name>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.ops import OPS
from shardc.ir.ops.elementwise import SPECIAL_BINARY, SPECIAL_UNARY
from shardc.stablehlo.attributes import enum_word
from shardc.stablehlo.export_table import prints, prints_by_default
from shardc.stablehlo.import_table import (
    Props,
    generic,
    plain,
    pretty_form,
    read_rule,
)
from shardc.stablehlo.mlir_text import ExportError, functional_type
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

UNARY = {
    "abs", "cbrt", "ceil", "convert", "cosine", "exponential", "exponential_minus_one", "floor",
    "is_finite", "log", "log_plus_one", "logistic", "negate", "not", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh", "popcnt",
    "count_leading_zeros", "real", "imag",
}
BINARY = {
    "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "subtract", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
    "complex",
}
CHLO = {"erf", "erf_inv", "square", "tan", *SPECIAL_UNARY, *SPECIAL_BINARY}

# The generic form of an element-wise op is the native op of its short name.
generic(
    *sorted(f"stablehlo.{n}" for n in UNARY | BINARY | {"select", "clamp"}),
    *sorted(f"chlo.{n}" for n in CHLO),
)(plain)


# ----- import ---------------------------------------------------------------------------------


@read_rule("simple_op")
def simple_op(c: list) -> OpRec:
    return OpRec("simple", c[0], c[1] or [], {}, c[2], c[3])


@pretty_form("simple")
def _simple(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    short = rec.name.partition(".")[2]
    if rec.sig is not None and rec.sig[0] == "plain" and rec.sig[2]:
        toks = rec.sig[2]
        if short == "select" and len(toks) == 2 and len(operands) == 3:
            fb.check_type(toks[0], operands[0], 0)
            fb.check_type(toks[1], operands[1], 1)
            fb.check_type(toks[1], operands[2], 2)
        elif len(toks) == 1 and short != "complex":  # complex's type is its result's only
            for i, v in enumerate(operands):
                fb.check_type(toks[0], v, i)
    return short, {}, fb.results_of(rec, operands), None


@read_rule("barrier_op")
def barrier_op(c: list) -> OpRec:
    sig = ("plain", None, c[3]) if c[3] is not None else None
    return OpRec("barrier", c[0], c[2] or [], {}, c[1], sig)


@pretty_form("barrier")
def _barrier(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    toks = rec.sig[2] if rec.sig is not None else []
    if len(toks) != len(operands):
        raise ValueError(f"lists {len(toks)} types for {len(operands)} operands")
    for i, (tok, v) in enumerate(zip(toks, operands)):
        fb.check_type(tok, v, i)
    return "optimization_barrier", {}, list(toks), None


@read_rule("compare_op")
def compare_op(c: list) -> OpRec:
    extra = {"direction": c[1], "type": c[4]}
    return OpRec("compare", c[0], [c[2], c[3]], extra, c[5], c[6])


@pretty_form("compare")
def _compare(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs: dict[str, Any] = {"comparison_direction": Keyword(str(rec.extra["direction"]))}
    if rec.extra["type"] is not None:
        attrs["compare_type"] = Keyword(str(rec.extra["type"]))
    return "compare", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.compare")
def _generic_compare(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                     results: list):
    attrs = {"comparison_direction": Keyword(enum_word(props.need("comparison_direction")))}
    if props.get("compare_type") is not None:
        attrs["compare_type"] = Keyword(enum_word(props["compare_type"]))
    return "compare", attrs, results, None


# ----- export ---------------------------------------------------------------------------------

_CHLO = {"erf", "erf_inv", "square", *SPECIAL_UNARY, *SPECIAL_BINARY}
_NO_STABLEHLO = {"reciprocal"}


@prints("compare")
def _print_compare(p: Printer, op: Operation, n: Names, args: str) -> str:
    direction = op.attributes["comparison_direction"].word
    ctype = op.attributes.get("compare_type")
    tail = f", {ctype.word}" if ctype is not None else ""
    return f"stablehlo.compare {direction}, {args}{tail}{p.op_attrs(op)} : {functional_type(op)}"


@prints(*sorted(_CHLO))
def _print_chlo(p: Printer, op: Operation, n: Names, args: str) -> str:
    types = ", ".join(_ty(v.type) for v in op.operands)  # `T, T -> T` for a binary one
    return f"chlo.{op.name} {args}{p.op_attrs(op)} : {types} -> {_ty(op.results[0].type)}"


@prints("select")
def _print_select(p: Printer, op: Operation, n: Names, args: str) -> str:
    t = {_ty(op.operands[1].type), _ty(op.operands[2].type), _ty(op.results[0].type)}
    sig = (f"{_ty(op.operands[0].type)}, {t.pop()}" if len(t) == 1 else functional_type(op))
    return f"stablehlo.select {args}{p.op_attrs(op)} : {sig}"


@prints("complex")
def _print_complex(p: Printer, op: Operation, n: Names, args: str) -> str:
    """`stablehlo.complex %re, %im : tensor<8xcomplex<f32>>` (the parts' type is implied)."""
    return f"stablehlo.complex {args}{p.op_attrs(op)} : {_ty(op.results[0].type)}"


@prints("partition_id", "replica_id")
def _print_device_id(p: Printer, op: Operation, n: Names, args: str) -> str:
    return f"stablehlo.{op.name}{p.op_attrs(op)} : {_ty(op.results[0].type)}"


@prints("optimization_barrier")
def _print_optimization_barrier(p: Printer, op: Operation, n: Names, args: str) -> str:
    # MLIR's format: the attribute dictionary comes before the operands.
    types = ", ".join(_ty(v.type) for v in op.operands)
    values = f" {args} : {types}" if args else ""
    return f"stablehlo.optimization_barrier{p.op_attrs(op)}{values}"


@prints_by_default
def _print_elementwise(p: Printer, op: Operation, n: Names, args: str) -> str:
    """`stablehlo.<name> %a, %b : type` (one type when operands and result agree)."""
    name = op.name
    if name not in OPS or name in _NO_STABLEHLO:
        raise ExportError(f"'{name}' has no StableHLO equivalent to export", op.loc)
    results = op.results
    sig = _ty(results[0].type) if len(results) == 1 else None
    if sig is None or any(_ty(v.type) != sig for v in op.operands):
        types = {_ty(v.type) for v in op.operands} | {_ty(r.type) for r in results}
        sig = types.pop() if len(types) == 1 else functional_type(op)
    return f"stablehlo.{name} {args}{p.op_attrs(op)} : {sig}"
