"""Control flow: while and case, whose regions are outlined into private functions.

    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<8xf32>
      cond { ... stablehlo.return %p : tensor<i1> } do { ... stablehlo.return %i, %x : ... }
        <-> %0, %1 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond} : ...
    %1 = "stablehlo.case"(%idx) ({ ... }, { ... }) : (tensor<i32>) -> tensor<8xf32>
        <-> case %idx {branches = [@main_case_0, @main_case_1]}

`while` passes the union of its two regions' captures to both (`captures = N` trailing
operands), `case` the union over its branches to every branch (outlining.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.stablehlo.export_table import prints_lines
from shardc.stablehlo.import_table import (
    Props,
    SyntaxIssue,
    generic,
    pretty_form,
    read_rule,
)
from shardc.stablehlo.mlir_text import results_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.outlining import outline, shared_captures
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import: while --------------------------------------------------------------------------


@read_rule("while_arg")
def while_arg(c: list) -> tuple:
    return (c[0], c[1])


@read_rule("while_op")
def while_op(c: list) -> OpRec:
    pairs = [x for x in c if isinstance(x, tuple)]
    types, attrs, cond, body = c[-4:]
    if types is not None and len(types) != len(pairs):
        raise SyntaxIssue(f"while lists {len(types)} types for {len(pairs)} operands", c[0])
    types = types or []
    for region in (cond, body):
        if region.args:
            raise SyntaxIssue("the pretty while names its block arguments in '(...)'", c[0])
        region.args = [(name, ty) for (name, _), ty in zip(pairs, types)]
    rec = OpRec("while", c[0], [v for _, v in pairs], {}, attrs, ("plain", None, types))
    rec.regions = [cond, body]
    return rec


@pretty_form("while")
def _while(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    cond_region, body_region = rec.regions
    captures = shared_captures([cond_region, body_region])
    cond = outline(fb, cond_region, "while_cond", captures)
    body = outline(fb, body_region, "while_body", captures)
    operands.extend(fb.scope_value(c, cond_region) for c in captures)
    attrs: dict[str, Any] = {"body": Symbol(body.name), "cond": Symbol(cond.name)}
    if captures:
        attrs["captures"] = len(captures)
    results = list(rec.sig[2]) if rec.sig is not None else []
    if rec.form == "generic":
        results = fb.results_of(rec, operands[: len(operands) - len(captures)])
    return "while", attrs, results, None


@generic("stablehlo.while")
def _generic_while(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                   results: list):
    if len(rec.regions) != 2:
        raise ValueError("needs two regions (cond, body)")
    return _while(fb, rec, operands)


# ----- import: case ---------------------------------------------------------------------------


@generic("stablehlo.case")
def _generic_case(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                  results: list):
    if len(operands) != 1:
        raise ValueError("takes exactly one operand, the branch index")
    results = fb.results_of(rec, operands)
    captures = shared_captures(rec.regions)
    branches = [outline(fb, r, f"case_{i}", captures) for i, r in enumerate(rec.regions)]
    operands.extend(fb.scope_value(c, rec.regions[0]) for c in captures)
    return "case", {"branches": tuple(Symbol(f.name) for f in branches)}, results, None


# ----- export ---------------------------------------------------------------------------------


@prints_lines("while")
def _print_while(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    cond = p.function_of(op, "cond")
    body = p.function_of(op, "body")
    carried = len(op.results)
    inits, captured = op.operands[:carried], op.operands[carried:]
    names = ["iterArg"] * carried
    nc = n.region(cond, names, captured)
    nb = n.region(body, names, captured)
    pairs = ", ".join(f"{nc(a)} = {n(v)}" for a, v in zip(cond.args, inits))
    types = ", ".join(_ty(r.type) for r in op.results)
    attrs = p.op_attrs(op)
    head = f"{indent}{n.group(op)}stablehlo.while({pairs}) : {types}"
    if attrs:
        head += " attributes" + attrs
    lines = [head + p.tail(op), f"{indent}cond {{"]
    lines += p.body_lines(cond, nc, indent + "  ", "stablehlo.return")
    lines.append(f"{indent}}} do {{")
    lines += p.body_lines(body, nb, indent + "  ", "stablehlo.return")
    lines.append(f"{indent}}}")
    return lines


@prints_lines("case")
def _print_case(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    index, captured = op.operands[0], op.operands[1:]
    lines = [f'{indent}{n.group(op)}"stablehlo.case"({n(index)}) ({{']
    for i, sym in enumerate(op.attributes["branches"]):
        branch = p.module.lookup_function(sym.name)
        nr = n.region(branch, None, captured)
        if i:
            lines.append(f"{indent}}}, {{")
        lines += p.body_lines(branch, nr, indent + "  ", "stablehlo.return")
    lines.append(f"{indent}}}){p.op_attrs(op)} : ({_ty(index.type)}) -> {results_text(op)}"
                 + p.tail(op))
    return lines
