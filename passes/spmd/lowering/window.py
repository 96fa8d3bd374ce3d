"""dynamic_slice, dynamic_update_slice and convolution per device (the ops of rules/window.py).

After insert-reshards every need_replication/permutation factor is unsharded, so:

- `dynamic_slice` takes whole local blocks along its sharded (pass-through) dims: their slice
  size becomes the local size; the start index there is clamped to 0 both globally and locally.
- `dynamic_update_slice` with a sharded operand dim that the update covers only in part: the
  start index is global, so each device places the part of the update that falls in its block.
  The update (and a mask of ones) is padded by one local block on each side of such dims and
  cut at `block offset - start + block size`; the cut is in range by construction, and the mask
  selects update or operand element by element::

      %u = pad %update, 0 (low = high = L)     %m = pad true, false (low = high = L)
      %t = offset(axes) - clamp(0, %start, n - u) + L
      %r = select dynamic_slice(%m, %t), dynamic_slice(%u, %t), %operand

- `convolution` zeroes the padding of uneven sharded input features on both sides (they are
  contracted), and a sharded group dim divides the group count.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering
from shardc.passes.spmd.lowering.padding import mask


def fix_dynamic_slice(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    op.attributes["slice_sizes"] = low.whole_blocks(op.operand(0), attr(op, "slice_sizes"))


def fix_dynamic_update_slice(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    x, update, *indices = op.operands
    full, ufull = low.global_shape(x), low.global_shape(update)
    rank = len(full)
    partial = [d for d in range(rank) if ufull[d] < full[d]]
    m = low.mapping(x)
    if m is None or not any(low.shards(x, d) > 1 for d in partial):
        return
    block, ulocal = low.local_shape(x), low.local_shape(update)
    dtype = x.type.dtype
    margin = tuple(block[d] if d in partial else 0 for d in range(rank))
    padded = tuple(u + 2 * p for u, p in zip(ulocal, margin))
    pads = {"edge_padding_low": margin, "edge_padding_high": margin}
    pu = low.emit("pad", [update, low.const(0, dtype)], pads, padded, dtype)
    ones = low.const(True, "i1", ulocal)
    pm = low.emit("pad", [ones, low.const(False, "i1")], pads, padded, "i1")
    starts = []
    for d in range(rank):
        if d not in partial:
            starts.append(low.const(0, "i32"))
            continue
        s = indices[d]
        if s.type.dtype != "i32":
            s = low.emit("convert", [s], {}, (), "i32")
        s = low.emit(
            "clamp", [low.const(0, "i32"), s, low.const(full[d] - ufull[d], "i32")], {}, (), "i32"
        )
        if low.shards(x, d) > 1:
            offset = low.offset(m.dims[d].axes, block[d])
            delta = low.emit("subtract", [offset, s], {}, (), "i32")
        else:
            delta = low.emit("negate", [s], {}, (), "i32")
        starts.append(low.emit("add", [delta, low.const(block[d], "i32")], {}, (), "i32"))
    sizes = {"slice_sizes": tuple(block)}
    piece = low.emit("dynamic_slice", [pu, *starts], sizes, block, dtype)
    mask = low.emit("dynamic_slice", [pm, *starts], sizes, block, "i1")
    low.replace(op, low.emit("select", [mask, piece, x], {}, block, dtype))


def fix_convolution(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    lhs, rhs = op.operands
    in_feat = attr(op, "input_feature_dimension")
    k_in = attr(op, "kernel_input_feature_dimension")
    n, k = low.global_shape(lhs)[in_feat], low.shards(lhs, in_feat)
    fgc, bgc = attr(op, "feature_group_count"), attr(op, "batch_group_count")
    if k > 1 and n % k and fgc == 1:
        lm, rm = low.mapping(lhs), low.mapping(rhs)
        assert lm is not None and rm is not None
        op.set_operand(0, mask(low, lhs, [(in_feat, n, lm.dims[in_feat].axes)], 0))
        op.set_operand(1, mask(low, rhs, [(k_in, n, rm.dims[k_in].axes)], 0))
    if fgc > 1 and k > 1:
        op.attributes["feature_group_count"] = (
            low.local_shape(lhs)[in_feat] // low.local_shape(rhs)[k_in]
        )
    batch = attr(op, "input_batch_dimension")
    if bgc > 1 and low.shards(lhs, batch) > 1:
        out_batch = attr(op, "output_batch_dimension")
        op.attributes["batch_group_count"] = (
            low.local_shape(lhs)[batch] // low.local_shape(op.results[0])[out_batch]
        )
