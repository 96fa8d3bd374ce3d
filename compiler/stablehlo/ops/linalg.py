"""Linear algebra and transforms: dot, cholesky, triangular_solve, fft, batch norm.

    %0 = stablehlo.dot %a, %b, precision = [DEFAULT, DEFAULT] : (...) -> tensor<8x16xf32>
    %1 = stablehlo.cholesky %a, lower = true : tensor<2x8x8xf32>      <-> cholesky {lower}
    %2 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true,
         transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : ...
    %3 = stablehlo.fft %x, type = RFFT, length = [64] : (...) -> tensor<8x33xcomplex<f32>>
    %4 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) <{epsilon = 1.000000e-03 : f32,
         feature_index = 2 : i64}> : (...) -> tensor<4x8x16x32xf32>
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import enum_word, round_to_dtype
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.literals import format_float
from shardc.stablehlo.mlir_text import functional_type, int_list
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

BATCH_NORMS = ("batch_norm_inference", "batch_norm_training", "batch_norm_grad")


# ----- import ---------------------------------------------------------------------------------


@read_rule("plain_dot_op")
def plain_dot_op(c: list) -> OpRec:
    extra = {"precision": c[3][1]} if c[3] is not None else {}
    return OpRec("dot", c[0], [c[1], c[2]], extra, c[4], c[5])


@pretty_form("dot")
def _dot(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs: dict[str, Any] = {}
    if "precision" in rec.extra:
        attrs["precision"] = tuple(Keyword(w) for w in rec.extra["precision"])
    return "dot", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.dot")
def _generic_dot(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                 results: list):
    attrs: dict[str, Any] = {}
    if props.get("precision_config") is not None:
        attrs["precision"] = tuple(Keyword(enum_word(a)) for a in props["precision_config"].value)
    return "dot", attrs, results, None


@read_rule("cholesky_op")
def cholesky_op(c: list) -> OpRec:
    return OpRec("cholesky", c[0], [c[1]], {"lower": c[2]}, c[3], c[4])


@pretty_form("cholesky")
def _cholesky(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs = {} if rec.extra["lower"] is None else {"lower": str(rec.extra["lower"]) == "true"}
    results = fb.results_of(rec, operands)
    if rec.sig is not None and rec.sig[0] == "plain":
        fb.check_type(results[0], operands[0], 0)
    return "cholesky", attrs, results, None


@generic("stablehlo.cholesky")
def _generic_cholesky(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                      results: list):
    lower = props.get("lower")
    return "cholesky", {} if lower is None else {"lower": lower.value}, results, None


@generic("stablehlo.triangular_solve")
def _generic_triangular_solve(fb: FunctionBuilder, rec: OpRec, operands: list[Value],
                              props: Props, results: list):
    attrs: dict[str, Any] = {
        key: props.need(key).value for key in ("left_side", "lower", "unit_diagonal")
    }
    attrs["transpose_a"] = Keyword(enum_word(props.need("transpose_a")))
    return "triangular_solve", attrs, results, None


@read_rule("fft_op")
def fft_op(c: list) -> OpRec:
    return OpRec("fft", c[0], [c[1]], {"type": str(c[2]), "length": c[3]}, c[4], c[5])


@pretty_form("fft")
def _fft(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs = {"fft_type": Keyword(rec.extra["type"]), "fft_length": rec.extra["length"]}
    return "fft", attrs, fb.results_of(rec, operands), None


@generic(*(f"stablehlo.{name}" for name in BATCH_NORMS))
def _generic_batch_norm(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                        results: list):
    epsilon = props.need("epsilon")
    value = round_to_dtype(float(fb.b.text[epsilon.start : epsilon.end].split(":")[0]), "f32")
    attrs = {"epsilon": value, "feature_index": props.need("feature_index").value}
    return rec.name.partition(".")[2], attrs, results, None


# ----- export ---------------------------------------------------------------------------------


@prints("dot")
def _print_dot(p: Printer, op: Operation, n: Names, args: str) -> str:
    precision = op.attributes.get("precision")
    tail = f", precision = [{', '.join(str(w) for w in precision)}]" if precision else ""
    return f"stablehlo.dot {args}{tail}{p.op_attrs(op)} : {functional_type(op)}"


@prints("cholesky")
def _print_cholesky(p: Printer, op: Operation, n: Names, args: str) -> str:
    lower = op.attributes.get("lower")
    tail = "" if lower is None else f", lower = {'true' if lower else 'false'}"
    return f"stablehlo.cholesky {args}{tail}{p.op_attrs(op)} : {_ty(op.results[0].type)}"


@prints("triangular_solve")
def _print_triangular_solve(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes

    def flag(key: str) -> str:
        return "true" if at[key] else "false"

    props = (f"left_side = {flag('left_side')}, lower = {flag('lower')}, transpose_a = "
             f"#stablehlo<transpose {at['transpose_a'].word}>, unit_diagonal = "
             f"{flag('unit_diagonal')}")
    return (f'"stablehlo.triangular_solve"({args}) <{{{props}}}>{p.op_attrs(op)} : '
            f"{functional_type(op)}")


@prints("fft")
def _print_fft(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    return (f"stablehlo.fft {args}, type = {at['fft_type'].word}, length = "
            f"{int_list(at['fft_length'])}{p.op_attrs(op)} : {functional_type(op)}")


# MLIR's names of the results (OpAsmOpInterface).
RESULT_NAMES = {"batch_norm_inference": None,
                "batch_norm_training": ("output", "batch_mean", "batch_var"),
                "batch_norm_grad": ("grad_operand", "grad_scale", "grad_offset")}


@prints("batch_norm_training", result_names=RESULT_NAMES["batch_norm_training"])
@prints("batch_norm_grad", result_names=RESULT_NAMES["batch_norm_grad"])
@prints("batch_norm_inference")
def _print_batch_norm(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    epsilon = format_float(at["epsilon"], "f32")
    props = f"epsilon = {epsilon} : f32, feature_index = {at['feature_index']} : i64"
    return f'"stablehlo.{op.name}"({args}) <{{{props}}}>{p.op_attrs(op)} : {functional_type(op)}'
