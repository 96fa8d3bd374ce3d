"""Export of the region-free ops beyond the core set, in the form MLIR prints them:

    %0 = stablehlo.dynamic_slice %arg0, %1, %c, sizes = [4, 32] : (...) -> tensor<4x32xf32>
    %1 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1,
         f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, ...}
    %2 = "stablehlo.reduce_window"(%x, %init) <{...}> ({ ^bb0(...): ... }) : (...) -> ...
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<16x32xf32> -> (...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.attributes import OpaqueAttr, Symbol
from shardc.ir.core import Operation
from shardc.ir.ops import attr
from shardc.ir.ops.window import CONV_DIMS
from shardc.ir.types import TensorType
from shardc.stablehlo.mlir_text import functional_type as _functional
from shardc.stablehlo.mlir_text import int_list as _ints
from shardc.stablehlo.mlir_text import tensor_text as _ty

if TYPE_CHECKING:
    from shardc.stablehlo.exporter import _Names, _Printer

# MLIR's names for results of ops with an OpAsmOpInterface.
RESULT_NAMES = {"top_k": ("values", "indices")}
_PLAIN = {"shift_left", "shift_right_arithmetic", "shift_right_logical"}








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
    for key, native in (("stride", "window_strides"), ("pad", "padding"),
                        ("lhs_dilate", "lhs_dilation"), ("rhs_dilate", "rhs_dilation"),
                        ("reverse", "window_reversal")):
        value = at.get(native)
        if value is None:
            continue
        if native == "padding":
            window.append(f"{key} = [" + ", ".join(_ints(p) for p in value) + "]")
        elif native == "window_reversal":
            window.append(f"{key} = [" + ", ".join("true" if b else "false" for b in value) + "]")
        else:
            window.append(f"{key} = {_ints(value)}")
    if window:
        text += ", window = {" + ", ".join(window) + "}"
    return text


def _padding_dense(pairs: tuple) -> str:
    flat = [int(v) for p in pairs for v in p]
    shape = f"tensor<{len(pairs)}x2xi64>"
    if flat and all(v == flat[0] for v in flat):
        return f"dense<{flat[0]}> : {shape}"
    return "dense<[" + ", ".join(_ints(p) for p in pairs) + f"]> : {shape}"


def _reduce_window(p: _Printer, op: Operation, n: _Names, indent: str, args: str) -> list[str]:
    at = op.attributes
    from shardc.stablehlo.attributes import REDUCER_ATTRS

    props = []
    for key in ("base_dilations", "padding", "window_dilations", "window_dimensions",
                "window_strides"):
        value = at.get(key)
        if value is None:
            continue
        if key == "padding":
            props.append(f"padding = {_padding_dense(value)}")
        else:
            props.append(f"{key} = array<i64: " + ", ".join(str(v) for v in value) + ">")
    scalar = _ty(TensorType((), op.results[0].type.dtype))
    a0, a1 = f"%arg{n.next_arg}", f"%arg{n.next_arg + 1}"
    inner = f"%{n.next_value}"
    kind = at["kind"].word
    body_attrs = at.get(REDUCER_ATTRS)
    body = f" {body_attrs.text}" if body_attrs is not None else ""
    return [
        f"{indent}{n.group(op)}\"stablehlo.reduce_window\"({args}) <{{{', '.join(props)}}}> ({{",
        f"{indent}^bb0({a0}: {scalar}, {a1}: {scalar}):",
        f"{indent}  {inner} = stablehlo.{kind} {a0}, {a1}{body} : {scalar}",
        f"{indent}  stablehlo.return {inner} : {scalar}",
        f"{indent}}}){p.op_attrs(op)} : {_functional(op)}" + p.loc(op.loc, op.loc_written),
    ]


def _symbol(name: str) -> str:
    import re

    from shardc.stablehlo.exporter import attr_text

    return "@" + name if re.fullmatch(r"[A-Za-z_][\w$.\-]*", name) else "@" + attr_text(name)


def extra_op_text(
    p: _Printer, op: Operation, n: _Names, indent: str, args: str
) -> list[str] | None:
    """The op's lines, or None when it is not one of this module's ops."""
    name = op.name
    a = p.op_attrs
    if name == "reduce_window":
        return _reduce_window(p, op, n, indent, args)
    if name == "dynamic_slice":
        sizes = _ints(op.attributes["slice_sizes"])
        text = f"stablehlo.dynamic_slice {args}, sizes = {sizes}{a(op)} : {_functional(op)}"
    elif name == "dynamic_update_slice":
        text = f"stablehlo.dynamic_update_slice {args}{a(op)} : {_functional(op)}"
    elif name in _PLAIN:
        types = {_ty(v.type) for v in op.operands} | {_ty(op.results[0].type)}
        sig = types.pop() if len(types) == 1 else _functional(op)
        text = f"stablehlo.{name} {args}{a(op)} : {sig}"
    elif name == "optimization_barrier":
        types = ", ".join(_ty(v.type) for v in op.operands)
        text = f"stablehlo.optimization_barrier {args}{a(op)} : {types}"
    elif name == "convolution":
        extra = {
            "batch_group_count": attr(op, "batch_group_count"),
            "feature_group_count": attr(op, "feature_group_count"),
        }
        precision = op.attributes.get("precision")
        if precision is not None:
            extra["precision_config"] = OpaqueAttr(
                "[" + ", ".join(f"#stablehlo<precision {w.word}>" for w in precision) + "]"
            )
        text = (f"stablehlo.convolution({args}) {_conv_head(op)}{p.op_attrs(op, extra=extra)} : "
                f"{_functional(op)}")
    elif name == "custom_call":
        target = _symbol(op.attributes["call_target_name"])
        text = f"stablehlo.custom_call {target}({args}){a(op)} : {_functional(op)}"
    elif name == "composite":
        from shardc.stablehlo.exporter import attr_text

        extra = {"decomposition": Symbol(op.attributes["decomposition"].name)}
        for key in ("composite_attributes", "version"):
            if op.attributes.get(key) is not None:
                extra[key] = op.attributes[key]
        label = attr_text(op.attributes["name"])
        text = (f"stablehlo.composite {label} {args}{p.op_attrs(op, extra=extra)} : "
                f"{_functional(op)}")
    elif name == "top_k":
        k = op.attributes["k"]
        outs = ", ".join(_ty(r.type) for r in op.results)
        text = (f"chlo.top_k({args}, k = {k}){a(op)} : {_ty(op.operands[0].type)} -> ({outs})")
    else:
        return None
    return [indent + n.group(op) + text + p.loc(op.loc, op.loc_written)]
