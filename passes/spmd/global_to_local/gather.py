"""`gather` with a sharded operand in `sdy-convert-global-to-local`, as Shardy rewrites it.

A sharded dim the gather takes whole shrinks to the local block (its slice size divides).
A sharded dim it takes one element of (a *trivial slice dim*, not a batching dim) is looked up
locally: indices along it become local (minus this device's offset, after clamping to the
global range), elements whose index falls outside this device's block are zeroed (a mask of
compares, reduced along the index vector dim), and the one `sdy.all_reduce` that uses the
result sums the blocks. A trivial slice dim the indices do not address reads element 0: only
the devices holding offset 0 keep their result.
"""

from __future__ import annotations

from typing import Any

from shardc.ir.attributes import DenseElements, Keyword
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import OPS
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.axes import product
from shardc.passes.spmd.global_to_local.ops import _check_reduced_by_user, _replicated, generic
from shardc.passes.spmd.global_to_local.state import Localizer


def _scalar(lz: Localizer, value: Any, dtype: str, shape=()) -> Value:
    return lz.emit("constant", [], {"value": DenseElements((value,))}, shape, dtype)


def _like_indices(lz: Localizer, values: list[int], indices: Value, ivd: int) -> Value:
    """A tensor of the indices' type holding `values` along the index vector dim."""
    t = indices.type
    if ivd < t.rank and len(values) > 1:
        c = lz.const(values, (len(values),), t.dtype)
        return lz.emit("broadcast_in_dim", [c], {"broadcast_dimensions": (ivd,)}, t.shape,
                       t.dtype)
    return _scalar(lz, values[0], t.dtype, t.shape)


def _bounds_tensor(lz: Localizer, bounds: list[Value], indices: Value, ivd: int) -> Value:
    t = indices.type
    if ivd >= t.rank or t.shape[ivd] == 1:
        return lz.emit("broadcast_in_dim", [bounds[0]], {"broadcast_dimensions": ()}, t.shape,
                       t.dtype)
    pieces = [lz.emit("reshape", [b], {}, (1,), t.dtype) for b in bounds]
    cat = lz.emit("concatenate", pieces, {"dimension": 0}, (len(bounds),), t.dtype)
    return lz.emit("broadcast_in_dim", [cat], {"broadcast_dimensions": (ivd,)}, t.shape, t.dtype)


def _compare(lz: Localizer, a: Value, b: Value, direction: str) -> Value:
    return lz.emit("compare", [a, b], {"comparison_direction": Keyword(direction)},
                   a.type.shape, "i1")


def _local_indices_and_mask(lz: Localizer, op: Operation, m: NamedMapping, indices: Value,
                            g_operand: tuple[int, ...], l_operand: tuple[int, ...],
                            trivial: list[int]) -> tuple[Value, Value]:
    ivd = attr(op, "index_vector_dim")
    index_map = list(attr(op, "start_index_map"))
    dtype = indices.type.dtype
    mesh = m.mesh
    adjusted, mask = indices, None
    if any(d in index_map for d in trivial):
        lo = _like_indices(lz, [0], indices, ivd)
        hi = _like_indices(lz, [g_operand[d] - 1 for d in index_map], indices, ivd)
        base = lz.emit("clamp", [lo, indices, hi], {}, indices.type.shape, dtype)
        mins, maxs = [], []
        for d in index_map:
            if d not in trivial:
                mins.append(_scalar(lz, 0, dtype))
                maxs.append(_scalar(lz, g_operand[d] - 1, dtype))
                continue
            offset = lz.offset(mesh, m.dims[d].axes, l_operand[d])
            offset = lz.emit("convert", [offset], {}, (), dtype)
            mins.append(offset)
            last = _scalar(lz, l_operand[d] - 1, dtype)
            maxs.append(lz.emit("add", [offset, last], {}, (), dtype))
        low = _bounds_tensor(lz, mins, indices, ivd)
        high = _bounds_tensor(lz, maxs, indices, ivd)
        adjusted = lz.emit("subtract", [base, low], {}, indices.type.shape, dtype)
        ge = _compare(lz, base, low, "GE")
        le = _compare(lz, base, high, "LE")
        mask = lz.emit("and", [ge, le], {}, indices.type.shape, "i1")
    part = None
    for d in trivial:
        if d in index_map:
            continue
        offset = lz.offset(mesh, m.dims[d].axes, l_operand[d])
        eq = _compare(lz, offset, _scalar(lz, 0, "i64"), "EQ")
        part = eq if part is None else lz.emit("and", [part, eq], {}, (), "i1")
    if part is not None:
        if mask is not None:
            part = lz.emit("broadcast_in_dim", [part], {"broadcast_dimensions": ()},
                           mask.type.shape, "i1")
            mask = lz.emit("and", [mask, part], {}, mask.type.shape, "i1")
        else:
            mask = part
    assert mask is not None
    return adjusted, mask


def gather(lz: Localizer, op: Operation) -> None:
    operand, indices = op.operand(0), op.operand(1)
    m = lz.mapping(operand)
    if _replicated(m):
        return generic(lz, op)
    assert m is not None
    mesh = m.mesh
    g_operand, l_operand = lz.global_shape(operand), operand.type.shape
    sizes = list(attr(op, "slice_sizes"))
    batching = attr(op, "operand_batching_dims") or ()
    trivial, axes = [], []
    for d in range(len(g_operand)):
        if m.num_shards(d) > 1 and sizes[d] == 1 and d not in batching:
            trivial.append(d)
            axes += list(m.dims[d].axes)
    for d, n in enumerate(sizes):
        if n == 1 or d in batching or not m.dims[d].axes:
            continue
        k = product(m.dims[d].axes, mesh)
        if n != g_operand[d] or n % k:
            raise PassError(f"'gather' op: dim {d} of the operand is sharded, so the gather must "
                            "take it whole", op.loc)
        sizes[d] = n // k
    result = op.results[0]
    lz.localize(result, op)
    shape, dtype = result.type.shape, result.type.dtype
    attrs = {k: v for k, v in op.attributes.items() if k in OPS["gather"].attrs}
    attrs["slice_sizes"] = tuple(sizes)
    attrs["indices_are_sorted"] = bool(attr(op, "indices_are_sorted"))  # Shardy's new op sets it
    if not trivial:
        new = lz.emit("gather", [operand, indices], attrs, shape, dtype)
        new.set_mapping(result.mapping)
        return lz.replace(op, new)
    adjusted, mask = _local_indices_and_mask(lz, op, m, indices, g_operand, l_operand, trivial)
    value = lz.emit("gather", [operand, adjusted], attrs, shape, dtype)
    value.set_mapping(result.mapping)
    ivd = attr(op, "index_vector_dim")
    if mask.type.rank > 0 and ivd < mask.type.rank:
        reduced = tuple(n for i, n in enumerate(mask.type.shape) if i != ivd)
        init = lz.emit("constant", [], {"value": DenseElements((True,))}, (), "i1")
        mask = lz.emit("reduce", [mask, init], {"dimensions": (ivd,), "kind": Keyword("and")},
                       reduced, "i1")
    offset_dims = attr(op, "offset_dims")
    dims = () if mask.type.rank == 0 else tuple(
        i for i in range(len(shape)) if i not in offset_dims)
    wide = lz.emit("broadcast_in_dim", [mask], {"broadcast_dimensions": dims}, shape, "i1")
    zero = _scalar(lz, 0.0 if dtype.startswith(("f", "bf")) else 0, dtype, shape)
    value = lz.emit("select", [wide, value, zero], {}, shape, dtype)
    _check_reduced_by_user(op, tuple(axes))
    lz.replace(op, value)
