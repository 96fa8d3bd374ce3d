"""Contractions, reductions and indexing (StableHLO semantics).

%0 = dot_general %q, %k {lhs_batching_dims = [0], rhs_batching_dims = [0],
                         lhs_contracting_dims = [2], rhs_contracting_dims = [2]}
     : tensor<4x8x8xf32>
%1 = reduce %x, %zero {dimensions = [1], kind = add} : tensor<8xf32>
%2 = gather %table, %ids {offset_dims = [1], collapsed_slice_dims = [0],
                          start_index_map = [0], index_vector_dim = 1,
                          slice_sizes = [1, 64]} : tensor<16x64xf32>
"""

from __future__ import annotations

import re

from shardc.ir.core import Operation
from shardc.ir.ops.linalg import dot_dims
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.ops.scalar_bodies import (  # also registers `sort`
    check_combiner,
    infer_body_reduce,
    verify_reduce,
)
from shardc.ir.types import TensorType

REDUCE_KINDS = ("add", "maximum", "minimum", "multiply", "and", "or")
SCATTER_KINDS = ("add", "maximum", "minimum", "multiply", "replace")


def _check_dims(op: Operation, dims, rank: int, what: str) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise op_error(op, f"{what} {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise op_error(op, f"{what} {list(dims)} repeats a dim")


def dot_algorithm(op: Operation) -> dict[str, str] | None:
    """The fields of a dot_general's `algorithm` (`#stablehlo.dot_algorithm<lhs_precision_type =
    bf16, ..., allow_imprecise_accumulation = false>`) as text by name, or None without one."""
    algorithm = op.attributes.get("algorithm")
    if algorithm is None:
        return None
    return dict(re.findall(r"(\w+)\s*=\s*([\w.]+)", getattr(algorithm, "text", str(algorithm))))


def dot_general_dims(op: Operation):
    """(lhs batching, rhs batching, lhs contracting, rhs contracting) dims of a dot_general, or
    of a `dot` seen as one."""
    if op.name == "dot":
        return dot_dims(op)
    return (
        attr(op, "lhs_batching_dims"),
        attr(op, "rhs_batching_dims"),
        attr(op, "lhs_contracting_dims"),
        attr(op, "rhs_contracting_dims"),
    )


def _infer_dot_general(op: Operation) -> list[TensorType]:
    lhs, rhs = op.operand(0).type, op.operand(1).type
    lb, rb, lc, rc = dot_general_dims(op)
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise op_error(op, "lhs and rhs must name the same number of batching and contracting dims")
    _check_dims(op, tuple(lb) + tuple(lc), lhs.rank, "lhs dim")
    _check_dims(op, tuple(rb) + tuple(rc), rhs.rank, "rhs dim")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise op_error(
                op, f"batching dims lhs {a} ({lhs.shape[a]}) and rhs {b} ({rhs.shape[b]}) differ"
            )
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise op_error(
                op,
                f"contracting dims lhs {a} (size {lhs.shape[a]}) and rhs {b} "
                f"(size {rhs.shape[b]}) differ",
            )
    shape = [lhs.shape[d] for d in lb]
    shape += [n for d, n in enumerate(lhs.shape) if d not in lb and d not in lc]
    shape += [n for d, n in enumerate(rhs.shape) if d not in rb and d not in rc]
    dtype = op.results[0].type.dtype if op.results else lhs.dtype
    return [TensorType(tuple(shape), dtype)]


def _infer_reduce(op: Operation) -> list[TensorType]:
    if ("kind" in op.attributes) == ("body" in op.attributes):
        raise op_error(op, "needs exactly one of 'kind' (add, maximum, ...) and 'body' (@f)")
    if "body" in op.attributes:
        return infer_body_reduce(op, _check_dims)
    if op.num_operands != 2:
        raise op_error(op, f"with 'kind' takes 2 operands (input, init), got {op.num_operands}")
    src, init = op.operand(0).type, op.operand(1).type
    dims = attr(op, "dimensions")
    _check_dims(op, dims, src.rank, "dimension")
    if init.rank != 0 or init.dtype != src.dtype:
        raise op_error(op, f"init value must be a scalar of {src.dtype}, got {init.tensor}")
    shape = tuple(n for d, n in enumerate(src.shape) if d not in dims)
    return [TensorType(shape, src.dtype)]


def gather_result_shape(op: Operation, operand: TensorType, indices: TensorType) -> tuple[int, ...]:
    offset_dims = attr(op, "offset_dims")
    collapsed = attr(op, "collapsed_slice_dims")
    obatch = attr(op, "operand_batching_dims")
    start_index_map = attr(op, "start_index_map")
    ivd = attr(op, "index_vector_dim")
    slice_sizes = attr(op, "slice_sizes")
    if len(slice_sizes) != operand.rank:
        raise op_error(
            op, f"slice_sizes has {len(slice_sizes)} entries, operand rank is {operand.rank}"
        )
    for d, s in enumerate(slice_sizes):
        if not 0 <= s <= operand.shape[d]:
            raise op_error(op, f"slice size {s} does not fit operand dim {d} ({operand.shape[d]})")
    _check_dims(op, tuple(collapsed) + tuple(obatch), operand.rank, "collapsed/batching dim")
    for d in tuple(collapsed) + tuple(obatch):
        if slice_sizes[d] > 1:
            raise op_error(op, f"collapsed dim {d} must have slice size <= 1")
    if not 0 <= ivd <= indices.rank:
        raise op_error(
            op, f"index_vector_dim {ivd} is out of range for indices rank {indices.rank}"
        )
    index_len = indices.shape[ivd] if ivd < indices.rank else 1
    if len(start_index_map) != index_len:
        raise op_error(
            op,
            f"start_index_map has {len(start_index_map)} entries, index vectors have {index_len}",
        )
    batch = [n for d, n in enumerate(indices.shape) if d != ivd]
    offsets = [s for d, s in enumerate(slice_sizes) if d not in collapsed and d not in obatch]
    rank = len(batch) + len(offsets)
    if len(offset_dims) != len(offsets):
        raise op_error(op, f"offset_dims has {len(offset_dims)} entries, expected {len(offsets)}")
    _check_dims(op, offset_dims, rank, "offset dim")
    shape, bi, oi = [], 0, 0
    for d in range(rank):
        if d in offset_dims:
            shape.append(offsets[oi])
            oi += 1
        else:
            shape.append(batch[bi])
            bi += 1
    return tuple(shape)


def _infer_gather(op: Operation) -> list[TensorType]:
    operand, indices = op.operand(0).type, op.operand(1).type
    if not indices.dtype.startswith(("i", "ui")):
        raise op_error(op, f"start indices must be integers, got {indices.dtype}")
    return [TensorType(gather_result_shape(op, operand, indices), operand.dtype)]


def scatter_parts(op: Operation) -> tuple[list, object, list]:
    """(inputs, scatter_indices, updates) of a scatter: N inputs, the indices, N updates."""
    n = (op.num_operands - 1) // 2
    return list(op.operands[:n]), op.operands[n], list(op.operands[n + 1 :])


def _infer_scatter(op: Operation) -> list[TensorType]:
    if op.num_operands < 3 or op.num_operands % 2 == 0:
        raise op_error(
            op, f"takes N inputs, the indices and N updates, got {op.num_operands} operands"
        )
    inputs, indices_value, all_updates = scatter_parts(op)
    operand, indices, updates = inputs[0].type, indices_value.type, all_updates[0].type
    for i, (x, u) in enumerate(zip(inputs, all_updates)):
        if x.type.shape != operand.shape or u.type.shape != updates.shape:
            raise op_error(op, f"input/update {i} has another shape than input/update 0")
        if u.type.dtype != x.type.dtype:
            raise op_error(
                op, f"updates {i} have element type {u.type.dtype}, input {x.type.dtype}"
            )
    if not indices.dtype.startswith(("i", "ui")):
        raise op_error(op, f"scatter indices must be integers, got {indices.dtype}")
    window = attr(op, "update_window_dims")
    inserted = attr(op, "inserted_window_dims")
    ibatch = attr(op, "input_batching_dims")
    ivd = attr(op, "index_vector_dim")
    _check_dims(op, window, updates.rank, "update window dim")
    _check_dims(op, tuple(inserted) + tuple(ibatch), operand.rank, "inserted/batching dim")
    if not 0 <= ivd <= indices.rank:
        raise op_error(
            op, f"index_vector_dim {ivd} is out of range for indices rank {indices.rank}"
        )
    batch = [n for d, n in enumerate(indices.shape) if d != ivd]
    update_batch = [n for d, n in enumerate(updates.shape) if d not in window]
    if batch != update_batch:
        raise op_error(
            op, f"update scatter dims {update_batch} must match index batch dims {batch}"
        )
    if len(window) + len(inserted) + len(ibatch) != operand.rank:
        raise op_error(
            op,
            "update_window_dims + inserted_window_dims + input_batching_dims "
            "must cover the operand rank",
        )
    return [TensorType(x.type.shape, x.type.dtype) for x in inputs]


def _verify_scatter(op: Operation) -> None:
    inputs, _, _ = scatter_parts(op)
    if len(op.results) != len(inputs):
        raise op_error(op, f"has {len(inputs)} inputs but {len(op.results)} results")
    check_combiner(op, [x.type.dtype for x in inputs],
                   "(input0, input1, ..., update0, update1, ...) -> (input0, ...)")


_DOT_ATTRS = {
    "lhs_batching_dims": opt("ints", ()),
    "rhs_batching_dims": opt("ints", ()),
    "lhs_contracting_dims": opt("ints", ()),
    "rhs_contracting_dims": opt("ints", ()),
    "precision": opt("any", None),
    "algorithm": opt("any", None),  # #stablehlo.dot_algorithm<...>, kept as an OpaqueAttr
}
register(OpDef("dot_general", 2, 1, _DOT_ATTRS, _infer_dot_general))
register(
    OpDef(
        "reduce",
        None,
        None,
        {
            "dimensions": req("ints"),
            "kind": opt("keyword", None, *REDUCE_KINDS),
            "body": opt("symbol", None),
        },
        _infer_reduce,
        verify_reduce,
    )
)
register(
    OpDef(
        "gather",
        2,
        1,
        {
            "offset_dims": req("ints"),
            "collapsed_slice_dims": opt("ints", ()),
            "operand_batching_dims": opt("ints", ()),
            "start_indices_batching_dims": opt("ints", ()),
            "start_index_map": req("ints"),
            "index_vector_dim": req("int"),
            "slice_sizes": req("ints"),
            "indices_are_sorted": opt("bool", False),
        },
        _infer_gather,
    )
)
register(
    OpDef(
        "scatter",
        None,
        None,
        {
            "update_window_dims": req("ints"),
            "inserted_window_dims": opt("ints", ()),
            "input_batching_dims": opt("ints", ()),
            "scatter_indices_batching_dims": opt("ints", ()),
            "scatter_dims_to_operand_dims": req("ints"),
            "index_vector_dim": req("int"),
            "kind": opt("keyword", None, *SCATTER_KINDS),
            "body": opt("symbol", None),
            "indices_are_sorted": opt("bool", False),
            "unique_indices": opt("bool", False),
        },
        _infer_scatter,
        _verify_scatter,
    )
)
