"""Ops that make or rearrange whole tensors: constant, iota, broadcast_in_dim, transpose,
reverse, reshape, concatenate, pad.

    %cst = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>   <-> constant {value}
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (...) -> ...   <-> transpose {permutation}
    %1 = stablehlo.pad %0, %cst, low = [0], high = [2], interior = [0] : (...) -> ...

`sdy.constant` (Shardy's unfoldable constant) and `arith.constant` (MLIR's builtin one) import
as a `constant` marked with their name (`SDY_CONSTANT_MARKER`, `ARITH_CONSTANT_MARKER`), so
they export under it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import (
    ARITH_CONSTANT_MARKER,
    SDY_CONSTANT_MARKER,
    parse_dense,
    props_ints,
    tensor_type_text,
)
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import (
    Props,
    SyntaxIssue,
    generic,
    plain,
    pretty_form,
    read_rule,
)
from shardc.stablehlo.literals import format_dense
from shardc.stablehlo.mlir_text import functional_type, int_list
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.records import OpRec, value_tokens
from shardc.stablehlo.tokens import is_token

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

# Op -> (native op, the attribute its `dims = [...]` is).
_DIMS_ATTR = {
    "stablehlo.broadcast_in_dim": ("broadcast_in_dim", "broadcast_dimensions"),
    "stablehlo.transpose": ("transpose", "permutation"),
    "stablehlo.reverse": ("reverse", "dimensions"),
}

# `stablehlo.reshape %0 : (...) -> ...` is the plain syntax (elementwise.py reads it).
generic("stablehlo.reshape")(plain)


# ----- import ---------------------------------------------------------------------------------


@read_rule("constant_op")
def constant_op(c: list) -> OpRec:
    attrs = c[1] if c[1] is not None else c[3]
    if c[1] is not None and c[3] is not None:
        raise SyntaxIssue("constant has two attribute dictionaries", c[0])
    return OpRec("constant", c[0], [], {"dense": c[2]}, attrs, ("plain", None, [c[4]]))


@pretty_form("constant")
def _constant(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    ty = rec.sig[2][0]
    parsed = tensor_type_text(str(ty))
    if isinstance(parsed, str):
        raise fb.b.fail(parsed, ty)
    try:
        value = parse_dense(str(rec.extra["dense"]), parsed[1])
    except (ValueError, IndexError, OverflowError):
        raise fb.b.fail(f"malformed dense literal for {ty}", rec.extra["dense"]) from None
    return "constant", _marked(rec, {"value": value}), [ty], None


_MARKERS = {"sdy.constant": SDY_CONSTANT_MARKER, "arith.constant": ARITH_CONSTANT_MARKER}


def _marked(rec: OpRec, attrs: dict[str, Any]) -> dict[str, Any]:
    """`attrs` with the marker of the constant's dialect when it is not StableHLO's."""
    if rec.name in _MARKERS:
        attrs[_MARKERS[rec.name]] = True
    return attrs


@generic("stablehlo.constant", "sdy.constant", "arith.constant")
def _generic_constant(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                      results: list):
    dense = props.need("value")
    if dense.kind != "dense" or not results:
        raise ValueError("property 'value' must be a dense<...> literal")
    parsed = tensor_type_text(str(results[0]))
    if isinstance(parsed, str):
        raise ValueError(parsed)
    value = parse_dense(str(dense.value[0]), parsed[1])
    return "constant", _marked(rec, {"value": value}), results, None


@read_rule("iota_op")
def iota_op(c: list) -> OpRec:
    return OpRec("iota", c[0], [], {"dim": int(c[1])}, c[2], c[3])


@pretty_form("iota")
def _iota(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "iota", {"iota_dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


@generic("stablehlo.iota")
def _generic_iota(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                  results: list):
    return "iota", {"iota_dimension": props.need("iota_dimension").value}, results, None


@read_rule("dims_op")
def dims_op(c: list) -> OpRec:
    return OpRec("dims", c[0], [c[1]], {"dims": c[2]}, c[3], c[4])


@pretty_form("dims")
def _dims(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    name, key = _DIMS_ATTR[rec.name]
    return name, {key: rec.extra["dims"]}, fb.results_of(rec, operands), None


@generic(*_DIMS_ATTR)
def _generic_dims(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                  results: list):
    native, key = _DIMS_ATTR[rec.name]
    return native, {key: props_ints(props.need(key))}, results, None


@read_rule("concat_op")
def concat_op(c: list) -> OpRec:
    dim = [t for t in c if is_token(t) and t.type == "INT"][0]
    return OpRec("concatenate", c[0], value_tokens(c), {"dim": int(dim)}, c[-2], c[-1])


@pretty_form("concatenate")
def _concatenate(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "concatenate", {"dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


@generic("stablehlo.concatenate")
def _generic_concatenate(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                         results: list):
    return "concatenate", {"dimension": props.need("dimension").value}, results, None


@read_rule("pad_op")
def pad_op(c: list) -> OpRec:
    extra = {"low": c[3], "high": c[4], "interior": c[5]}
    return OpRec("pad", c[0], [c[1], c[2]], extra, c[6], c[7])


@pretty_form("pad")
def _pad(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs = {
        "edge_padding_low": rec.extra["low"],
        "edge_padding_high": rec.extra["high"],
        "interior_padding": rec.extra["interior"],
    }
    return "pad", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.pad")
def _generic_pad(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                 results: list):
    keys = ("edge_padding_low", "edge_padding_high", "interior_padding")
    return "pad", {k: props_ints(props.need(k)) for k in keys}, results, None


# ----- export ---------------------------------------------------------------------------------


@prints("constant")
def _print_constant(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    dialect = ("stablehlo" if len(at) == 1 else  # (only its value: the common case)
               next((name.partition(".")[0] for name in _MARKERS.values() if at.get(name)),
                    "stablehlo"))
    r = op.results[0]
    dense = p.text_of(at["value"], r.type.dtype, format_dense)
    return f"{dialect}.constant{p.op_attrs(op)} {dense} : {_ty(r.type)}"


@prints("iota")
def _print_iota(p: Printer, op: Operation, n: Names, args: str) -> str:
    return (f"stablehlo.iota dim = {op.attributes['iota_dimension']}{p.op_attrs(op)} : "
            f"{_ty(op.results[0].type)}")


_DIMS_KEY = {"broadcast_in_dim": "broadcast_dimensions", "transpose": "permutation",
             "reverse": "dimensions"}


@prints(*(native for native, _ in _DIMS_ATTR.values()))
def _print_dims(p: Printer, op: Operation, n: Names, args: str) -> str:
    name = op.name
    key = _DIMS_KEY[name]
    sig = _ty(op.results[0].type) if name == "reverse" else functional_type(op)
    return f"stablehlo.{name} {args}, dims = {int_list(op.attributes[key])}{p.op_attrs(op)} : {sig}"


@prints("reshape")
def _print_reshape(p: Printer, op: Operation, n: Names, args: str) -> str:
    return f"stablehlo.reshape {args}{p.op_attrs(op)} : {functional_type(op)}"


@prints("concatenate")
def _print_concatenate(p: Printer, op: Operation, n: Names, args: str) -> str:
    return (f"stablehlo.concatenate {args}, dim = {op.attributes['dimension']}{p.op_attrs(op)} : "
            f"{functional_type(op)}")


@prints("pad")
def _print_pad(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    interior = at.get("interior_padding") or (0,) * op.operands[0].type.rank
    return (f"stablehlo.pad {args}, low = {int_list(at['edge_padding_low'])}, high = "
            f"{int_list(at['edge_padding_high'])}, interior = {int_list(interior)}"
            f"{p.op_attrs(op)} : {functional_type(op)}")
