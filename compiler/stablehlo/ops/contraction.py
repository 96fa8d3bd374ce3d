"""Contractions: dot_general and convolution, with their dimension numbers.

    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (...) -> ...
        <-> dot_general {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
    %1 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, ...}
        <-> convolution {input_batch_dimension = 0, ..., window_strides = [1, 1], ...}

The convolution's `feature_group_count`, `batch_group_count` and `precision_config` sit in its
attribute dict but are part of the op: they are taken out so the rest is kept verbatim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword
from shardc.ir.core import Value
from shardc.stablehlo.attributes import dialect_fields, enum_word
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule, take_attr
from shardc.stablehlo.records import AttrRec, OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder

# `window = {stride = ..}` entry -> native attribute.
WINDOW_KEYS = {
    "stride": "window_strides",
    "pad": "padding",
    "lhs_dilate": "lhs_dilation",
    "rhs_dilate": "rhs_dilation",
    "reverse": "window_reversal",
}


# ----- import: dot_general --------------------------------------------------------------------


@read_rule("dot_batching")
def dot_batching(c: list) -> tuple:
    return ("batching", c[0], c[1])


@read_rule("dot_precision")
def dot_precision(c: list) -> tuple:
    return ("precision", tuple(str(t) for t in c if t is not None))


@read_rule("dot_op")
def dot_op(c: list) -> OpRec:
    extra: dict[str, Any] = {"batching": ((), ()), "contracting": (c[4], c[5])}
    if c[3] is not None:
        extra["batching"] = (c[3][1], c[3][2])
    if c[6] is not None:
        extra["precision"] = c[6][1]
    return OpRec("dot_general", c[0], [c[1], c[2]], extra, c[7], c[8])


@pretty_form("dot_general")
def _dot_general(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    (lb, rb), (lc, rc) = rec.extra["batching"], rec.extra["contracting"]
    attrs: dict[str, Any] = {}
    if lb or rb:
        attrs["lhs_batching_dims"], attrs["rhs_batching_dims"] = lb, rb
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = lc, rc
    if "precision" in rec.extra:
        attrs["precision"] = tuple(Keyword(w) for w in rec.extra["precision"])
    return "dot_general", attrs, fb.results_of(rec, operands), None


@generic("stablehlo.dot_general")
def _generic_dot_general(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                         results: list):
    dims = dialect_fields(props.need("dot_dimension_numbers").value)
    attrs: dict[str, Any] = {}
    if dims.get("lhs_batching_dimensions") or dims.get("rhs_batching_dimensions"):
        attrs["lhs_batching_dims"] = dims.get("lhs_batching_dimensions", ())
        attrs["rhs_batching_dims"] = dims.get("rhs_batching_dimensions", ())
    attrs["lhs_contracting_dims"] = dims.get("lhs_contracting_dimensions", ())
    attrs["rhs_contracting_dims"] = dims.get("rhs_contracting_dimensions", ())
    if props.get("precision_config") is not None:
        words = [enum_word(a) for a in props["precision_config"].value]
        attrs["precision"] = tuple(Keyword(w) for w in words)
    return "dot_general", attrs, results, None


# ----- import: convolution --------------------------------------------------------------------


@read_rule("conv_op")
def conv_op(c: list) -> OpRec:
    extra = {"dims": c[3], "window": c[4] or []}
    return OpRec("convolution", c[0], [c[1], c[2]], extra, c[5], c[6])


@read_rule("conv_dims", "window_pairs")
def _children(c: list) -> tuple:
    return tuple(c)


@read_rule("conv_layout")
def conv_layout(c: list) -> tuple:
    return tuple(x for x in c if x is not None)


@read_rule("conv_dim")
def conv_dim(c: list) -> int | str:
    tok = c[0]
    return int(tok) if tok.type == "INT" else str(tok)


@read_rule("conv_window")
def conv_window(c: list) -> list:
    return [x for x in c if x is not None]


@read_rule("window_entry")
def window_entry(c: list) -> tuple:
    return (str(c[0]), c[1], c[0])


@read_rule("window_value")
def window_value(c: list) -> Any:
    return c[0]


@read_rule("window_bools")
def window_bools(c: list) -> tuple[bool, ...]:
    return tuple(str(t) == "true" for t in c)


def _int_attr(value: AttrRec | None, key: str, default: int) -> int:
    if value is None:
        return default
    if value.kind != "int":
        raise ValueError(f"'{key}' must be an integer")
    return int(value.value)


def _layout(layout: tuple, letters: tuple[str, str], what: str) -> tuple[int, int, tuple[int, ...]]:
    """`[b, 0, 1, f]` -> (position of b, position of f, positions of spatial dims 0, 1, ...)."""
    first = second = -1
    spatial: dict[int, int] = {}
    for pos, d in enumerate(layout):
        if d == letters[0] and first < 0:
            first = pos
        elif d == letters[1] and second < 0:
            second = pos
        elif isinstance(d, int) and d not in spatial:
            spatial[d] = pos
        else:
            raise ValueError(f"{what} dimension numbers {list(layout)}: unexpected or repeated {d}")
    if first < 0 or second < 0 or sorted(spatial) != list(range(len(spatial))):
        raise ValueError(
            f"{what} dimension numbers must name {letters[0]}, {letters[1]} and spatial dims "
            "0, 1, ... once each"
        )
    return first, second, tuple(spatial[i] for i in range(len(spatial)))


def conv_dimension_attrs(dims: tuple) -> dict[str, Any]:
    """`([b, 0, 1, f], [0, 1, i, o], [b, 0, 1, f])` -> the native convolution's dimensions."""
    lhs, rhs, out = dims
    ib, if_, isp = _layout(lhs, ("b", "f"), "input")
    ki, ko, ksp = _layout(rhs, ("i", "o"), "kernel")
    ob, of, osp = _layout(out, ("b", "f"), "output")
    return {
        "input_batch_dimension": ib, "input_feature_dimension": if_,
        "input_spatial_dimensions": isp, "kernel_input_feature_dimension": ki,
        "kernel_output_feature_dimension": ko, "kernel_spatial_dimensions": ksp,
        "output_batch_dimension": ob, "output_feature_dimension": of,
        "output_spatial_dimensions": osp,
    }


def _precision(value: AttrRec | None) -> tuple[Keyword, ...] | None:
    if value is None:
        return None
    if value.kind != "list":
        raise ValueError("'precision_config' must be a list of #stablehlo<precision ...>")
    return tuple(Keyword(enum_word(a)) for a in value.value)


@pretty_form("convolution")
def _convolution(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    attrs = conv_dimension_attrs(rec.extra["dims"])
    for key, value, _tok in rec.extra["window"]:
        native = WINDOW_KEYS.get(key)
        if native is None:
            raise ValueError(f"unknown window attribute '{key}' (known: {', '.join(WINDOW_KEYS)})")
        if native in attrs:
            raise ValueError(f"window attribute '{key}' is given twice")
        attrs[native] = value
    for key in ("feature_group_count", "batch_group_count"):
        attrs[key] = _int_attr(take_attr(rec, key), key, 1)
    precision = _precision(take_attr(rec, "precision_config"))
    if precision is not None:
        attrs["precision"] = precision
    return "convolution", attrs, fb.results_of(rec, operands), None
