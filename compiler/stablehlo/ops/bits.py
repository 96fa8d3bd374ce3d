"""Ops on the bits of values: bitcast_convert, reduce_precision, rng_bit_generator, and the
token op after_all.

    %0 = stablehlo.bitcast_convert %x : (tensor<4x2xui64>) -> tensor<4x2x2xui32>
    %1 = stablehlo.reduce_precision %x, format = e5m10 : tensor<8xf32>
         <-> reduce_precision {exponent_bits = 5, mantissa_bits = 10}
    %output_state, %output = stablehlo.rng_bit_generator %s, algorithm = DEFAULT
         : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>)
    %2 = stablehlo.after_all %t0, %t1 : !stablehlo.token

`bitcast_convert` and `after_all` are in the plain syntax (elementwise.py reads them); the
generic forms of all four import here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import enum_word
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import Props, generic, plain, pretty_form, read_rule
from shardc.stablehlo.mlir_text import functional_type
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

generic("stablehlo.bitcast_convert", "stablehlo.after_all")(plain)

_FORMAT = re.compile(r"e(\d+)m(\d+)")


# ----- import ---------------------------------------------------------------------------------


@read_rule("reduce_precision_op")
def reduce_precision_op(c: list) -> OpRec:
    return OpRec("reduce_precision", c[0], [c[1]], {"format": c[2]}, c[3], c[4])


@pretty_form("reduce_precision")
def _reduce_precision(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    m = _FORMAT.fullmatch(str(rec.extra["format"]))
    if m is None:
        raise ValueError(f"format '{rec.extra['format']}' must be eXmY (exponent and mantissa "
                         "bits)")
    attrs = {"exponent_bits": int(m.group(1)), "mantissa_bits": int(m.group(2))}
    return "reduce_precision", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.reduce_precision")
def _generic_reduce_precision(fb: FunctionBuilder, rec: OpRec, operands: list[Value],
                              props: Props, results: list):
    attrs = {key: props.need(key).value for key in ("exponent_bits", "mantissa_bits")}
    return "reduce_precision", attrs, results, None


@read_rule("rng_op")
def rng_op(c: list) -> OpRec:
    return OpRec("rng", c[0], [c[1]], {"algorithm": str(c[2])}, c[3], c[4])


@pretty_form("rng")
def _rng(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs = {"rng_algorithm": Keyword(rec.extra["algorithm"])}
    return "rng_bit_generator", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.rng_bit_generator")
def _generic_rng(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                 results: list):
    attrs = {"rng_algorithm": Keyword(enum_word(props.need("rng_algorithm")))}
    return "rng_bit_generator", attrs, results, None


# ----- export ---------------------------------------------------------------------------------


@prints("bitcast_convert")
def _print_bitcast_convert(p: Printer, op: Operation, n: Names, args: str) -> str:
    return f"stablehlo.bitcast_convert {args}{p.op_attrs(op)} : {functional_type(op)}"


@prints("reduce_precision")
def _print_reduce_precision(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    form = f"e{at['exponent_bits']}m{at['mantissa_bits']}"
    return (f"stablehlo.reduce_precision {args}, format = {form}{p.op_attrs(op)} : "
            f"{_ty(op.results[0].type)}")


@prints("rng_bit_generator", result_names=("output_state", "output"))
def _print_rng(p: Printer, op: Operation, n: Names, args: str) -> str:
    return (f"stablehlo.rng_bit_generator {args}, algorithm = "
            f"{op.attributes['rng_algorithm'].word}{p.op_attrs(op)} : {functional_type(op)}")
