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

from shardc.ir.attributes import Keyword, OpaqueAttr
from shardc.ir.core import Operation, Value
from shardc.ir.ops import attr
from shardc.ir.ops.window import CONV_DIMS
from shardc.stablehlo.attributes import dialect_fields, enum_word
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule, take_attr
from shardc.stablehlo.mlir_text import functional_type, int_list
from shardc.stablehlo.records import AttrRec, OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

# `algorithm = <lhs_precision_type = bf16, ...>` of the pretty form is this attribute; the native
# IR keeps it whole (`#opaque<"#stablehlo.dot_algorithm<...>">`), the executors read its fields.
ALGORITHM_PREFIX = "#stablehlo.dot_algorithm"

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


@read_rule("dot_algorithm")
def dot_algorithm(c: list) -> tuple:
    return ("algorithm", str(c[0]))


@read_rule("dot_op")
def dot_op(c: list) -> OpRec:
    extra: dict[str, Any] = {"batching": ((), ()), "contracting": (c[4], c[5])}
    if c[3] is not None:
        extra["batching"] = (c[3][1], c[3][2])
    if c[6] is not None:
        extra["precision"] = c[6][1]
    if c[7] is not None:
        extra["algorithm"] = c[7][1]
    return OpRec("dot_general", c[0], [c[1], c[2]], extra, c[8], c[9])


@pretty_form("dot_general")
def _dot_general(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    (lb, rb), (lc, rc) = rec.extra["batching"], rec.extra["contracting"]
    attrs: dict[str, Any] = {}
    if lb or rb:
        attrs["lhs_batching_dims"], attrs["rhs_batching_dims"] = lb, rb
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = lc, rc
    if "precision" in rec.extra:
        attrs["precision"] = tuple(Keyword(w) for w in rec.extra["precision"])
    if "algorithm" in rec.extra:
        attrs["algorithm"] = OpaqueAttr(ALGORITHM_PREFIX + rec.extra["algorithm"])
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
    algorithm = props.get("algorithm")
    if algorithm is not None:
        if not str(algorithm.value).startswith(ALGORITHM_PREFIX + "<"):
            raise ValueError(f"'algorithm' must be a {ALGORITHM_PREFIX}<...>, "
                             f"got {algorithm.value!r}")
        attrs["algorithm"] = OpaqueAttr(algorithm.value)
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


# ----- export ---------------------------------------------------------------------------------


@prints("dot_general")
def _print_dot_general(p: Printer, op: Operation, n: Names, args: str) -> str:
    at = op.attributes
    parts = []
    lb, rb = at.get("lhs_batching_dims", ()), at.get("rhs_batching_dims", ())
    if lb or rb:
        parts.append(f"batching_dims = {int_list(lb)} x {int_list(rb)}")
    lc, rc = at.get("lhs_contracting_dims", ()), at.get("rhs_contracting_dims", ())
    parts.append(f"contracting_dims = {int_list(lc)} x {int_list(rc)}")
    precision = at.get("precision")
    if precision is not None:
        words = precision if isinstance(precision, tuple) else ()
        parts.append("precision = [" + ", ".join(str(w) for w in words) + "]")
    algorithm = at.get("algorithm")
    if algorithm is not None:
        parts.append("algorithm = " + algorithm.text.removeprefix(ALGORITHM_PREFIX))
    text = f"stablehlo.dot_general {args}, " + ", ".join(parts) + f"{p.op_attrs(op)} : "
    return text + functional_type(op)


def _conv_layout(batch: int, feature: int, spatial: tuple, letters: str) -> str:
    out: list[str] = [""] * (len(spatial) + 2)
    out[batch], out[feature] = letters[0], letters[1]
    for i, d in enumerate(spatial):
        out[d] = str(i)
    return "[" + ", ".join(out) + "]"


def _conv_head(op: Operation) -> str:
    d = {k: attr(op, k) for k in CONV_DIMS}
    layouts = (
        _conv_layout(d["input_batch_dimension"], d["input_feature_dimension"],
                     d["input_spatial_dimensions"], "bf"),
        _conv_layout(d["kernel_input_feature_dimension"], d["kernel_output_feature_dimension"],
                     d["kernel_spatial_dimensions"], "io"),
        _conv_layout(d["output_batch_dimension"], d["output_feature_dimension"],
                     d["output_spatial_dimensions"], "bf"),
    )
    text = f"dim_numbers = {layouts[0]}x{layouts[1]}->{layouts[2]}"
    window = []
    at = op.attributes
    for key, native in WINDOW_KEYS.items():
        value = at.get(native)
        if value is None:
            continue
        if native == "padding":
            window.append(f"{key} = [" + ", ".join(int_list(p) for p in value) + "]")
        elif native == "window_reversal":
            window.append(f"{key} = [" + ", ".join("true" if b else "false" for b in value) + "]")
        else:
            window.append(f"{key} = {int_list(value)}")
    if window:
        text += ", window = {" + ", ".join(window) + "}"
    return text


@prints("convolution")
def _print_convolution(p: Printer, op: Operation, n: Names, args: str) -> str:
    extra = {
        "batch_group_count": attr(op, "batch_group_count"),
        "feature_group_count": attr(op, "feature_group_count"),
    }
    precision = op.attributes.get("precision")
    if precision is not None:
        extra["precision_config"] = OpaqueAttr(
            "[" + ", ".join(f"#stablehlo<precision {w.word}>" for w in precision) + "]"
        )
    return (f"stablehlo.convolution({args}) {_conv_head(op)}{p.op_attrs(op, extra=extra)} : "
            f"{functional_type(op)}")
