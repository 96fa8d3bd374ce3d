"""Converters for the region-free ops beyond the core set: dynamic slices, convolution,
reduce_window (one-op reducer region), custom_call, composite, chlo.top_k.

    stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], ...
        -> ("convolution", {"input_batch_dimension": 0, ...}, ...)

Each converter has the signature of `ops.CONVERTERS`; attributes that are part of the op (e.g.
`feature_group_count`, `decomposition`) are taken out of the record's attribute dict so the rest
is kept verbatim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.ir.attributes import Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Value
from shardc.stablehlo.attributes import enum_word, parse_dense, props_ints, tensor_type_text
from shardc.stablehlo.records import AttrRec, OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.importer import FunctionBuilder

# `window = {stride = ..}` entry -> native attribute.
WINDOW_KEYS = {
    "stride": "window_strides",
    "pad": "padding",
    "lhs_dilate": "lhs_dilation",
    "rhs_dilate": "rhs_dilation",
    "reverse": "window_reversal",
}
REDUCE_WINDOW_KEYS = (
    "base_dilations", "padding", "window_dilations", "window_dimensions", "window_strides",
)


def _take(rec: OpRec, key: str) -> AttrRec | None:
    """Remove `key` from the op's attribute dict and return its value (None if absent)."""
    if rec.attrs is None or key not in rec.attrs.entries:
        return None
    rec.attrs.tokens.pop(key, None)
    return rec.attrs.entries.pop(key)


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
        attrs[key] = _int_attr(_take(rec, key), key, 1)
    precision = _precision(_take(rec, "precision_config"))
    if precision is not None:
        attrs["precision"] = precision
    return "convolution", attrs, fb.results_of(rec, operands), None


def _dynamic_slice(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "dynamic_slice", {"slice_sizes": rec.extra["sizes"]}, fb.results_of(rec, operands), None


def _custom_call(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    target = str(rec.extra["target"])[1:]
    if target.startswith('"'):
        from shardc.stablehlo.attributes import unescape

        target = unescape(target)
    return "custom_call", {"call_target_name": target}, fb.results_of(rec, operands), None


def _composite(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    from shardc.stablehlo.attributes import unescape

    decomposition = _take(rec, "decomposition")
    if decomposition is None or decomposition.kind != "symbol":
        raise ValueError("needs 'decomposition = @function'")
    attrs: dict[str, Any] = {
        "name": unescape(str(rec.extra["name"])),
        "decomposition": Symbol(decomposition.value),
    }
    for key in ("composite_attributes", "version"):
        value = _take(rec, key)
        if value is not None:
            attrs[key] = fb.b.opaque(value)
    return "composite", attrs, fb.results_of(rec, operands), None


def _top_k(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "top_k", {"k": rec.extra["k"]}, fb.results_of(rec, operands), None


def _padding(value: AttrRec) -> tuple[tuple[int, int], ...]:
    """`dense<0> : tensor<4x2xi64>` or `dense<[[15, 0], [0, 0]]> : tensor<2x2xi64>`."""
    if value.kind != "dense" or value.value[1] is None:
        raise ValueError("'padding' must be a dense<...> : tensor<Nx2xi64>")
    parsed = tensor_type_text(str(value.value[1]))
    if isinstance(parsed, str) or len(parsed[0]) != 2 or parsed[0][1] != 2:
        raise ValueError("'padding' must have type tensor<Nx2xi64>")
    arr = parse_dense(str(value.value[0]), parsed[1]).to_numpy(parsed[0], parsed[1])
    return tuple((int(lo), int(hi)) for lo, hi in np.asarray(arr).reshape(-1, 2))


# Attribute that keeps the discardable attributes of a reducer region's one op (printed back on it).
REDUCER_ATTRS = "shardc.reducer_attrs"


def _dict_text(fb: FunctionBuilder, attrs: Any) -> str:
    parts = []
    for key, value in attrs.entries.items():
        key_text = str(attrs.tokens[key])
        parts.append(key_text if value is None else f"{key_text} = {fb.b.opaque(value).text}")
    return "{" + ", ".join(parts) + "}"


def generic_extra(fb: FunctionBuilder, rec: OpRec, operands: list[Value], results: list):
    """The generic forms of the ops above; None when `rec` is none of them."""
    props: dict[str, AttrRec | None] = rec.extra["props"].entries if rec.extra["props"] else {}
    name = rec.name
    if name == "stablehlo.reduce_window":
        if len(operands) != 2 or len(rec.regions) != 1:
            raise ValueError("variadic reduce_window (several inputs) does not import")
        attrs: dict[str, Any] = {"kind": Keyword(fb.region_kind(rec, rec.regions[0], False))}
        body_attrs = rec.regions[0].ops[0].attrs
        if body_attrs is not None and body_attrs.entries:
            attrs[REDUCER_ATTRS] = OpaqueAttr(_dict_text(fb, body_attrs))
        for key in REDUCE_WINDOW_KEYS:
            value = props.get(key)
            if value is not None:
                attrs[key] = _padding(value) if key == "padding" else props_ints(value)
        if "window_dimensions" not in attrs:
            raise ValueError("needs property 'window_dimensions'")
        return "reduce_window", attrs, results, None
    if name == "stablehlo.dynamic_slice":
        sizes = props_ints(props.get("slice_sizes"))
        if sizes is None:
            raise ValueError("needs property 'slice_sizes'")
        return "dynamic_slice", {"slice_sizes": sizes}, results, None
    if name in GENERIC_PLAIN:
        return name.partition(".")[2], {}, results, None
    return None


GENERIC_PLAIN = {
    "stablehlo.shift_left", "stablehlo.shift_right_arithmetic", "stablehlo.shift_right_logical",
    "stablehlo.dynamic_update_slice", "stablehlo.optimization_barrier",
}
SUPPORTED = frozenset(
    GENERIC_PLAIN
    | {"stablehlo.reduce_window", "stablehlo.dynamic_slice", "stablehlo.convolution",
       "stablehlo.custom_call", "stablehlo.composite", "chlo.top_k"}
)
GENERIC_ONLY_PRETTY = {"stablehlo.convolution", "stablehlo.custom_call", "stablehlo.composite",
                       "chlo.top_k"}
CONVERTERS_EXTRA = {
    "dynamic_slice": _dynamic_slice, "convolution": _convolution, "custom_call": _custom_call,
    "composite": _composite, "top_k": _top_k,
}
