"""Sorting: sort (with a comparator region) and chlo.top_k.

    %0:2 = "stablehlo.sort"(%arg0, %iota) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, ...): ... stablehlo.return %p : tensor<i1>
    }) : (...) -> (...)          <-> sort {comparator = @main_sort_comparator, dimension = 1}
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<16x32xf32> -> (...)

The comparator is outlined into a private function (outlining.py); it may not capture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.stablehlo.export_table import prints, prints_lines
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.mlir_text import results_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.outlining import no_captures, outline
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@generic("stablehlo.sort")
def _generic_sort(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                  results: list):
    (region,) = rec.regions
    no_captures(region, "comparator")
    results = fb.results_of(rec, operands)
    cmp = outline(fb, region, "sort_comparator")
    attrs: dict[str, Any] = {"comparator": Symbol(cmp.name)}
    if props.get("dimension") is not None:
        attrs["dimension"] = props["dimension"].value
    if props.get("is_stable") is not None:
        attrs["is_stable"] = props["is_stable"].value
    return "sort", attrs, results, None


@read_rule("top_k_op")
def top_k_op(c: list) -> OpRec:
    return OpRec("top_k", c[0], [c[1]], {"k": int(c[2])}, c[3], c[4])


@pretty_form("top_k")
def _top_k(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "top_k", {"k": rec.extra["k"]}, fb.results_of(rec, operands), None


# ----- export ---------------------------------------------------------------------------------


@prints_lines("sort")
def _print_sort(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    cmp = p.function_of(op, "comparator")
    nr = n.region(cmp)
    props = []
    if "dimension" in op.attributes:
        props.append(f"dimension = {op.attributes['dimension']} : i64")
    if "is_stable" in op.attributes:
        props.append(f"is_stable = {'true' if op.attributes['is_stable'] else 'false'}")
    args = ", ".join(n(v) for v in op.operands)
    operand_types = ", ".join(_ty(v.type) for v in op.operands)
    block = ", ".join(f"{nr(a)}: {_ty(a.type)}" for a in cmp.args)
    lines = [f'{indent}{n.group(op)}"stablehlo.sort"({args}) <{{{", ".join(props)}}}> ({{',
             f"{indent}^bb0({block}):"]
    lines += p.body_lines(cmp, nr, indent + "  ", "stablehlo.return")
    lines.append(f"{indent}}}){p.op_attrs(op)} : ({operand_types}) -> {results_text(op)}"
                 + p.tail(op))
    return lines


@prints("top_k", result_names=("values", "indices"))
def _print_top_k(p: Printer, op: Operation, n: Names, args: str) -> str:
    k = op.attributes["k"]
    outs = ", ".join(_ty(r.type) for r in op.results)
    return f"chlo.top_k({args}, k = {k}){p.op_attrs(op)} : {_ty(op.operands[0].type)} -> ({outs})"
