"""Indexing: slice, dynamic_slice, dynamic_update_slice, gather, scatter.

    %0 = stablehlo.slice %arg0 [0:4, 2:8:2] : (...) -> tensor<4x3xf32>
        <-> slice {start_indices = [0, 2], limit_indices = [4, 8], strides = [1, 2]}
    %1 = stablehlo.dynamic_slice %arg0, %i, %j, sizes = [4, 32] : (...) -> tensor<4x32xf32>
    %2 = "stablehlo.gather"(%arg0, %idx) <{dimension_numbers = #stablehlo.gather<...>, ...}>

gather and scatter exist only in the generic form; a scatter of one input whose update region is
one binary op of its two arguments (or returns the update: `replace`) keeps it as the native op's
`kind`, any other (several inputs) is outlined into its `body` function (reducers.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import dialect_fields, props_ints
from shardc.stablehlo.export_table import prints, prints_lines
from shardc.stablehlo.import_table import Props, generic, plain, pretty_form, read_rule
from shardc.stablehlo.mlir_text import functional_type, int_list
from shardc.stablehlo.records import OpRec, first_of, value_tokens
from shardc.stablehlo.reducers import combiner, combiner_lines

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

GATHER_DIMS = ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
               "start_indices_batching_dims", "start_index_map", "index_vector_dim")
SCATTER_DIMS = ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                "index_vector_dim")

# `stablehlo.dynamic_update_slice %a, %u, %i : (...) -> ...` is the plain syntax
# (elementwise.py reads it).
generic("stablehlo.dynamic_update_slice")(plain)


# ----- import ---------------------------------------------------------------------------------


@read_rule("slice_range")
def slice_range(c: list) -> list[int]:
    return [int(c[0]), int(c[1]), int(c[2]) if c[2] is not None else 1]


@read_rule("slice_op")
def slice_op(c: list) -> OpRec:
    ranges = [r for r in c if isinstance(r, list)]
    return OpRec("slice", c[0], [c[1]], {"ranges": ranges}, c[-2], c[-1])


@pretty_form("slice")
def _slice(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    ranges = rec.extra["ranges"]
    attrs = {
        "start_indices": tuple(r[0] for r in ranges),
        "limit_indices": tuple(r[1] for r in ranges),
        "strides": tuple(r[2] for r in ranges),
    }
    return "slice", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.slice")
def _generic_slice(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                   results: list):
    attrs = {k: props_ints(props.need(k)) for k in ("start_indices", "limit_indices", "strides")}
    return "slice", attrs, results, None


@read_rule("dynamic_slice_op")
def dynamic_slice_op(c: list) -> OpRec:
    sizes = first_of(c, tuple)
    return OpRec("dynamic_slice", c[0], value_tokens(c), {"sizes": sizes}, c[-2], c[-1])


@pretty_form("dynamic_slice")
def _dynamic_slice(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "dynamic_slice", {"slice_sizes": rec.extra["sizes"]}, fb.results_of(rec, operands), None


@generic("stablehlo.dynamic_slice")
def _generic_dynamic_slice(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                           results: list):
    sizes = props_ints(props.get("slice_sizes"))
    if sizes is None:
        raise ValueError("needs property 'slice_sizes'")
    return "dynamic_slice", {"slice_sizes": sizes}, results, None


def _dimension_numbers(text: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """`#stablehlo.gather<offset_dims = [1], ...>` -> {key: ints}, `()` (or 0 for
    `index_vector_dim`) for a key the text leaves out."""
    fields = dialect_fields(text)
    return {k: fields.get(k, 0 if k == "index_vector_dim" else ()) for k in keys}


@generic("stablehlo.gather")
def _generic_gather(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                    results: list):
    attrs = _dimension_numbers(props.need("dimension_numbers").value, GATHER_DIMS)
    attrs["slice_sizes"] = props_ints(props.need("slice_sizes"))
    if props.get("indices_are_sorted") is not None:
        attrs["indices_are_sorted"] = props["indices_are_sorted"].value
    return "gather", attrs, results, None


@generic("stablehlo.scatter")
def _generic_scatter(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                     results: list):
    if len(rec.regions) != 1:
        raise ValueError("needs one update region")
    attrs = _dimension_numbers(props.need("scatter_dimension_numbers").value, SCATTER_DIMS)
    attrs.update(combiner(fb, rec, len(operands) == 3, "scatter_body", allow_replace=True))
    for key in ("indices_are_sorted", "unique_indices"):
        if props.get(key) is not None:
            attrs[key] = props[key].value
    return "scatter", attrs, results, None


# ----- export ---------------------------------------------------------------------------------


@prints("slice")
def _print_slice(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    starts, limits = at["start_indices"], at["limit_indices"]
    strides = at.get("strides") or (1,) * len(starts)
    ranges = [f"{s}:{e}" + (f":{k}" if k != 1 else "")
              for s, e, k in zip(starts, limits, strides)]
    ranges_text = "[" + ", ".join(ranges) + "]"
    return f"stablehlo.slice {args} {ranges_text}{p.op_attrs(op)} : {functional_type(op)}"


@prints("dynamic_slice")
def _print_dynamic_slice(p: Printer, op: Operation, n: Names, args: str) -> str:
    sizes = int_list(op.attributes["slice_sizes"])
    return (f"stablehlo.dynamic_slice {args}, sizes = {sizes}{p.op_attrs(op)} : "
            f"{functional_type(op)}")


@prints("dynamic_update_slice")
def _print_dynamic_update_slice(p: Printer, op: Operation, n: Names, args: str) -> str:
    return f"stablehlo.dynamic_update_slice {args}{p.op_attrs(op)} : {functional_type(op)}"


def _dimension_fields(op: Operation, keys: tuple[str, ...]) -> str:
    """`offset_dims = [1], ..., index_vector_dim = 1`: the non-empty lists, then the index dim
    (MLIR leaves out each field at its default: an empty list, an index dim of 0)."""
    at = op.attributes
    fields = [f"{key} = {int_list(at[key])}" for key in keys[:-1] if at.get(key)]
    if at["index_vector_dim"]:
        fields.append(f"index_vector_dim = {at['index_vector_dim']}")
    return ", ".join(fields)


def _flags(at: dict, keys: tuple[str, ...], before: bool = False) -> str:
    """`indices_are_sorted = false, `: the boolean properties the op carries, as MLIR prints
    them (present ones only, whatever their value; absent ones mean false)."""
    out = "".join(f"{k} = {'true' if at[k] else 'false'}, " for k in keys if k in at)
    return (", " + out) if before and out else out


@prints("gather")
def _print_gather(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    sizes = ", ".join(str(s) for s in at["slice_sizes"])
    props = (f"dimension_numbers = #stablehlo.gather<{_dimension_fields(op, GATHER_DIMS)}>, "
             f"{_flags(at, ('indices_are_sorted',))}slice_sizes = array<i64: {sizes}>")
    return f'"stablehlo.gather"({args}) <{{{props}}}>{p.op_attrs(op)} : ' + functional_type(op)


@prints_lines("scatter")
def _print_scatter(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    head = n.group(op)
    args = ", ".join(n(v) for v in op.operands)
    at = op.attributes
    props = (f"{_flags(at, ('indices_are_sorted',))}scatter_dimension_numbers = "
             f"#stablehlo.scatter<{_dimension_fields(op, SCATTER_DIMS)}>"
             + _flags(at, ("unique_indices",), before=True).rstrip(", "))
    lines = [f"{indent}{head}\"stablehlo.scatter\"({args}) <{{{props}}}> ({{"]
    lines += combiner_lines(p, op, n, indent)
    lines.append(f"{indent}}}){p.op_attrs(op)} : {functional_type(op)}" + p.tail(op))
    return lines
