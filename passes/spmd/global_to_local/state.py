"""What every rewrite of `sdy-convert-global-to-local` shares: local types, emitting ops before
the op being rewritten, channel handles, replica groups and per-device offset tables.

A value's local type is its global type split by its sharding (`shard_shape`); Shardy's pass
needs every sharded dim to divide evenly. The device running the program is
`stablehlo.partition_id` (`replica_id` with `replica-count` > 1), converted to i64; an offset
along a dim is read from a constant table indexed by that id, as Shardy emits it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from shardc.ir.attributes import DenseElements, OpaqueAttr
from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.types import DistributedTensorType, TensorType, shard_shape, with_sharding
from shardc.passes.analysis.collectives.groups import device_groups

_HANDLE = re.compile(r"handle\s*=\s*(\d+)")


def local_shape(shape: tuple[int, ...], mapping: NamedMapping | None, where: Operation | None,
                loc: Any = None) -> tuple[int, ...]:
    """`shape` split by `mapping`; a located error where a sharded dim does not divide."""
    if mapping is None or getattr(mapping.mesh, "is_maximal", False):
        return tuple(shape)
    for d, (n, k) in enumerate(zip(shape, mapping.shard_counts())):
        if n % k:
            what = f"'{where.name}' op" if where is not None else "a function value"
            raise PassError(
                f"{what}: dim {d} of size {n} does not split evenly {k} ways over "
                f"{mapping.text()}; sdy-convert-global-to-local needs divisible shardings "
                "(run sdy-pad-for-divisibility or shard that dim evenly)",
                loc if loc is not None else (where.loc if where is not None else None),
            )
    return shard_shape(shape, mapping)


def localize_value(v: Value, where: Operation | None, loc: Any = None) -> None:
    """Give `v` its local type in place (its sharding stays)."""
    t = v.type
    shape = local_shape(t.shape, v.mapping, where, loc)
    if shape != t.shape:
        v.type = with_sharding(TensorType(shape, t.dtype), v.mapping)


def shard_index(mesh: DeviceMesh, position: int, axes: Sequence[AxisRef]) -> int:
    """The index, over `axes` (the first major), of the shard the device at mesh `position`
    holds (Shardy's getShardIndex)."""
    coords = mesh.coords(position)
    index = 0
    for ref in axes:
        index = index * ref.axis_size(mesh) + ref.coordinate(mesh, coords[ref.name])
    return index


def first_channel(module: Module) -> int:
    """One past the largest `channel_handle` already in the module (Shardy numbers from 1)."""
    top = 0
    for func in module.functions.values():
        for op in func.body:
            ch = op.attributes.get("channel_handle")
            if ch is not None:
                m = _HANDLE.search(getattr(ch, "text", str(ch)))
                if m:
                    top = max(top, int(m.group(1)))
    return top + 1


class Localizer:
    """The state of one run of the pass over a module."""

    def __init__(self, module: Module, options: Any):
        self.module = module
        self.options = options
        self.next_channel = first_channel(module)
        self.anchor: Operation | None = None
        self.global_shapes: dict[int, tuple[int, ...]] = {}  # localized value -> global shape
        self.origins: dict[int, NamedMapping | None] = {}  # new value -> the replaced one's

    # ----- emitting -------------------------------------------------------------------------

    def emit(self, name: str, operands: list[Value], attrs: dict[str, Any],
             shape: Sequence[int], dtype: str) -> Value:
        """A new op (no sharding) before the anchor; its one result."""
        anchor = self.anchor
        assert anchor is not None and anchor.parent is not None
        op = Operation.at(anchor, name, operands, [DistributedTensorType(tuple(shape), dtype)],
                          attrs)
        anchor.parent.insert_before(anchor, op)
        return op.results[0]

    def const(self, values: Sequence[Any], shape: Sequence[int], dtype: str) -> Value:
        dense = DenseElements((values[0],)) if not shape else DenseElements(
            tuple(values), tuple(shape))
        return self.emit("constant", [], {"value": dense}, shape, dtype)

    def channel(self) -> OpaqueAttr:
        n = self.next_channel
        self.next_channel += 1
        return OpaqueAttr(f"#stablehlo.channel_handle<handle = {n}, type = 1>")

    def groups(self, mesh: DeviceMesh, axes: Sequence[AxisRef]) -> dict[str, Any]:
        """The replica-group attributes of a collective over `axes`: the device ids, and with
        `enable-rgv3` (no sub-axis among `axes`) the same groups written as mesh axes."""
        out: dict[str, Any] = {
            "replica_groups": tuple(tuple(g) for g in device_groups(mesh, tuple(axes)))}
        if self.options.enable_rgv3 and not any(a.is_sub_axis for a in axes):
            refs = ", ".join(f'#stablehlo.axis_ref<name = "{a.name}">' for a in axes)
            out["replica_group_mesh_axes"] = OpaqueAttr(
                f"#stablehlo.replica_group_mesh_axes<mesh = @{mesh.name}, axes = [{refs}]>")
        return out

    def device_id(self) -> Value:
        """This device's id as an i64 scalar (Shardy's getDeviceId)."""
        name = "replica_id" if self.options.replica_count > 1 else "partition_id"
        pid = self.emit(name, [], {}, (), "ui32")
        return self.emit("convert", [pid], {}, (), "i64")

    def offset(self, mesh: DeviceMesh, axes: Sequence[AxisRef], size: int) -> Value:
        """i64 scalar: this device's first global index along a dim split over `axes` into
        blocks of `size`, read from a table indexed by device id."""
        pid = self.device_id()
        n = mesh.num_devices
        table = [0] * n
        for p in range(n):
            table[mesh.device_id(p)] = shard_index(mesh, p, axes) * size
        t = self.const(table, (n,), "i64")
        one = self.emit("dynamic_slice", [t, pid], {"slice_sizes": (1,)}, (1,), "i64")
        return self.emit("reshape", [one], {}, (), "i64")

    def slice_for_axes(self, value: Value, mesh: DeviceMesh,
                       axes_per_dim: Sequence[Sequence[AxisRef]],
                       local: Sequence[int]) -> Value:
        """This device's block of `value`: a dynamic_slice at the offsets of `axes_per_dim`."""
        starts = []
        for d, axes in enumerate(axes_per_dim):
            if not axes:
                starts.append(self.const([0], (), "i64"))
            else:
                starts.append(self.offset(mesh, axes, local[d]))
        return self.emit("dynamic_slice", [value, *starts], {"slice_sizes": tuple(local)},
                         local, value.type.dtype)

    def localize(self, v: Value, where: Operation | None, loc: Any = None) -> None:
        self.global_shapes.setdefault(id(v), v.type.shape)
        localize_value(v, where, loc)

    def global_shape(self, v: Value) -> tuple[int, ...]:
        return self.global_shapes.get(id(v), v.type.shape)

    def mapping(self, v: Value) -> NamedMapping | None:
        """The sharding of the global value `v` stands for (a new op's result carries none)."""
        return self.origins.get(id(v), v.mapping)

    def replace(self, op: Operation, value: Value) -> None:
        self.origins[id(value)] = op.results[0].mapping
        value.name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(value)
        op.erase()
