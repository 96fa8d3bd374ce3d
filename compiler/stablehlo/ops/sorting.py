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
from shardc.ir.core import Value
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.outlining import no_captures, outline
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder


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
