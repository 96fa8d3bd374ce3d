"""Windowed ops: convolution and reduce_window (StableHLO semantics).

%y = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 3,
        input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2,
        kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1],
        output_batch_dimension = 0, output_feature_dimension = 3,
        output_spatial_dimensions = [1, 2], padding = [[1, 1], [1, 1]]} : tensor<8x16x16x16xf32>
%p = reduce_window %x, %zero {kind = add, window_dimensions = [1, 2, 2, 1],
        window_strides = [1, 2, 2, 1]} : tensor<8x8x8x16xf32>
%g = select_and_scatter %x, %dp, %zero {kind = add, select = @main_select,
        window_dimensions = [1, 2, 2, 1], window_strides = [1, 2, 2, 1]} : tensor<8x16x16x16xf32>

`select_and_scatter` (max-pool's gradient): in each window of the operand the `select` function
(`(a, b) -> i1`: keep `a` over `b`) picks one element, and the source element of that window is
combined (`kind`, or a `body` function) into the result at that place, which starts as the init.

Optional window attributes default to StableHLO's defaults (strides, dilations 1; padding 0; no
reversal; group counts 1) and are printed back only when written.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.compute import REDUCE_KINDS
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.ops.scalar_bodies import check_combiner, check_scalar_signature
from shardc.ir.types import TensorType

CONV_DIMS = (
    "input_batch_dimension",
    "input_feature_dimension",
    "input_spatial_dimensions",
    "kernel_input_feature_dimension",
    "kernel_output_feature_dimension",
    "kernel_spatial_dimensions",
    "output_batch_dimension",
    "output_feature_dimension",
    "output_spatial_dimensions",
)


def window_output_size(
    op: Operation, n: int, window: int, stride: int, lo: int, hi: int, base: int, dil: int
) -> int:
    """Size of one windowed output dim: the dilated, padded input over the dilated window."""
    if stride < 1 or base < 1 or dil < 1:
        raise op_error(op, "window strides and dilations must be >= 1")
    padded = (n - 1) * base + 1 + lo + hi if n else lo + hi
    span = (window - 1) * dil + 1 if window else 0
    return max(0, (padded - span) // stride + 1) if padded >= span else 0


def _spatial_attr(op: Operation, key: str, count: int, default: int) -> tuple[int, ...]:
    value = attr(op, key)
    if value is None:
        return (default,) * count
    if len(value) != count:
        raise op_error(op, f"{key} has {len(value)} entries, expected {count}")
    return tuple(value)


def conv_padding(op: Operation, count: int, key: str = "padding") -> tuple[tuple[int, int], ...]:
    value = attr(op, key)
    if value is None:
        return ((0, 0),) * count
    if len(value) != count or any(len(p) != 2 for p in value):
        raise op_error(op, f"{key} must have {count} [low, high] pairs")
    return tuple((int(lo), int(hi)) for lo, hi in value)


def _check_perm(op: Operation, dims: tuple[int, ...], rank: int, what: str) -> None:
    if sorted(dims) != list(range(rank)):
        raise op_error(op, f"{what} dimension numbers {list(dims)} must name each dim once")


def _infer_convolution(op: Operation) -> list[TensorType]:
    lhs, rhs = op.operand(0).type, op.operand(1).type
    d = {k: attr(op, k) for k in CONV_DIMS}
    n = len(d["input_spatial_dimensions"])
    if len(d["kernel_spatial_dimensions"]) != n or len(d["output_spatial_dimensions"]) != n:
        raise op_error(op, "input, kernel and output must have the same number of spatial dims")
    if lhs.rank != n + 2 or rhs.rank != n + 2:
        raise op_error(op, f"operands must have rank {n + 2} for {n} spatial dims")
    _check_perm(
        op,
        (d["input_batch_dimension"], d["input_feature_dimension"], *d["input_spatial_dimensions"]),
        lhs.rank,
        "input",
    )
    _check_perm(
        op,
        (
            d["kernel_input_feature_dimension"],
            d["kernel_output_feature_dimension"],
            *d["kernel_spatial_dimensions"],
        ),
        rhs.rank,
        "kernel",
    )
    out_dims = (
        d["output_batch_dimension"],
        d["output_feature_dimension"],
        *d["output_spatial_dimensions"],
    )
    _check_perm(op, out_dims, n + 2, "output")
    fgc, bgc = attr(op, "feature_group_count"), attr(op, "batch_group_count")
    if fgc < 1 or bgc < 1 or (fgc > 1 and bgc > 1):
        raise op_error(op, "group counts must be >= 1 and at most one of them > 1")
    in_feat = lhs.shape[d["input_feature_dimension"]]
    k_in = rhs.shape[d["kernel_input_feature_dimension"]]
    k_out = rhs.shape[d["kernel_output_feature_dimension"]]
    batch = lhs.shape[d["input_batch_dimension"]]
    if in_feat != k_in * fgc:
        raise op_error(
            op, f"input features ({in_feat}) must be kernel input features ({k_in}) x "
            f"feature_group_count ({fgc})"
        )
    if k_out % fgc or k_out % bgc or batch % bgc:
        raise op_error(op, "kernel output features and batch must divide by the group counts")
    strides = _spatial_attr(op, "window_strides", n, 1)
    lhs_dil = _spatial_attr(op, "lhs_dilation", n, 1)
    rhs_dil = _spatial_attr(op, "rhs_dilation", n, 1)
    padding = conv_padding(op, n)
    reversal = attr(op, "window_reversal")
    if reversal is not None and len(reversal) != n:
        raise op_error(op, f"window_reversal has {len(reversal)} entries, expected {n}")
    shape = [0] * (n + 2)
    shape[d["output_batch_dimension"]] = batch // bgc
    shape[d["output_feature_dimension"]] = k_out
    for i in range(n):
        size = lhs.shape[d["input_spatial_dimensions"][i]]
        window = rhs.shape[d["kernel_spatial_dimensions"][i]]
        lo, hi = padding[i]
        shape[d["output_spatial_dimensions"][i]] = window_output_size(
            op, size, window, strides[i], lo, hi, lhs_dil[i], rhs_dil[i]
        )
    dtype = op.results[0].type.dtype if op.results else lhs.dtype
    return [TensorType(tuple(shape), dtype)]


def reduce_window_parts(op: Operation) -> tuple[list, list]:
    """(inputs, inits) of a reduce_window: N inputs, then one init value per input."""
    n = op.num_operands // 2
    return list(op.operands[:n]), list(op.operands[n:])


def _infer_reduce_window(op: Operation) -> list[TensorType]:
    if op.num_operands < 2 or op.num_operands % 2:
        raise op_error(op, f"takes N inputs then N init values, got {op.num_operands} operands")
    inputs, inits = reduce_window_parts(op)
    x = inputs[0].type
    for i, (v, init) in enumerate(zip(inputs, inits)):
        if v.type.shape != x.shape:
            raise op_error(op, f"input {i} has shape {list(v.type.shape)}, input 0 {list(x.shape)}")
        if init.type.rank != 0 or init.type.dtype != v.type.dtype:
            raise op_error(
                op, f"init value {i} must be a scalar of {v.type.dtype}, got {init.type.tensor}"
            )
    window = attr(op, "window_dimensions")
    r = x.rank
    if len(window) != r:
        raise op_error(op, f"window_dimensions has {len(window)} entries, operand rank is {r}")
    strides = _spatial_attr(op, "window_strides", r, 1)
    base = _spatial_attr(op, "base_dilations", r, 1)
    dil = _spatial_attr(op, "window_dilations", r, 1)
    padding = conv_padding(op, r)
    shape = tuple(
        window_output_size(op, x.shape[i], window[i], strides[i], *padding[i], base[i], dil[i])
        for i in range(r)
    )
    return [TensorType(shape, v.type.dtype) for v in inputs]


def _verify_reduce_window(op: Operation) -> None:
    inputs, _ = reduce_window_parts(op)
    if len(op.results) != len(inputs):
        raise op_error(op, f"has {len(inputs)} inputs but {len(op.results)} results")
    check_combiner(op, [v.type.dtype for v in inputs],
                   "(acc0, acc1, ..., x0, x1, ...) -> (acc0, ...)")


def _infer_select_and_scatter(op: Operation) -> list[TensorType]:
    x, source, init = (v.type for v in op.operands)
    r = x.rank
    window = attr(op, "window_dimensions") or (1,) * r
    strides = attr(op, "window_strides") or (1,) * r
    if len(window) != r or len(strides) != r:
        raise op_error(op, f"window_dimensions and window_strides need {r} entries")
    padding = conv_padding(op, r)
    windows = tuple(
        window_output_size(op, x.shape[i], window[i], strides[i], *padding[i], 1, 1)
        for i in range(r)
    )
    if source.shape != windows:
        raise op_error(op, f"source has shape {list(source.shape)}, the windows {list(windows)}")
    if init.rank != 0 or init.dtype != source.dtype or source.dtype != x.dtype:
        raise op_error(op, f"source and init must be of the operand's type {x.dtype}")
    return [TensorType(x.shape, x.dtype)]


def _verify_select_and_scatter(op: Operation) -> None:
    dtype = op.operand(0).type.dtype
    check_scalar_signature(op, "select", [dtype, dtype], ["i1"], "(a, b) -> keep a")
    check_combiner(op, [dtype], "(acc, source element) -> acc")


register(
    OpDef(
        "select_and_scatter",
        3,
        1,
        {
            "select": req("symbol"),
            "kind": opt("keyword", None, *REDUCE_KINDS),
            "body": opt("symbol", None),
            "window_dimensions": opt("ints", None),
            "window_strides": opt("ints", None),
            "padding": opt("int_groups", None),
        },
        _infer_select_and_scatter,
        _verify_select_and_scatter,
        summary="scatter each window's source element to the place `select` picks",
    )
)
register(
    OpDef(
        "convolution",
        2,
        1,
        {
            "input_batch_dimension": req("int"),
            "input_feature_dimension": req("int"),
            "input_spatial_dimensions": req("ints"),
            "kernel_input_feature_dimension": req("int"),
            "kernel_output_feature_dimension": req("int"),
            "kernel_spatial_dimensions": req("ints"),
            "output_batch_dimension": req("int"),
            "output_feature_dimension": req("int"),
            "output_spatial_dimensions": req("ints"),
            "window_strides": opt("ints", None),
            "padding": opt("int_groups", None),
            "lhs_dilation": opt("ints", None),
            "rhs_dilation": opt("ints", None),
            "window_reversal": opt("any", None),
            "feature_group_count": opt("int", 1),
            "batch_group_count": opt("int", 1),
            "precision": opt("any", None),
        },
        _infer_convolution,
    )
)
register(
    OpDef(
        "reduce_window",
        None,
        None,
        {
            "window_dimensions": req("ints"),
            "window_strides": opt("ints", None),
            "base_dilations": opt("ints", None),
            "window_dilations": opt("ints", None),
            "padding": opt("int_groups", None),
            "kind": opt("keyword", None, *REDUCE_KINDS),
            "body": opt("symbol", None),
        },
        _infer_reduce_window,
        _verify_reduce_window,
    )
)
