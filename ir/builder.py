"""A Python API to build programs (what tests and the model zoo use).

    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((16, 64), "f32", mesh.spec("dp", None))
        w = f.arg((64, 256), "f32", mesh.spec(None, "tp"))
        y = b.tanh(b.matmul(x, w))
        f.returns(y)
    module = b.module

Ops are built through `b.op(name, operands, attrs)` with result types inferred from the op's
definition; ops whose result shape is not implied (reshape, broadcast_in_dim, constant, ...) take
it explicitly. Every built op is verified immediately, so mistakes fail where they are made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from shardc.ir.attributes import Keyword, Symbol, dense_from_numpy
from shardc.ir.core import Block, Cause, Function, Module, Operation, Value
from shardc.ir.diagnostics import Location
from shardc.ir.mapping import UNCONSTRAINED, NamedMapping, SpecEntry
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import infer_result_types, verify_operation
from shardc.ir.types import DistributedTensorType, TensorType


class MeshHandle:
    """A declared mesh with a shorthand for shardings on it."""

    def __init__(self, mesh: DeviceMesh):
        self.mesh = mesh

    def spec(
        self, *entries: SpecEntry, priorities: Sequence[int | None] = (), **kw
    ) -> NamedMapping:
        """`mesh.spec("dp", None)` -> `<@mesh, [{"dp"}, {}]>`; `UNCONSTRAINED` for `{?}`."""
        return NamedMapping.from_spec(entries, self.mesh, priorities=priorities, **kw)

    def open(self, rank: int) -> NamedMapping:
        return NamedMapping.fully_open(self.mesh, rank)


class FunctionBuilder:
    def __init__(self, builder: Builder, func: Function):
        self.builder = builder
        self.func = func

    def arg(
        self,
        shape: Sequence[int],
        dtype: str = "f32",
        mapping: NamedMapping | None = None,
        name: str | None = None,
    ) -> Value:
        t = DistributedTensorType(tuple(shape), dtype, mapping)
        v = Value(t, self.func, len(self.func.args), name)
        self.func.args.append(v)
        self.func.arg_attrs.append({})
        return v

    def returns(
        self, *values: Value, mappings: Sequence[NamedMapping | None] | None = None
    ) -> None:
        mappings = mappings or [None] * len(values)
        self.func.result_types = [
            DistributedTensorType(v.type.shape, v.type.dtype, m) for v, m in zip(values, mappings)
        ]
        self.func.res_attrs = [{} for _ in values]
        self.builder.op("return", list(values), {})


class Builder:
    """Builds a `Module`. Ops go at the end of the current function unless an insertion point
    is set with `at_end(block)`/`before(op)`/`after(op)`."""

    def __init__(self, module: Module | None = None, loc: Location | None = None):
        self.module = module or Module()
        self.loc = loc
        # What an insertion point inherits from its anchor (`insertion_point`).
        self.loc_written = False
        self.cause: Cause | None = None
        self._block: Block | None = None
        self._anchor: tuple[str, Operation] | None = None

    # ----- structure ---------------------------------------------------------------------------

    def mesh(
        self, name: str, axes: dict[str, int], device_ids: Sequence[int] | None = None
    ) -> MeshHandle:
        return MeshHandle(self.module.add_mesh(DeviceMesh.create(name, axes, device_ids)))

    @contextlib.contextmanager
    def function(self, name: str = "main", private: bool = False) -> Iterator[FunctionBuilder]:
        func = Function(name, [], [], visibility="private" if private else "public", loc=self.loc)
        self.module.add_function(func)
        saved = (self._block, self._anchor)
        self._block, self._anchor = func.body, None
        try:
            yield FunctionBuilder(self, func)
        finally:
            self._block, self._anchor = saved

    @contextlib.contextmanager
    def insertion_point(self, *, before: Operation | None = None, after: Operation | None = None):
        """Insert new ops before/after an existing op (inheriting its location and cause)."""
        saved = (self._block, self._anchor, self.loc, self.loc_written, self.cause)
        anchor = before or after
        assert anchor is not None and anchor.parent is not None
        self._block = anchor.parent
        self._anchor = ("before", anchor) if before is not None else ("after", anchor)
        self.loc, self.loc_written, self.cause = anchor.loc, anchor.loc_written, anchor.cause
        try:
            yield self
        finally:
            self._block, self._anchor, self.loc, self.loc_written, self.cause = saved

    # ----- generic op creation --------------------------------------------------------------

    def create(
        self,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any] | None = None,
        result_types: Sequence[TensorType] | None = None,
    ) -> Operation:
        attrs = dict(attrs or {})
        if result_types is None:
            if name in ("return", "sharding_group"):
                result_types = []
            else:
                inferred = infer_result_types(name, [v.type for v in operands], attrs)
                result_types = [DistributedTensorType(t.shape, t.dtype) for t in inferred]
        result_types = [
            t if isinstance(t, DistributedTensorType) else DistributedTensorType(t.shape, t.dtype)
            for t in result_types
        ]
        op = Operation(name, operands, result_types, attrs, self.loc, self.loc_written,
                       self.cause)
        assert self._block is not None, "no insertion point: use `with builder.function(...)`"
        if self._anchor is None:
            self._block.append(op)
        elif self._anchor[0] == "before":
            self._block.insert_before(self._anchor[1], op)
        else:
            self._block.insert_after(self._anchor[1], op)
            self._anchor = ("after", op)
        if name != "call" or self.module.lookup_function(attrs["callee"].name) is not None:
            verify_operation(op)
        return op

    def op(
        self,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any] | None = None,
        result_type: TensorType | None = None,
    ) -> Value:
        op = self.create(name, operands, attrs, None if result_type is None else [result_type])
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def __getattr__(self, name: str):
        """`b.tanh(x)`, `b.add(x, y)`: any registered op whose result type is inferable."""
        from shardc.ir.ops import OPS

        if name in OPS:
            return lambda *operands, **attrs: self.op(name, list(operands), attrs)
        raise AttributeError(name)

    # ----- ops that need more than operands ---------------------------------------------------

    def constant(self, value: Any, dtype: str = "f32", shape: Sequence[int] = ()) -> Value:
        arr = np.asarray(value)
        shape = tuple(shape) or arr.shape
        return self.op(
            "constant", [], {"value": dense_from_numpy(arr)}, DistributedTensorType(shape, dtype)
        )

    def broadcast(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        return self.op(
            "broadcast_in_dim",
            [x],
            {"broadcast_dimensions": tuple(dims)},
            DistributedTensorType(tuple(shape), x.type.dtype),
        )

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        return self.op("reshape", [x], {}, DistributedTensorType(tuple(shape), x.type.dtype))

    def convert(self, x: Value, dtype: str) -> Value:
        return self.op("convert", [x], {}, DistributedTensorType(x.type.shape, dtype))

    def iota(self, shape: Sequence[int], dim: int, dtype: str = "i32") -> Value:
        return self.op(
            "iota", [], {"iota_dimension": dim}, DistributedTensorType(tuple(shape), dtype)
        )

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        return self.op("transpose", [x], {"permutation": tuple(perm)})

    def dot_general(
        self,
        lhs: Value,
        rhs: Value,
        contracting: tuple[Sequence[int], Sequence[int]],
        batching: tuple[Sequence[int], Sequence[int]] = ((), ()),
    ) -> Value:
        attrs: dict[str, Any] = {}
        if batching[0]:
            attrs["lhs_batching_dims"] = tuple(batching[0])
            attrs["rhs_batching_dims"] = tuple(batching[1])
        attrs["lhs_contracting_dims"] = tuple(contracting[0])
        attrs["rhs_contracting_dims"] = tuple(contracting[1])
        return self.op("dot_general", [lhs, rhs], attrs)

    def matmul(self, lhs: Value, rhs: Value) -> Value:
        """Contract the last dim of `lhs` with the first of `rhs`."""
        return self.dot_general(lhs, rhs, ((lhs.type.rank - 1,), (0,)))

    def reduce(self, x: Value, dims: Sequence[int], kind: str = "add") -> Value:
        init = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "multiply": 1.0}[kind]
        if not x.type.dtype.startswith(("f", "bf")):
            init = {
                "add": 0,
                "multiply": 1,
                "maximum": np.iinfo(np.int32).min,
                "minimum": np.iinfo(np.int32).max,
            }[kind]
        zero = self.constant(init, x.type.dtype)
        return self.op("reduce", [x, zero], {"dimensions": tuple(dims), "kind": Keyword(kind)})

    def compare(self, a: Value, b: Value, direction: str) -> Value:
        return self.op("compare", [a, b], {"comparison_direction": Keyword(direction)})

    def sharding_constraint(self, x: Value, mapping: NamedMapping) -> Value:
        return self.op(
            "sharding_constraint",
            [x],
            {},
            DistributedTensorType(x.type.shape, x.type.dtype, mapping),
        )

    def reshard(self, x: Value, mapping: NamedMapping) -> Value:
        return self.op(
            "reshard", [x], {}, DistributedTensorType(x.type.shape, x.type.dtype, mapping)
        )

    def sharding_group(self, x: Value, group_id: int) -> None:
        self.create("sharding_group", [x], {"group_id": group_id}, [])

    def barrier(self, x: Value, direction: str) -> Value:
        return self.op("propagation_barrier", [x], {"allowed_direction": Keyword(direction)})

    def call(
        self, callee: str, operands: Sequence[Value], result_types: Sequence[TensorType]
    ) -> list[Value]:
        op = self.create("call", operands, {"callee": Symbol(callee)}, list(result_types))
        return list(op.results)


__all__ = ["UNCONSTRAINED", "Builder", "FunctionBuilder", "MeshHandle"]
