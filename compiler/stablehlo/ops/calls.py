"""Calls and returns: func.call, return, custom_call, composite.

    %0 = call @helper(%arg0) : (tensor<8xf32>) -> tensor<8xf32>    <-> call {callee = @helper}
    return %0 : tensor<8xf32>                                       <-> return
    %1 = stablehlo.custom_call @Sharding(%0) {...} : (...) -> ...  <-> custom_call
    %2 = stablehlo.composite "my.op" %0 {decomposition = @f, ...} : (...) -> ...

`return` is also the terminator of every region (`stablehlo.return`, `sdy.return`). A composite's
`decomposition`, `composite_attributes` and `version` are part of the op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Symbol, symbol_name
from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule, take_attr
from shardc.stablehlo.mlir_text import attr_text, functional_type, symbol_text
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@read_rule("call_op")
def call_op(c: list) -> OpRec:
    return OpRec("call", c[0], c[2] or [], {"callee": c[1]}, c[3], c[4])


@pretty_form("call")
def _call(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    callee = Symbol(symbol_name(str(rec.extra["callee"])))
    return "call", {"callee": callee}, fb.results_of(rec, operands), None


@generic("func.call", "call")
def _generic_call(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                  results: list):
    return "call", {"callee": Symbol(props.need("callee").value)}, results, None


@read_rule("return_op")
def return_op(c: list) -> OpRec:
    sig = ("plain", None, c[3]) if c[3] is not None else None
    return OpRec("return", c[0], c[1] or [], {}, c[2], sig)


@read_rule("return_attrs_first")
def return_attrs_first(c: list) -> OpRec:
    sig = ("plain", None, c[3]) if c[3] is not None else None
    return OpRec("return", c[0], c[2], {}, c[1], sig)


@pretty_form("return")
def _return(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    if rec.sig is not None:
        toks = rec.sig[2]
        if len(toks) != len(operands):
            raise ValueError(f"returns {len(operands)} values but lists {len(toks)} types")
        for i, (tok, v) in enumerate(zip(toks, operands)):
            fb.check_type(tok, v, i)
    elif operands:
        raise ValueError("return needs the types of its operands: `return %0 : tensor<...>`")
    return "return", {}, [], None


@generic("func.return", "return", "stablehlo.return")
def _generic_return(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                    results: list):
    return "return", {}, [], None


@read_rule("custom_call_op")
def custom_call_op(c: list) -> OpRec:
    return OpRec("custom_call", c[0], c[2] or [], {"target": c[1]}, c[3], c[4])


@pretty_form("custom_call")
def _custom_call(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    target = str(rec.extra["target"])[1:]
    if target.startswith('"'):
        target = unescape(target)
    return "custom_call", {"call_target_name": target}, fb.results_of(rec, operands), None


@read_rule("composite_op")
def composite_op(c: list) -> OpRec:
    return OpRec("composite", c[0], c[2] or [], {"name": c[1]}, c[3], c[4])


@pretty_form("composite")
def _composite(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    decomposition = take_attr(rec, "decomposition")
    if decomposition is None or decomposition.kind != "symbol":
        raise ValueError("needs 'decomposition = @function'")
    attrs: dict[str, Any] = {
        "name": unescape(str(rec.extra["name"])),
        "decomposition": Symbol(decomposition.value),
    }
    for key in ("composite_attributes", "version"):
        value = take_attr(rec, key)
        if value is not None:
            attrs[key] = fb.b.opaque(value)
    return "composite", attrs, fb.results_of(rec, operands), None


# ----- export ---------------------------------------------------------------------------------


@prints("return")
def _print_return(p: Printer, op: Operation, n: Names, args: str) -> str:
    return p.return_text(op, args, "return")


@prints("call")
def _print_call(p: Printer, op: Operation, n: Names, args: str) -> str:
    callee = symbol_text(op.attributes["callee"].name)  # MLIR's spelling, quoted if it must be
    # func's ops drop their dialect prefix only directly inside a func.func.
    prefix = "func." if n.parent is not None else ""
    return f"{prefix}call {callee}({args}){p.op_attrs(op)} : {functional_type(op)}"


@prints("custom_call")
def _print_custom_call(p: Printer, op: Operation, n: Names, args: str) -> str:
    target = symbol_text(op.attributes["call_target_name"])
    return f"stablehlo.custom_call {target}({args}){p.op_attrs(op)} : {functional_type(op)}"


@prints("composite")
def _print_composite(p: Printer, op: Operation, n: Names, args: str) -> str:
    extra = {"decomposition": Symbol(op.attributes["decomposition"].name)}
    for key in ("composite_attributes", "version"):
        if op.attributes.get(key) is not None:
            extra[key] = op.attributes[key]
    label = attr_text(op.attributes["name"])
    return (f"stablehlo.composite {label} {args}{p.op_attrs(op, extra=extra)} : "
            f"{functional_type(op)}")
