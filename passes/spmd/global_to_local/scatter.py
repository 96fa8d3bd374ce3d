"""`scatter` with a sharded operand or update in `sdy-convert-global-to-local`, as Shardy rewrites
it.

Updates sharded along a batch dim the operand is not sharded by are scattered by several devices
into copies of one block, which the `sdy.all_reduce` after the scatter combines: only the first
device of each group keeps the operand's values, the others start from the reduction's identity.
An operand sharded along an indexed dim takes local indices (minus this device's offset); an
index outside the block is dropped by the scatter itself.
"""

from __future__ import annotations

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import OPS
from shardc.ir.ops.registry import attr
from shardc.ir.types import is_float
from shardc.passes.spmd.global_to_local.gather import _bounds_tensor, _scalar
from shardc.passes.spmd.global_to_local.ops import _replicated, generic
from shardc.passes.spmd.global_to_local.state import Localizer, shard_index

_F32_MAX = 3.4028234663852886e38


def _identity(kind: str, dtype: str):
    """The reduction's identity for `dtype`, or None (`replace` has none)."""
    bits = int(dtype.lstrip("ui")) if dtype[-1].isdigit() and not is_float(dtype) else 0
    if kind in ("add", "or"):
        return 0.0 if is_float(dtype) else (False if dtype == "i1" else 0)
    if kind in ("and", "multiply"):
        return 1.0 if is_float(dtype) else (True if dtype == "i1" else 1)
    if kind in ("maximum", "minimum") and dtype == "f32":
        return -_F32_MAX if kind == "maximum" else _F32_MAX
    if kind in ("maximum", "minimum") and dtype.startswith("i") and bits:
        return -(1 << (bits - 1)) if kind == "maximum" else (1 << (bits - 1)) - 1
    return None


def _reduction_axes(op: Operation, m_in: NamedMapping | None, m_up: NamedMapping | None) -> list:
    """Axes sharding the update's batch dims (not its window dims) that the operand does not use."""
    if _replicated(m_up):
        return []
    assert m_up is not None
    window = attr(op, "update_window_dims")
    used = set(m_in.used_axes()) if m_in is not None else set()
    return [a for d in range(m_up.rank) if d not in window
            for a in m_up.dims[d].axes if a not in used]


def scatter(lz: Localizer, op: Operation) -> None:
    if len(op.operands) != 3:
        raise PassError("'scatter' op: a variadic scatter of sharded operands is not supported",
                        op.loc)
    x, indices, update = op.operands
    m_in, m_up = lz.mapping(x), lz.mapping(update)
    if _replicated(m_in) and _replicated(m_up):
        return generic(lz, op)
    mesh = (m_in or m_up).mesh  # type: ignore[union-attr]
    axes = _reduction_axes(op, m_in, m_up)
    if not axes and _replicated(m_in):
        return generic(lz, op)
    if axes:
        kind = str(attr(op, "kind"))
        value = _identity(kind, x.type.dtype)
        if value is None:
            raise PassError(f"'scatter' op: a '{kind}' scatter has no reduction identity", op.loc)
        identity = _scalar(lz, value, x.type.dtype)
        pid = lz.device_id()
        n = mesh.num_devices
        table = [False] * n
        for p in range(n):
            table[mesh.device_id(p)] = shard_index(mesh, p, axes) == 0
        t = lz.emit("constant", [], {"value": DenseElements(tuple(table), (n,))}, (n,), "i1")
        lead = lz.emit("dynamic_slice", [t, pid], {"slice_sizes": (1,)}, (1,), "i1")
        shape = x.type.shape
        lead = lz.emit("broadcast_in_dim", [lead], {"broadcast_dimensions": (0,)}, shape, "i1")
        wide = lz.emit("broadcast_in_dim", [identity], {"broadcast_dimensions": ()}, shape,
                       x.type.dtype)
        x = lz.emit("select", [lead, x, wide], {}, shape, x.type.dtype)
    index_map = list(attr(op, "scatter_dims_to_operand_dims"))
    indexed = []
    if not _replicated(m_in):
        assert m_in is not None
        for d in range(m_in.rank):
            if not m_in.dims[d].axes:
                continue
            if d in index_map:
                indexed.append(d)
            elif d in attr(op, "inserted_window_dims"):
                raise PassError(f"'scatter' op: sharding operand dimension {d} that is not "
                                "indexed but in inserted window dimension is not supported",
                                op.loc)
    if not indexed and not axes:
        return generic(lz, op)
    if indexed:
        indices = _local_indices(lz, op, m_in, indices, index_map, indexed)
    r = op.results[0]
    lz.localize(r, op)
    attrs = {k: v for k, v in op.attributes.items() if k in OPS["scatter"].attrs}
    new = lz.emit("scatter", [x, indices, update], attrs, r.type.shape, r.type.dtype)
    new.set_mapping(r.mapping)
    lz.replace(op, new)


def _local_indices(lz: Localizer, op: Operation, m: NamedMapping | None, indices: Value,
                   index_map: list[int], indexed: list[int]) -> Value:
    assert m is not None
    ivd = attr(op, "index_vector_dim")
    dtype = indices.type.dtype
    mins = []
    for d in index_map:
        if d not in indexed:
            mins.append(_scalar(lz, 0, dtype))
            continue
        offset = lz.offset(m.mesh, m.dims[d].axes, op.operand(0).type.shape[d])
        mins.append(lz.emit("convert", [offset], {}, (), dtype))
    low = _bounds_tensor(lz, mins, indices, ivd)
    return lz.emit("subtract", [indices, low], {}, indices.type.shape, dtype)
