"""Element-wise ops, and the other ops written in the plain `stablehlo.x %a, ... : types` syntax.

    %0 = stablehlo.add %arg0, %arg1 : tensor<8xf32>          <-> add
    %1 = stablehlo.compare  GT, %0, %c : (...) -> tensor<8xi1> <-> compare {GT}
    %2 = chlo.erf %1 : tensor<8xf32> -> tensor<8xf32>         <-> erf

The plain syntax (`SIMPLE_OP` in grammar.lark) also spells `reshape`, `dynamic_update_slice`
and `optimization_barrier`; their families own their generic forms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword
from shardc.ir.core import Value
from shardc.stablehlo.attributes import enum_word
from shardc.stablehlo.import_table import (
    Props,
    generic,
    plain,
    pretty_form,
    read_rule,
)
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder

UNARY = {
    "abs", "cbrt", "ceil", "convert", "cosine", "exponential", "exponential_minus_one", "floor",
    "is_finite", "log", "log_plus_one", "logistic", "negate", "not", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh",
}
BINARY = {
    "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "subtract", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
}
CHLO = {"erf", "square", "tan"}

# The generic form of an element-wise op is the native op of its short name.
generic(
    *sorted(f"stablehlo.{n}" for n in UNARY | BINARY | {"select", "clamp"}),
    *sorted(f"chlo.{n}" for n in CHLO),
    "stablehlo.optimization_barrier",
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
        if short == "optimization_barrier":
            if len(toks) != len(operands):
                raise ValueError(f"lists {len(toks)} types for {len(operands)} operands")
            for i, (tok, v) in enumerate(zip(toks, operands)):
                fb.check_type(tok, v, i)
            return short, {}, list(toks), None
        if short == "select" and len(toks) == 2 and len(operands) == 3:
            fb.check_type(toks[0], operands[0], 0)
            fb.check_type(toks[1], operands[1], 1)
            fb.check_type(toks[1], operands[2], 2)
        elif len(toks) == 1:
            for i, v in enumerate(operands):
                fb.check_type(toks[0], v, i)
    return short, {}, fb.results_of(rec, operands), None


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
