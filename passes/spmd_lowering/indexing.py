"""gather per device (the ops of rules/indexing.py): sharded offset dims gather the local slice;
a sharded indexed dim gathers from the local rows with shifted indices and zeroes the rows
another device owns (a partial sum). A scatter with a sharded reduction factor is not lowered
yet (locality.py's `no_sharded_reduction`)."""

from __future__ import annotations

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.ops.registry import attr
from shardc.passes.rules.rule import OpShardingRule
from shardc.passes.spmd_lowering.function_lowering import FunctionLowering


def fix_gather(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Sharded offset dims gather the local slice. A sharded *indexed* dim (a collapsed dim the
    rule makes a reduction factor, e.g. a vocab-parallel embedding table) gathers from the
    local rows with indices shifted by the shard's start; rows owned by another device give
    zeros, so the result is a partial sum (`unreduced`), completed by the all_reduce or
    reduce_scatter that insert-reshards placed after it."""
    x, indices = op.operands
    sizes = list(attr(op, "slice_sizes"))
    collapsed = set(attr(op, "collapsed_slice_dims"))
    full = low.global_shape(x)
    for d in range(len(sizes)):
        # A sharded dim the gather takes whole takes the whole local block; collapsed and
        # batching dims keep their slice size 1.
        if low.shards(x, d) > 1 and sizes[d] == full[d] and d not in collapsed:
            sizes[d] = low.local_shape(x)[d]
    op.attributes["slice_sizes"] = tuple(sizes)
    m = low.mapping(x)
    sharded = [
        (k, d)
        for k, d in enumerate(attr(op, "start_index_map"))
        if m is not None and m.num_shards(d) > 1 and d in collapsed
    ]
    if sharded:
        _localize_gather_indices(low, op, sharded)


def _localize_gather_indices(
    low: FunctionLowering, op: Operation, sharded: list[tuple[int, int]]
) -> None:
    x, indices = op.operands
    m = low.mapping(x)
    assert m is not None
    ivd = attr(op, "index_vector_dim")
    ishape, itype = low.local_shape(indices), indices.type.dtype
    rank = len(ishape)
    batch_shape = tuple(n for i, n in enumerate(ishape) if i != ivd)
    components: list[Value] = []
    width = 1 if ivd == rank else ishape[ivd]
    for k in range(width):
        if ivd == rank:
            components.append(indices)
            continue
        start = tuple(k if i == ivd else 0 for i in range(rank))
        limit = tuple(k + 1 if i == ivd else n for i, n in enumerate(ishape))
        piece = low.emit(
            "slice",
            [indices],
            {"start_indices": start, "limit_indices": limit},
            tuple(1 if i == ivd else n for i, n in enumerate(ishape)),
            itype,
        )
        components.append(low.emit("reshape", [piece], {}, batch_shape, itype))
    valid: Value | None = None
    for k, d in sharded:
        n, chunk = low.global_shape(x)[d], low.local_shape(x)[d]
        start = low.offset(m.dims[d].axes, chunk)  # i32: first global row this device holds
        if itype != "i32":
            start = low.emit("convert", [start], {}, (), itype)
        rows = low.emit("subtract", [low.const(n, itype), start], {}, (), itype)
        rows = low.emit("minimum", [rows, low.const(chunk, itype)], {}, (), itype)
        b_start = low.emit(
            "broadcast_in_dim", [start], {"broadcast_dimensions": ()}, batch_shape, itype
        )
        b_rows = low.emit(
            "broadcast_in_dim", [rows], {"broadcast_dimensions": ()}, batch_shape, itype
        )
        local = low.emit("subtract", [components[k], b_start], {}, batch_shape, itype)
        zero = low.emit(
            "broadcast_in_dim",
            [low.const(0, itype)],
            {"broadcast_dimensions": ()},
            batch_shape,
            itype,
        )
        ge = low.emit(
            "compare", [local, zero], {"comparison_direction": Keyword("GE")}, batch_shape, "i1"
        )
        lt = low.emit(
            "compare", [local, b_rows], {"comparison_direction": Keyword("LT")}, batch_shape, "i1"
        )
        ok = low.emit("and", [ge, lt], {}, batch_shape, "i1")
        valid = ok if valid is None else low.emit("and", [valid, ok], {}, batch_shape, "i1")
        components[k] = local
    if ivd == rank:
        new_indices = components[0]
    else:
        parts = [
            low.emit(
                "reshape", [c], {}, tuple(1 if i == ivd else n for i, n in enumerate(ishape)), itype
            )
            for c in components
        ]
        new_indices = low.emit("concatenate", parts, {"dimension": ivd}, ishape, itype)
    op.set_operand(1, new_indices)
    # Zero the rows this device does not own: after the gather, select on the batch positions.
    assert op.parent is not None and valid is not None
    result = op.results[0]
    out_shape, dtype = low.local_shape(result), result.type.dtype
    offset_dims = set(attr(op, "offset_dims"))
    batch_dims = tuple(i for i in range(len(out_shape)) if i not in offset_dims)
    saved = low.anchor
    low.anchor = op.next
    mask = low.emit(
        "broadcast_in_dim", [valid], {"broadcast_dimensions": batch_dims}, out_shape, "i1"
    )
    zeros = low.const(0, dtype, out_shape)
    placeholder = low.emit("select", [mask, zeros, zeros], {}, out_shape, dtype)
    result.replace_uses_if(placeholder, lambda use: use.op is not placeholder.defining_op)
    placeholder.defining_op.set_operand(1, result)
    low.replaced[id(placeholder)] = result
    low.anchor = saved
