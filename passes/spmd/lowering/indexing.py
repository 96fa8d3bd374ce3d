"""gather and scatter per device (the ops of rules/indexing.py).

Pass-through dims need little: a gather's sharded offset dim that it takes whole takes the whole
local block; batching dims are sharded alike on every tensor. The rest is about the operand dims
the start indices point into, whose indices are global:

- **gather, sharded indexed dim** (a collapsed dim, or a size-1 offset dim: a reduction factor,
  e.g. a vocab-parallel embedding table). Each device gathers from the rows it holds with the
  index shifted by its block's first row, after clamping it globally (StableHLO clamps); rows
  another device owns give zeros, so the result is a partial sum (`unreduced`), completed by the
  all_reduce or reduce_scatter insert-reshards put where a consumer needs it::

      %s = clamp 0, %i, n - 1            %l = %s - offset(axes)
      %g = gather %x_local, %l ...       %r = select (0 <= %l < rows), %g, 0

- **scatter, sharded inserted dim** (pass-through: operand and result are split alike). Each
  device scatters with the index shifted by its block's first row; an update whose row another
  device holds lands outside the block and is dropped (XLA's scatter semantics, which both
  executors implement; `jax.lax` FILL_OR_DROP).
- **scatter, sharded batch dim** (a batch dim of the indices and updates only: a reduction
  factor, e.g. the gradient of a data-parallel embedding lookup). Each device scatters its own
  updates; the result is a partial result, `unreduced` with the scatter's own reduction (add:
  sum, maximum: max, ...). The operand must count once: for add (multiply) only the first device
  of each group scatters into it, the others into zeros (ones); maximum and minimum are
  idempotent, so every device keeps it. The padding of an uneven batch dim is the identity.
  A `body` is that reduction when every input combines with the same one (`scatter_reduction`).
  A `replace` scatter, or a body that is no reduction, cannot be split so: insert-reshards
  (reshards/unlowerable.py) unshards its batch dims, as it does the operand dims an update
  window covers only in part.

An index dim the op has no start index for (always 0) gets one here, so it can be shifted.
"""

from __future__ import annotations

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.compute import scatter_parts
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import identity_value, scatter_reduction
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering
from shardc.passes.spmd.lowering.padding import mask


class StartIndices:
    """The start indices of a gather/scatter as one batch-shaped component per operand dim they
    index (`index_map`), which the lowering shifts, clamps or adds, then `join`s back."""

    def __init__(self, low: FunctionLowering, indices: Value, ivd: int, index_map: tuple[int, ...]):
        self.low = low
        self.dtype = indices.type.dtype
        shape = low.local_shape(indices)
        self.rank = len(shape)
        self.ivd = ivd
        self.batch_shape = tuple(n for i, n in enumerate(shape) if i != ivd)
        self.index_map = list(index_map)
        self.original = indices
        self.changed = False
        self.components: list[Value] = []
        for k in range(len(index_map)):
            if ivd == self.rank:
                self.components.append(indices)
                continue
            start = tuple(k if i == ivd else 0 for i in range(self.rank))
            limit = tuple(k + 1 if i == ivd else n for i, n in enumerate(shape))
            attrs = {"start_indices": start, "limit_indices": limit}
            piece = low.emit("slice", [indices], attrs, self._with_vector(1), self.dtype)
            self.components.append(low.emit("reshape", [piece], {}, self.batch_shape, self.dtype))

    def _with_vector(self, n: int) -> tuple[int, ...]:
        """The batch shape with an index vector dim of n entries at `ivd`."""
        shape = list(self.batch_shape)
        shape.insert(self.ivd, n)
        return tuple(shape)

    def get(self, d: int) -> Value:
        """Operand dim d's start index (batch-shaped); a zero component when d has none."""
        if d not in self.index_map:
            self.index_map.append(d)
            self.components.append(self.splat(self.low.const(0, self.dtype)))
            self.changed = True
        return self.components[self.index_map.index(d)]

    def set(self, d: int, value: Value) -> None:
        self.components[self.index_map.index(d)] = value
        self.changed = True

    def splat(self, scalar: Value) -> Value:
        return self.low.splat(scalar, self.batch_shape)

    def scalar(self, v: Value) -> Value:
        """An i32 scalar as the indices' element type."""
        if self.dtype == "i32":
            return v
        return self.low.emit("convert", [v], {}, (), self.dtype)

    def join(self) -> tuple[Value, int, tuple[int, ...]]:
        """(indices, index_vector_dim, index map) of the rewritten components."""
        if not self.changed:
            return self.original, self.ivd, tuple(self.index_map)
        if len(self.components) == 1 and self.ivd == self.rank:
            return self.components[0], self.ivd, tuple(self.index_map)
        one = self._with_vector(1)
        parts = [self.low.emit("reshape", [c], {}, one, self.dtype) for c in self.components]
        n = len(parts)
        joined = self.low.emit(
            "concatenate", parts, {"dimension": self.ivd}, self._with_vector(n), self.dtype
        )
        return joined, self.ivd, tuple(self.index_map)


def _shift(low: FunctionLowering, starts: StartIndices, x: Value, d: int) -> tuple[Value, Value]:
    """Shift dim d's start indices to this device's block of `x`: (local start, the i32 first
    global row of the block as the indices' type)."""
    m = low.mapping(x)
    assert m is not None
    first = starts.scalar(low.offset(m.dims[d].axes, low.local_shape(x)[d]))
    local = low.emit(
        "subtract", [starts.get(d), starts.splat(first)], {}, starts.batch_shape, starts.dtype
    )
    starts.set(d, local)
    return local, first


