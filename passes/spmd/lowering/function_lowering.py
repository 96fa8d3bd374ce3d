"""Lowering one function to per-device code: the state every op lowering shares.

`FunctionLowering` knows each value's global sharding and local (padded block) shape, emits new
ops before the op being lowered (`anchor`), caches the constants and device-index arithmetic it
emits, and remembers which new value stands for which original one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardc.ir.attributes import DenseElements, Keyword
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh, default_mesh
from shardc.ir.types import DistributedTensorType, is_float, shard_shape
from shardc.passes.analysis.collectives.groups import device_groups


def is_spmd(func: Function) -> bool:
    """Has `func` already been lowered (it records its global argument shapes)?"""
    return "in_shapes" in func.attributes


def _scalar(value: Any, dtype: str) -> Any:
    if dtype == "i1":
        return bool(value)
    return float(value) if is_float(dtype) else int(value)


def closed_layout(m: NamedMapping) -> NamedMapping:
    """The mapping as executors need it: closed dims, no priorities, no replicated list."""
    dims = tuple(DimSharding(d.axes, True) for d in m.dims)
    return NamedMapping(m.mesh, dims, (), m.unreduced, m.unreduced_op, m.memory_kind)


def with_dim(shape: tuple[int, ...], d: int, n: int) -> tuple[int, ...]:
    """`shape` with dim d of size n."""
    return tuple(n if i == d else s for i, s in enumerate(shape))


def _function_mesh(module: Module, func: Function) -> DeviceMesh | None:
    meshes: dict[str, DeviceMesh] = {}
    values: list[Value] = list(func.args)
    for op in func.body:
        values.extend(op.results)
    for v in values:
        if v.mapping is not None:
            meshes[v.mapping.mesh.name] = v.mapping.mesh
    for t in func.result_types:
        m = getattr(t, "mapping", None)
        if m is not None:
            meshes[m.mesh.name] = m.mesh
    if len(meshes) > 1:  # a mesh without axes (JAX's @empty_mesh of scalars) goes with any
        meshes = {n: mesh for n, mesh in meshes.items() if mesh.axes}
    if len(meshes) > 1:
        names = ", ".join(f"@{n}" for n in meshes)
        raise PassError(
            f"@{func.name} uses several meshes ({names}); the SPMD program runs on one mesh "
            "per function",
            func.loc,
        )
    if meshes and not all(mesh.is_empty for mesh in meshes.values()):
        return next(iter(meshes.values()))
    # Nothing sharded (or only 0-d values on JAX's axis-less @empty_mesh): replicated on the
    # module's mesh, so the program runs on its devices, not on one.
    default = default_mesh(module.meshes)
    if default is not None:
        return default
    return next(iter(meshes.values())) if meshes else None


class FunctionLowering:
    """The state of lowering one function in place. Original values keep their global types
    until the pass records the per-device signature; values it creates are local from the
    start. `anchor` is the op being lowered: new ops go before it."""

    def __init__(self, module: Module, func: Function):
        self.module = module
        self.func = func
        self.mesh = _function_mesh(module, func)
        self.anchor: Operation | None = None
        self.new: set[int] = set()
        self.cache: dict[tuple, Value] = {}
        self.replaced: dict[int, Value] = {}  # new value -> the original value it stands for

    # ----- types ------------------------------------------------------------------------------

    def mapping(self, v: Value) -> NamedMapping | None:
        """The value's global sharding (None: replicated, or no mesh at all)."""
        v = self.original(v)
        return None if id(v) in self.new else v.mapping

    def local_shape(self, v: Value) -> tuple[int, ...]:
        if id(v) in self.new:
            return v.type.shape
        return shard_shape(v.type.shape, v.mapping)

    def shards(self, v: Value, d: int) -> int:
        m = self.mapping(v)
        return 1 if m is None else m.num_shards(d)

    def whole_blocks(self, x: Value, sizes: Sequence[int]) -> tuple[int, ...]:
        """`sizes` (one per dim of `x`) with a sharded dim's entry its local block size: an op
        that takes such a dim whole takes the whole local block."""
        local = self.local_shape(x)
        return tuple(local[d] if self.shards(x, d) > 1 else n for d, n in enumerate(sizes))

    # ----- emitting ops before the anchor (padding.py adds masks, pads and slices) ---------------

    def emit(
        self,
        name: str,
        operands: list[Value],
        attrs: dict[str, Any],
        shape: tuple[int, ...],
        dtype: str,
    ) -> Value:
        assert self.anchor is not None and self.anchor.parent is not None
        op = Operation.at(
            self.anchor, name, operands, [DistributedTensorType(tuple(shape), dtype)], attrs
        )
        self.anchor.parent.insert_before(self.anchor, op)
        self.new.add(id(op.results[0]))
        return op.results[0]

    def const(self, value: Any, dtype: str, shape: tuple[int, ...] = ()) -> Value:
        value = _scalar(value, dtype)
        key = ("const", repr(value), dtype, shape)
        if key not in self.cache:
            dense = DenseElements((value,))
            self.cache[key] = self.emit("constant", [], {"value": dense}, shape, dtype)
        return self.cache[key]

    def axis_index(self, axes: tuple[AxisRef, ...]) -> Value:
        key = ("axis_index", axes)
        if key not in self.cache:
            self.cache[key] = self.emit("spmd.axis_index", [], {"axes": axes}, (), "i32")
        return self.cache[key]

    def offset(self, axes: tuple[AxisRef, ...], size: int) -> Value:
        """i32 scalar: the global index of this device's first element along a dim split over
        `axes` into blocks of `size` (shard index * size)."""
        key = ("offset", axes, size)
        if key not in self.cache:
            self.cache[key] = self.emit(
                "multiply", [self.axis_index(axes), self.const(size, "i32")], {}, (), "i32"
            )
        return self.cache[key]

    def is_first(self, axes: tuple[AxisRef, ...]) -> Value:
        """i1 scalar: is this device the first of its group over `axes` (shard index 0)? An op
        whose partial results are summed applies its `init` (or its operand) only there."""
        key = ("is_first", axes)
        if key not in self.cache:
            self.cache[key] = self.emit(
                "compare",
                [self.axis_index(axes), self.const(0, "i32")],
                {"comparison_direction": Keyword("EQ")},
                (),
                "i1",
            )
        return self.cache[key]

    def groups(self, axes: tuple[AxisRef, ...]) -> tuple[tuple[int, ...], ...]:
        assert self.mesh is not None
        return tuple(tuple(g) for g in device_groups(self.mesh, axes))

    def splat(self, scalar: Value, shape: tuple[int, ...]) -> Value:
        if not shape:
            return scalar
        return self.emit(
            "broadcast_in_dim", [scalar], {"broadcast_dimensions": ()}, shape, scalar.type.dtype
        )

    # ----- replacing ops --------------------------------------------------------------------------

    def replace(self, op: Operation, value: Value) -> None:
        old = op.result
        old.replace_all_uses_with(value)
        op.erase()
        if id(value) in self.new:
            self.replaced[id(value)] = self.replaced.get(id(old), old)

    def original(self, v: Value) -> Value:
        """The original (global) value `v` stands for."""
        return self.replaced.get(id(v), v)

    def global_shape(self, v: Value) -> tuple[int, ...]:
        return self.original(v).type.shape

    def layout(self, v: Value) -> NamedMapping:
        """How `v` is laid out (closed; no mapping: replicated on the function's mesh)."""
        assert self.mesh is not None
        m = self.mapping(self.original(v))
        if m is None:
            return NamedMapping.fully_replicated(self.mesh, len(v.type.shape))
        return closed_layout(m)
