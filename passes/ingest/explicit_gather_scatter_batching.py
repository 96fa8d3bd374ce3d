"""`explicit-gather-scatter-batching`: a gather or scatter whose leading operand dim is indexed
by an iota (row `i` of the indices reads row `i` of the operand) gets that dim as an explicit
batching dim, so propagation sees a batch factor shared by operand, indices and result instead
of an indexed dim it must replicate (Shardy's `sdy-explicit-gather-scatter-batching`).

    %iota = iota {iota_dimension = 0} : tensor<4x1xi32>
    %idx = concatenate(%iota, %col) {dimension = 1} : tensor<4x2xi32>
    %r = gather(%x, %idx) {offset_dims = [1], collapsed_slice_dims = [0],
                           start_index_map = [0, 1], index_vector_dim = 1, ...}
  becomes
    %r = gather(%x, %col) {offset_dims = [1], collapsed_slice_dims = [],
                           operand_batching_dims = [0], start_indices_batching_dims = [0],
                           start_index_map = [1], index_vector_dim = 1, ...}

Only dim 0 of operand and indices is recognised, as in Shardy: the indices' dim 0 has the
operand's dim-0 size, operand dim 0 is collapsed (inserted, for scatter) and named in the index
map, and its index component comes from an iota along dim 0, possibly through reshape,
broadcast_in_dim, clamp or select (the iota side of a select) and as one input of a concatenate
along the index vector dim. Like Shardy, it takes a clamp or select there for JAX's bounds
handling, which leaves an in-range iota as it is. The component is removed by dropping that
concatenate input, or by slicing around it. The index computation the rewrite leaves unused is
erased (Shardy's rewrite driver erases every unused pure op of the function and moves constants
to its top; shardc erases only these).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.compute import scatter_parts
from shardc.ir.ops.effects import erase_dead
from shardc.ir.types import DistributedTensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

# (the batching attribute of the operand, of the indices, the index map, the collapsed dims)
_GATHER = ("operand_batching_dims", "start_indices_batching_dims", "start_index_map",
           "collapsed_slice_dims")
_SCATTER = ("input_batching_dims", "scatter_indices_batching_dims",
            "scatter_dims_to_operand_dims", "inserted_window_dims")


def _unwrap(v: Value) -> Value:
    """Follow reshape, broadcast_in_dim, clamp and select back to where an index comes from."""
    while (op := v.defining_op) is not None:
        if op.name in ("reshape", "broadcast_in_dim"):
            v = op.operand(0)
        elif op.name == "clamp":
            v = op.operand(1)
        elif op.name == "select":
            on_false = op.operand(2).defining_op
            v = op.operand(2) if on_false is not None and on_false.name == "iota" else op.operand(1)
        else:
            break
    return v


def _from_iota(indices: Value, ivd: int, component: int) -> bool:
    """The index component `component` is an iota along dim 0."""
    source = indices
    concat = indices.defining_op
    if concat is not None and concat.name == "concatenate":
        if concat.attr("dimension") != ivd or component >= concat.num_operands:
            return False
        source = concat.operand(component)
    iota = _unwrap(source).defining_op
    return iota is not None and iota.name == "iota" and iota.attr("iota_dimension") == 0


def _new_op(at: Operation, name: str, operands: list[Value], shape: tuple[int, ...],
            dtype: str, attributes: dict) -> Value:
    op = Operation.at(at, name, operands, [DistributedTensorType(shape, dtype)], attributes)
    at.parent.insert_before(at, op)  # type: ignore[union-attr]
    return op.result


def _without_component(at: Operation, indices: Value, ivd: int, component: int) -> Value:
    """`indices` without index component `component` of dim `ivd`: the concatenate's other
    inputs when it concatenates one component per input, else slices around it."""
    shape, dtype = indices.type.shape, indices.type.dtype
    total = shape[ivd]
    smaller = tuple(n - 1 if d == ivd else n for d, n in enumerate(shape))
    concat = indices.defining_op
    if (concat is not None and concat.name == "concatenate" and concat.attr("dimension") == ivd
            and concat.num_operands == total):
        parts = [v for i, v in enumerate(concat.operands) if i != component]
    else:
        parts = []
        for lo, hi in ((0, component), (component + 1, total)):
            if lo >= hi:
                continue
            start = tuple(lo if d == ivd else 0 for d in range(len(shape)))
            limit = tuple(hi if d == ivd else n for d, n in enumerate(shape))
            part = tuple(hi - lo if d == ivd else n for d, n in enumerate(shape))
            parts.append(_new_op(at, "slice", [indices], part, dtype, {
                "start_indices": start, "limit_indices": limit, "strides": (1,) * len(shape)}))
    if len(parts) == 1:
        return parts[0]
    return _new_op(at, "concatenate", parts, smaller, dtype, {"dimension": ivd})


def _rewrite(op: Operation, operand: Value, indices_at: int, names: tuple[str, ...]) -> bool:
    """Make operand dim 0 an explicit batching dim of the gather or scatter `op`."""
    batching, indices_batching, index_map_key, collapsed_key = names
    if op.attr(batching):
        return False
    indices = op.operand(indices_at)
    ishape, oshape = indices.type.shape, operand.type.shape
    if not oshape or not ishape:
        return False
    ivd = op.attr("index_vector_dim")
    if ivd >= len(ishape) or ishape[ivd] <= 1 or ishape[0] != oshape[0]:
        return False
    index_map = list(op.attr(index_map_key))
    if 0 not in index_map:
        return False
    component = index_map.index(0)
    if not _from_iota(indices, ivd, component):
        return False
    collapsed = list(op.attr(collapsed_key) or ())
    if 0 not in collapsed:
        return False
    index_map.remove(0)
    collapsed.remove(0)
    op.set_operand(indices_at, _without_component(op, indices, ivd, component))
    op.attributes[index_map_key] = tuple(index_map)
    op.attributes[collapsed_key] = tuple(collapsed)
    op.attributes[batching] = (0,)
    op.attributes[indices_batching] = (0,)
    # Shardy builds a new op, which spells out its flags.
    for flag in ("indices_are_sorted",) + (("unique_indices",) if op.name == "scatter" else ()):
        op.attributes[flag] = bool(op.attr(flag, False))
    _erase_unused(indices.defining_op)
    return True


def _erase_unused(op: Operation | None) -> None:
    """Erase `op` if nothing uses it any more, and then what only it used."""
    if op is None or op.parent is None:
        return
    producers = [v.defining_op for v in op.operands]
    if erase_dead(op):
        for p in producers:
            _erase_unused(p)


def rewrite_function(func: Function) -> int:
    """Rewrite every gather and scatter of `func` that qualifies; the number rewritten."""
    count = 0
    for op in list(func.body):
        if op.name == "gather":
            count += _rewrite(op, op.operand(0), 1, _GATHER)
        elif op.name == "scatter":
            inputs, _, _ = scatter_parts(op)
            count += _rewrite(op, inputs[0], len(inputs), _SCATTER)
    return count


@register_pass("explicit-gather-scatter-batching")
@dataclass(frozen=True)
class ExplicitGatherScatterBatching(Pass):
    """Iota-indexed leading dims of gathers and scatters become explicit batching dims."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            rewrite_function(func)


register_alias("sdy-explicit-gather-scatter-batching", "explicit-gather-scatter-batching")