def fix_gather(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Whole local blocks for sharded whole-slice dims; sharded indexed dims gather locally and
    mask what another device owns (the result is then unreduced: see the module docstring)."""
    x, indices = op.operands
    sizes = list(attr(op, "slice_sizes"))
    collapsed = set(attr(op, "collapsed_slice_dims"))
    batching = set(attr(op, "operand_batching_dims"))
    full = low.global_shape(x)
    reduced = []
    for d in range(len(sizes)):
        if low.shards(x, d) == 1 or d in batching:
            continue
        if d in collapsed or (sizes[d] == 1 and full[d] > 1):
            reduced.append(d)  # the rule's reduction factors (collapsed or size-1 offset dims)
        elif sizes[d] == full[d]:
            sizes[d] = low.local_shape(x)[d]
    op.attributes["slice_sizes"] = tuple(sizes)
    if not reduced:
        return
    starts = StartIndices(
        low, indices, attr(op, "index_vector_dim"), attr(op, "start_index_map")
    )
    shape, itype = starts.batch_shape, starts.dtype
    valid: Value | None = None
    for d in reduced:
        clamped = low.emit(
            "clamp",
            [low.const(0, itype), starts.get(d), low.const(full[d] - 1, itype)],
            {},
            shape,
            itype,
        )
        starts.set(d, clamped)
        local, first = _shift(low, starts, x, d)
        rows = low.emit("subtract", [low.const(full[d], itype), first], {}, (), itype)
        rows = low.emit("minimum", [rows, low.const(low.local_shape(x)[d], itype)], {}, (), itype)
        ge = _compare(low, local, starts.splat(low.const(0, itype)), "GE")
        ok = low.emit("and", [ge, _compare(low, local, starts.splat(rows), "LT")], {}, shape, "i1")
        valid = ok if valid is None else low.emit("and", [valid, ok], {}, shape, "i1")
    new_indices, ivd, index_map = starts.join()
    op.set_operand(1, new_indices)
    op.attributes["index_vector_dim"] = ivd
    op.attributes["start_index_map"] = index_map
    assert valid is not None
    _zero_unowned(low, op, valid)


def _compare(low: FunctionLowering, a: Value, b: Value, direction: str) -> Value:
    attrs = {"comparison_direction": Keyword(direction)}
    return low.emit("compare", [a, b], attrs, low.local_shape(a), "i1")


def _zero_unowned(low: FunctionLowering, op: Operation, valid: Value) -> None:
    """After the gather, zero the result's batch positions whose row another device owns."""
    result = op.results[0]
    out_shape, dtype = low.local_shape(result), result.type.dtype
    offset_dims = set(attr(op, "offset_dims"))
    batch_dims = tuple(i for i in range(len(out_shape)) if i not in offset_dims)
    saved = low.anchor
    low.anchor = op.next
    keep = low.emit(
        "broadcast_in_dim", [valid], {"broadcast_dimensions": batch_dims}, out_shape, "i1"
    )
    zeros = low.const(0, dtype, out_shape)
    placeholder = low.emit("select", [keep, zeros, zeros], {}, out_shape, dtype)
    select = placeholder.defining_op
    assert select is not None
    result.replace_uses_if(placeholder, lambda use: use.op is not select)
    select.set_operand(1, result)
    low.replaced[id(placeholder)] = result
    low.anchor = saved


def fix_scatter(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Shift the indices of sharded inserted dims; with sharded batch dims, count each input
    once and pad the updates with the identity (see the module docstring). A variadic scatter
    (N inputs, the indices, N updates) does so for every input."""
    inputs, indices, updates = scatter_parts(op)
    n = len(inputs)
    operand = inputs[0]
    inserted = [d for d in attr(op, "inserted_window_dims") if low.shards(operand, d) > 1]
    if inserted:
        starts = StartIndices(
            low, indices, attr(op, "index_vector_dim"), attr(op, "scatter_dims_to_operand_dims")
        )
        for d in inserted:
            _shift(low, starts, operand, d)
        new_indices, ivd, index_map = starts.join()
        op.set_operand(n, new_indices)
        op.attributes["index_vector_dim"] = ivd
        op.attributes["scatter_dims_to_operand_dims"] = index_map
    result = low.mapping(op.results[0])
    if result is None or not result.unreduced:
        return
    kind = scatter_reduction(op)
    if kind is None:
        raise PassError(
            "'scatter' op without one add/maximum/minimum/multiply reduction cannot leave "
            "partial results (its batch dims are sharded); run insert-reshards before spmd",
            op.loc,
        )
    window = set(attr(op, "update_window_dims"))
    m = low.mapping(updates[0])
    full = low.global_shape(updates[0])
    padded = [
        (d, full[d], m.dims[d].axes)
        for d in range(len(full))
        if m is not None and d not in window and full[d] % max(m.num_shards(d), 1)
    ]
    for k, (x, u) in enumerate(zip(inputs, updates, strict=True)):
        dtype = x.type.dtype
        identity = identity_value(kind, dtype)
        if kind in ("add", "multiply"):
            shape = low.local_shape(x)
            first = low.is_first(tuple(result.unreduced))
            base = low.emit(
                "select", [first, x, low.const(identity, dtype, shape)], {}, shape, dtype
            )
            op.set_operand(k, base)
        if padded:
            op.set_operand(n + 1 + k, mask(low, u, padded, identity))
