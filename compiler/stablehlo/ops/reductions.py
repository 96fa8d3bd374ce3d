"""Reductions: reduce (over dimensions) and reduce_window.

    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1]
        : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>   <-> reduce {dimensions, kind = add}
    %1:2 = stablehlo.reduce(%a init: %x), (%i init: %y) across dimensions = [1] : ...
        reducer(%arg1: ..., %arg3: ...) (%arg2: ..., %arg4: ...) { ... }
        <-> reduce %a, %i, %x, %y {body = @main_reduce_body, dimensions = [1]}

A reduce whose region is one binary op keeps it as `kind`; any other body (argmax's
compare/select) is outlined into a private function (outlining.py). reduce_window exists only in
the generic form; like scatter's, its region is a `kind` or an outlined `body` (reducers.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.ir.attributes import Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Operation, Value
from shardc.stablehlo.attributes import REDUCER_ATTRS, parse_dense, props_ints, tensor_type_text
from shardc.stablehlo.export_table import prints_lines
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.mlir_text import functional_type, int_list, results_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.outlining import no_captures, outline
from shardc.stablehlo.records import AttrRec, OpRec, PairRec
from shardc.stablehlo.reducers import REDUCER_KINDS, combiner, combiner_lines, region_kind

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

REDUCE_WINDOW_KEYS = (
    "base_dilations", "padding", "window_dilations", "window_dimensions", "window_strides",
)


# ----- import: reduce -------------------------------------------------------------------------


@read_rule("reduce_input")
def reduce_input(c: list) -> PairRec:
    return PairRec(c[0], c[1])


@read_rule("reducer_args")
def reducer_args(c: list) -> tuple:
    return (c[0], c[1])


@read_rule("reducer")
def reducer(c: list) -> Any:
    # `reducer(%acc0, %x0) (%acc1, %x1) {...}` prints pairs; the block's arguments are
    # (acc0, acc1, ..., x0, x1, ...).
    region = c[-1]
    pairs = c[:-1]
    region.args = [p[0] for p in pairs] + [p[1] for p in pairs]
    return region


@read_rule("reduce_op")
def reduce_op(c: list) -> OpRec:
    inputs = [x for x in c if isinstance(x, PairRec)]
    applies = c[len(inputs) + 1]
    dims, attrs, sig, region = c[len(inputs) + 2:]
    operands = [p.first for p in inputs] + [p.second for p in inputs]
    rec = OpRec("reduce", c[0], operands, {"dims": dims, "applies": applies,
                                          "num_inputs": len(inputs)}, attrs, sig)
    if region is not None:
        rec.regions = [region]
    return rec


def _single_op_region(rec: OpRec) -> bool:
    """Whether `rec` has one input and its region is one binary op (a `kind` reduce)."""
    if len(rec.operands) != 2 or len(rec.regions) != 1:
        return False
    try:
        region_kind(rec.regions[0], allow_replace=False)
    except ValueError:
        return False
    return True


def _reduce_body(fb: FunctionBuilder, rec: OpRec, operands: list[Value], dims):
    """A reduce whose region is not one binary op (argmax's compare/select body)."""
    (region,) = rec.regions
    no_captures(region, "reducer")
    results = fb.results_of(rec, operands)
    body = outline(fb, region, "reduce_body")
    return "reduce", {"body": Symbol(body.name), "dimensions": dims}, results, None


@pretty_form("reduce")
def _reduce(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    applies = rec.extra["applies"]
    if applies is None and not _single_op_region(rec):
        return _reduce_body(fb, rec, operands, rec.extra["dims"])
    if applies is not None:
        kind = str(applies).partition(".")[2]
        if kind not in REDUCER_KINDS or not str(applies).startswith("stablehlo."):
            raise ValueError(f"reducer '{applies}' is not one of {sorted(REDUCER_KINDS)}")
    else:
        kind = region_kind(rec.regions[0], allow_replace=False)
    attrs = {"dimensions": rec.extra["dims"], "kind": Keyword(kind)}
    return "reduce", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.reduce")
def _generic_reduce(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                    results: list):
    if not _single_op_region(rec):
        return _reduce_body(fb, rec, operands, props_ints(props.need("dimensions")))
    kind = region_kind(rec.regions[0], allow_replace=False)
    attrs = {"dimensions": props_ints(props.need("dimensions")), "kind": Keyword(kind)}
    return "reduce", attrs, results, None


# ----- import: reduce_window ------------------------------------------------------------------


def _padding(value: AttrRec) -> tuple[tuple[int, int], ...]:
    """`dense<0> : tensor<4x2xi64>` or `dense<[[15, 0], [0, 0]]> : tensor<2x2xi64>`."""
    if value.kind != "dense" or value.value[1] is None:
        raise ValueError("'padding' must be a dense<...> : tensor<Nx2xi64>")
    parsed = tensor_type_text(str(value.value[1]))
    if isinstance(parsed, str) or len(parsed[0]) != 2 or parsed[0][1] != 2:
        raise ValueError("'padding' must have type tensor<Nx2xi64>")
    arr = parse_dense(str(value.value[0]), parsed[1]).to_numpy(parsed[0], parsed[1])
    return tuple((int(lo), int(hi)) for lo, hi in np.asarray(arr).reshape(-1, 2))


def _dict_text(fb: FunctionBuilder, attrs: Any) -> str:
    parts = []
    for key, value in attrs.entries.items():
        key_text = str(attrs.tokens[key])
        parts.append(key_text if value is None else f"{key_text} = {fb.b.opaque(value).text}")
    return "{" + ", ".join(parts) + "}"


@generic("stablehlo.reduce_window")
def _generic_reduce_window(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                           results: list):
    if len(rec.regions) != 1:
        raise ValueError("needs one reducer region")
    attrs: dict[str, Any] = combiner(fb, rec, len(operands) == 2, "reduce_window_body")
    body_attrs = rec.regions[0].ops[0].attrs if "kind" in attrs else None
    if body_attrs is not None and body_attrs.entries:
        attrs[REDUCER_ATTRS] = OpaqueAttr(_dict_text(fb, body_attrs))
    for key in REDUCE_WINDOW_KEYS:
        value = props.get(key)
        if value is not None:
            attrs[key] = _padding(value) if key == "padding" else props_ints(value)
    if "window_dimensions" not in attrs:
        raise ValueError("needs property 'window_dimensions'")
    return "reduce_window", attrs, results, None


@generic("stablehlo.select_and_scatter")
def _generic_select_and_scatter(fb: FunctionBuilder, rec: OpRec, operands: list[Value],
                                props: Props, results: list):
    if len(rec.regions) != 2:
        raise ValueError("needs a select region and a scatter region")
    select_region, scatter_region = rec.regions
    no_captures(select_region, "select region")
    scatter_rec = OpRec(rec.form, rec.tok, rec.operands, rec.extra, rec.attrs, rec.sig,
                        name=rec.name)
    scatter_rec.regions = [scatter_region]
    attrs: dict[str, Any] = {"select": Symbol(outline(fb, select_region, "select").name)}
    attrs.update(combiner(fb, scatter_rec, True, "scatter_body"))
    for key in ("padding", "window_dimensions", "window_strides"):
        value = props.get(key)
        if value is not None:
            attrs[key] = _padding(value) if key == "padding" else props_ints(value)
    return "select_and_scatter", attrs, results, None


# ----- export ---------------------------------------------------------------------------------


@prints_lines("reduce")
def _print_reduce(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    if "body" in op.attributes:
        return _print_reduce_body(p, op, n, indent)
    head = n.group(op)
    kind = op.attributes["kind"].word
    dims = int_list(op.attributes["dimensions"])
    src, init = (n(v) for v in op.operands)
    text = (f"stablehlo.reduce({src} init: {init}) applies stablehlo.{kind} across "
            f"dimensions = {dims}{p.op_attrs(op)} : {functional_type(op)}")
    return [indent + head + text + p.tail(op)]


def _print_reduce_body(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    body = p.function_of(op, "body")
    nr = n.region(body)
    k = len(op.results)
    inputs = ", ".join(f"({n(op.operands[i])} init: {n(op.operands[k + i])})"
                       for i in range(k))
    dims = "[" + ", ".join(str(d) for d in op.attributes["dimensions"]) + "]"
    types = ", ".join(_ty(v.type) for v in op.operands)
    head = (f"{indent}{n.group(op)}stablehlo.reduce{inputs} across dimensions "
            f"= {dims}{p.op_attrs(op)} : ({types}) -> {results_text(op)}")
    pairs = " ".join(
        f"({nr(body.args[i])}: {_ty(body.args[i].type)}, "
        f"{nr(body.args[k + i])}: {_ty(body.args[k + i].type)})" for i in range(k))
    lines = [head + p.tail(op), f"{indent} reducer{pairs}  {{"]
    lines += p.body_lines(body, nr, indent + "  ", "stablehlo.return")
    lines.append(f"{indent}}}")
    return lines


def _padding_dense(pairs: tuple) -> str:
    flat = [int(v) for p in pairs for v in p]
    shape = f"tensor<{len(pairs)}x2xi64>"
    if flat and all(v == flat[0] for v in flat):
        return f"dense<{flat[0]}> : {shape}"
    return "dense<[" + ", ".join(int_list(p) for p in pairs) + f"]> : {shape}"


@prints_lines("reduce_window")
def _print_reduce_window(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    head = n.group(op)
    args = ", ".join(n(v) for v in op.operands)
    at = op.attributes
    props = []
    for key in REDUCE_WINDOW_KEYS:
        value = at.get(key)
        if value is None:
            continue
        if key == "padding":
            props.append(f"padding = {_padding_dense(value)}")
        else:
            props.append(f"{key} = array<i64: " + ", ".join(str(v) for v in value) + ">")
    body_attrs = at.get(REDUCER_ATTRS)
    body = f" {body_attrs.text}" if body_attrs is not None else ""
    return [
        f"{indent}{head}\"stablehlo.reduce_window\"({args}) <{{{', '.join(props)}}}> ({{",
        *combiner_lines(p, op, n, indent, body),
        f"{indent}}}){p.op_attrs(op)} : {functional_type(op)}" + p.tail(op),
    ]


def _window_props(op: Operation, keys: tuple[str, ...]) -> str:
    """The written window properties in MLIR's `<{...}>` syntax."""
    props = []
    for key in keys:
        value = op.attributes.get(key)
        if value is None:
            continue
        if key == "padding":
            props.append(f"padding = {_padding_dense(value)}")
        else:
            props.append(f"{key} = array<i64: " + ", ".join(str(v) for v in value) + ">")
    return ", ".join(props)


@prints_lines("select_and_scatter")
def _print_select_and_scatter(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    args = ", ".join(n(v) for v in op.operands)
    props = _window_props(op, ("padding", "window_dimensions", "window_strides"))
    select = p.function_of(op, "select")
    nr = n.region(select)
    block = ", ".join(f"{nr(a)}: {_ty(a.type)}" for a in select.args)
    return [
        f'{indent}{n.group(op)}"stablehlo.select_and_scatter"({args}) <{{{props}}}> ({{',
        f"{indent}^bb0({block}):",
        *p.body_lines(select, nr, indent + "  ", "stablehlo.return"),
        f"{indent}}}, {{",
        *combiner_lines(p, op, n, indent),
        f"{indent}}}){p.op_attrs(op)} : {functional_type(op)}" + p.tail(op),
    ]
