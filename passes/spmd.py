"""`spmd`: the global-view program -> the per-device (SPMD) program. See docs/spmd.md.

Input: every value has a closed sharding, data moves only through the six global collectives, and
every other op computes locally under its sharding rule. Output: the same function with local
types (each device's padded block), the global collectives turned into `spmd.*` ops with explicit
device groups (`ir/ops/spmd.py`), and the facts executors need recorded on the function::

    func @main(%x: tensor<3x8xf32>) -> tensor<8xf32> attributes {mesh = @m,
        in_shapes = [[10, 8]], in_shardings = [<@m, [{"x"}, {}]>],
        out_shapes = [[8]], out_shardings = [<@m, [{}]>]} { ... }

Uneven shards are padded at the end (ceil(n/k) per device). Padding holds unspecified values, so
the pass masks it (a `select` on an iota-based predicate) where a contraction or a reduction
would read it, and pads/slices around collectives so only padding ever lands in padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.ir.attributes import DenseElements, Keyword, Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.manual import body_of, manual_computations, manual_names, manual_shards
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import sort_dimension
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType, is_float, shard_shape
from shardc.passes.collectives.axes import merge_set, product
from shardc.passes.collectives.groups import device_groups, permute_sources
from shardc.passes.collectives.steps import (
    AllGather,
    AllSlice,
    AllToAll,
    ReduceScatter,
    chunk,
    same_layout,
)
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.rules.registry import rule_for
from shardc.passes.rules.rule import FactorKind, OpShardingRule

# `unreduced_op` -> the `kind` of spmd.all_reduce (and of `reduce`).
REDUCE_KIND = {
    ReduceOp.SUM: "add",
    ReduceOp.MAX: "maximum",
    ReduceOp.MIN: "minimum",
    ReduceOp.PROD: "multiply",
    ReduceOp.AND: "and",
    ReduceOp.OR: "or",
}


@register_pass("spmd")
@dataclass(frozen=True)
class Spmd(Pass):
    """Lower the global-view program to the per-device (SPMD) program."""

    def run(self, module: Module, ctx: PassContext) -> None:
        # manual_computation bodies are lowered when their op is, and inlined there.
        bodies = {attr(op, "body").name for op in manual_computations(module)}
        for func in list(module.functions.values()):
            if is_spmd(func) or func.name in bodies:
                continue
            _Lowering(module, func).run()
        for name in bodies - {attr(op, "body").name for op in manual_computations(module)}:
            del module.functions[name]


def is_spmd(func: Function) -> bool:
    """Has `func` already been lowered (it records its global argument shapes)?"""
    return "in_shapes" in func.attributes


def identity_value(kind: str, dtype: str) -> Any:
    """The neutral element of a reduction `kind` on element type `dtype`."""
    if dtype == "i1":
        return kind in ("multiply", "and", "minimum")
    if is_float(dtype):
        return {"add": 0.0, "multiply": 1.0, "maximum": -math.inf, "minimum": math.inf}[kind]
    info = np.iinfo(np.dtype({"i": "int", "u": "uint"}[dtype[0]] + dtype.lstrip("ui")))
    return {
        "add": 0,
        "or": 0,
        "xor": 0,
        "multiply": 1,
        "and": -1 if info.min < 0 else int(info.max),
        "maximum": int(info.min),
        "minimum": int(info.max),
    }[kind]


def _scalar(value: Any, dtype: str) -> Any:
    if dtype == "i1":
        return bool(value)
    return float(value) if is_float(dtype) else int(value)


def _closed(m: NamedMapping) -> NamedMapping:
    """The mapping as executors need it: closed dims, no priorities, no replicated list."""
    dims = tuple(DimSharding(d.axes, True) for d in m.dims)
    return NamedMapping(m.mesh, dims, (), m.unreduced, m.unreduced_op, m.memory_kind)


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
    if meshes:
        return next(iter(meshes.values()))
    if len(module.meshes) == 1:
        return next(iter(module.meshes.values()))  # nothing sharded: replicated on that mesh
    return None


class _Lowering:
    """Rewrites one function in place. Original values keep their global types until
    `_finish`; values this pass creates are local from the start."""

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

    # ----- emitting ops before the anchor -------------------------------------------------------

    def emit(
        self,
        name: str,
        operands: list[Value],
        attrs: dict[str, Any],
        shape: tuple[int, ...],
        dtype: str,
    ) -> Value:
        assert self.anchor is not None and self.anchor.parent is not None
        op = Operation(
            name, operands, [DistributedTensorType(tuple(shape), dtype)], attrs, self.anchor.loc
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

    def groups(self, axes: tuple[AxisRef, ...]) -> tuple[tuple[int, ...], ...]:
        assert self.mesh is not None
        return tuple(tuple(g) for g in device_groups(self.mesh, axes))

    def splat(self, scalar: Value, shape: tuple[int, ...]) -> Value:
        if not shape:
            return scalar
        return self.emit(
            "broadcast_in_dim", [scalar], {"broadcast_dimensions": ()}, shape, scalar.type.dtype
        )

    def valid(self, shape: tuple[int, ...], d: int, n: int, axes: tuple[AxisRef, ...]) -> Value:
        """i1 of `shape`: true where dim d's global index (shard index * local size + iota) < n.

        %lim = subtract n, axis_index(axes) * shape[d]    ; real elements left in this shard
        %ok = compare iota(d), broadcast(%lim) LT
        """
        key = ("valid", shape, d, n, axes)
        if key not in self.cache:
            limit_key = ("limit", axes, shape[d], n)
            if limit_key not in self.cache:
                offset = self.offset(axes, shape[d])
                self.cache[limit_key] = self.emit(
                    "subtract", [self.const(n, "i32"), offset], {}, (), "i32"
                )
            limit = self.cache[limit_key]
            iota = self.emit("iota", [], {"iota_dimension": d}, shape, "i32")
            self.cache[key] = self.emit(
                "compare",
                [iota, self.splat(limit, shape)],
                {"comparison_direction": Keyword("LT")},
                shape,
                "i1",
            )
        return self.cache[key]

    def mask(self, x: Value, dims: list[tuple[int, int, tuple[AxisRef, ...]]], fill: Any) -> Value:
        """`x` with the padding of each `(dim, global size, axes)` replaced by `fill`."""
        shape, dtype = self.local_shape(x), x.type.dtype
        pred: Value | None = None
        for d, n, axes in dims:
            ok = self.valid(shape, d, n, axes)
            pred = ok if pred is None else self.emit("and", [pred, ok], {}, shape, "i1")
        assert pred is not None
        return self.emit("select", [pred, x, self.const(fill, dtype, shape)], {}, shape, dtype)

    def pad_dim(self, x: Value, d: int, size: int) -> Value:
        """`x` zero-padded at the end of dim d to `size`."""
        shape = self.local_shape(x)
        if shape[d] >= size:
            return x
        rank = len(shape)
        high = tuple(size - shape[d] if i == d else 0 for i in range(rank))
        attrs = {"edge_padding_low": (0,) * rank, "edge_padding_high": high}
        zero = self.const(0, x.type.dtype)
        return self.emit("pad", [x, zero], attrs, _with(shape, d, size), x.type.dtype)

    def slice_dim(self, x: Value, d: int, size: int) -> Value:
        shape = self.local_shape(x)
        if shape[d] == size:
            return x
        attrs = {"start_indices": (0,) * len(shape), "limit_indices": _with(shape, d, size)}
        return self.emit("slice", [x], attrs, _with(shape, d, size), x.type.dtype)

    # ----- the walk ---------------------------------------------------------------------------

    def run(self) -> None:
        for op in list(self.func.body):
            self.anchor = op
            try:
                handler = _HANDLERS.get(op.name, _lower_local)
                handler(self, op)
            except PassError:
                raise
            except ShardcError as e:
                raise PassError(f"'{op.name}' op: {e.message}", e.loc or op.loc) from None
        self._finish()

    def replace(self, op: Operation, value: Value) -> None:
        old = op.result
        old.replace_all_uses_with(value)
        op.erase()
        if id(value) in self.new:
            self.replaced[id(value)] = self.replaced.get(id(old), old)

    def _finish(self) -> None:
        func, mesh = self.func, self.mesh
        ret = func.return_op
        returned = list(ret.operands) if ret is not None else []
        attrs: dict[str, Any] = {}
        if mesh is not None:
            attrs["mesh"] = Symbol(mesh.name)
        attrs["in_shapes"] = tuple(tuple(a.type.shape) for a in func.args)
        if mesh is not None:
            attrs["in_shardings"] = tuple(self._layout(a) for a in func.args)
        out_shapes, out_shardings = [], []
        for i, v in enumerate(returned):
            out_shapes.append(tuple(self.global_shape(v)))
            if mesh is None:
                continue
            declared = getattr(func.result_types[i], "mapping", None)
            layout = self._layout(v)
            if declared is not None and not same_layout(_closed(declared), layout):
                raise PassError(
                    f"result {i} of @{func.name} is laid out as {layout} but declared "
                    f"{declared}; run insert-reshards before spmd",
                    func.loc,
                )
            out_shardings.append(layout)
        attrs["out_shapes"] = tuple(out_shapes)
        if mesh is not None:
            attrs["out_shardings"] = tuple(out_shardings)
        func.attributes.update(attrs)
        func.result_types = [
            DistributedTensorType(self.local_shape(v), v.type.dtype) for v in returned
        ]
        values = list(func.args) + [r for op in func.body for r in op.results]
        local = [self.local_shape(v) for v in values]
        for v, shape in zip(values, local):
            v.type = DistributedTensorType(shape, v.type.dtype)

    def original(self, v: Value) -> Value:
        """The original (global) value `v` stands for."""
        return self.replaced.get(id(v), v)

    def global_shape(self, v: Value) -> tuple[int, ...]:
        return self.original(v).type.shape

    def _layout(self, v: Value) -> NamedMapping:
        assert self.mesh is not None
        m = self.mapping(self.original(v))
        if m is None:
            return NamedMapping.fully_replicated(self.mesh, len(v.type.shape))
        return _closed(m)


def _with(shape: tuple[int, ...], d: int, n: int) -> tuple[int, ...]:
    return tuple(n if i == d else s for i, s in enumerate(shape))


def _src_dst(low: _Lowering, op: Operation) -> tuple[Value, NamedMapping, NamedMapping]:
    x = op.operand(0)
    src, dst = low.mapping(x), op.result.mapping
    if src is None or dst is None:
        raise PassError(f"'{op.name}' op needs shardings on its operand and result", op.loc)
    return x, src, dst


def _per_dim(rank: int, d: int, axes: tuple[AxisRef, ...]) -> tuple[tuple[AxisRef, ...], ...]:
    return tuple(axes if i == d else () for i in range(rank))


# ----- the global collectives -------------------------------------------------------------------


def _lower_all_gather(low: _Lowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    for d, axes in enumerate(attr(op, "gathering_axes")):
        if not axes:
            continue
        after = AllGather(_per_dim(len(shape), d, axes)).apply(m, shape)
        local = low.local_shape(cur)
        g = product(axes, m.mesh)
        attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
        cur = low.emit("spmd.all_gather", [cur], attrs, _with(local, d, local[d] * g), x.type.dtype)
        cur = low.slice_dim(cur, d, chunk(shape[d], after.num_shards(d)))
        m = after
    low.replace(op, cur)


def _all_slice(low: _Lowering, x: Value, d: int, axes: tuple[AxisRef, ...], size: int) -> Value:
    """Each device keeps its `size`-long part of dim d (no communication)."""
    assert low.mesh is not None
    g = product(axes, low.mesh)
    x = low.pad_dim(x, d, g * size)
    attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
    return low.emit("spmd.all_slice", [x], attrs, _with(low.local_shape(x), d, size), x.type.dtype)


def _lower_all_slice(low: _Lowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    for d, axes in enumerate(attr(op, "slicing_axes")):
        if not axes:
            continue
        m = AllSlice(_per_dim(len(shape), d, axes)).apply(m, shape)
        cur = _all_slice(low, cur, d, axes, chunk(shape[d], m.num_shards(d)))
    low.replace(op, cur)


def _lower_all_to_all(low: _Lowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape = op.result.type.shape
    axes, s, t = attr(op, "axes"), attr(op, "src_dim"), attr(op, "tgt_dim")
    after = AllToAll(axes, s, t).apply(m, shape)
    g = product(axes, m.mesh)
    t_size = chunk(shape[t], after.num_shards(t))
    cur = low.pad_dim(x, t, g * t_size)
    local = low.local_shape(cur)
    out_shape = _with(_with(local, t, t_size), s, local[s] * g)
    attrs = {"axes": axes, "split_dim": t, "concat_dim": s, "groups": low.groups(axes)}
    cur = low.emit("spmd.all_to_all", [cur], attrs, out_shape, x.type.dtype)
    low.replace(op, low.slice_dim(cur, s, chunk(shape[s], after.num_shards(s))))


def _lower_collective_permute(low: _Lowering, op: Operation) -> None:
    x, src, dst = _src_dst(low, op)
    pairs = tuple((s, t) for s, t in permute_sources(src, dst))
    out = low.emit(
        "spmd.collective_permute", [x], {"pairs": pairs}, low.local_shape(x), x.type.dtype
    )
    low.replace(op, out)


def _all_reduce(low: _Lowering, x: Value, axes: tuple[AxisRef, ...], kind: str) -> Value:
    attrs = {"axes": axes, "kind": Keyword(kind), "groups": low.groups(axes)}
    return low.emit("spmd.all_reduce", [x], attrs, low.local_shape(x), x.type.dtype)


def _lower_all_reduce(low: _Lowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    low.replace(op, _all_reduce(low, x, attr(op, "reduction_axes"), REDUCE_KIND[m.unreduced_op]))


def _lower_reduce_scatter(low: _Lowering, op: Operation) -> None:
    x, m, _ = _src_dst(low, op)
    shape, cur = op.result.type.shape, x
    per_dim = attr(op, "scatter_axes")
    if m.unreduced_op is not ReduceOp.SUM:
        # JAX has only a summing psum_scatter: reduce everywhere, then keep the own part.
        flat = tuple(a for axes in per_dim for a in axes)
        cur = _all_reduce(low, cur, flat, REDUCE_KIND[m.unreduced_op])
        _, _, dst = _src_dst(low, op)
        for d, axes in enumerate(per_dim):
            if axes:
                cur = _all_slice(low, cur, d, axes, chunk(shape[d], dst.num_shards(d)))
        low.replace(op, cur)
        return
    for d, axes in enumerate(per_dim):
        if not axes:
            continue
        m = ReduceScatter(_per_dim(len(shape), d, axes)).apply(m, shape)
        size = chunk(shape[d], m.num_shards(d))
        g = product(axes, m.mesh)
        cur = low.pad_dim(cur, d, g * size)
        attrs = {"axes": axes, "dim": d, "groups": low.groups(axes)}
        local = low.local_shape(cur)
        cur = low.emit("spmd.reduce_scatter", [cur], attrs, _with(local, d, size), x.type.dtype)
    low.replace(op, cur)


# ----- sharding ops ------------------------------------------------------------------------------


def _lower_identity(low: _Lowering, op: Operation) -> None:
    """reshard / sharding_constraint that do not move data, propagation_barrier: the operand."""
    if op.name != "propagation_barrier":
        src, dst = low.mapping(op.operand(0)), op.result.mapping
        if src is not None and dst is not None and not same_layout(_closed(src), _closed(dst)):
            raise PassError(
                f"'{op.name}' op changes the layout from {src} to {dst}; run insert-reshards and "
                "lower-collectives before spmd",
                op.loc,
            )
    low.replace(op, op.operand(0))


def _lower_sharding_group(low: _Lowering, op: Operation) -> None:
    op.erase()


# ----- manual_computation ------------------------------------------------------------------------


def _lower_manual(low: _Lowering, op: Operation) -> None:
    """Inline the body where the op stands. The body is per-device code over the manual axes
    already; its free-axis shardings are lowered like any function's (the body is lowered first,
    on its own), so each device's block of an operand (laid out by its in_sharding) is exactly
    the body argument's block, and the body's results are the blocks of the op's results."""
    body = body_of(op)
    assert body is not None, "the verifier checks the body exists"
    if not is_spmd(body):
        inner = _Lowering(low.module, body)
        inner.mesh = inner.mesh or low.mesh
        inner.run()
    manual = manual_names(op)
    for i, (v, m, a) in enumerate(zip(op.operands, attr(op, "in_shardings"), body.args)):
        have = low.mapping(v)
        layout = _closed(have) if have is not None else _closed(m).with_dims(
            [DimSharding() for _ in m.dims]
        )
        if not same_layout(layout, _closed(m)):
            raise PassError(
                f"'manual_computation' op operand {i} is laid out as {layout}, not as its "
                f"in_sharding {m}; run insert-reshards before spmd",
                op.loc,
            )
        _check_free_axes_divide(op, f"in_shardings[{i}]", m, low.global_shape(v), manual)
        assert low.local_shape(v) == a.type.shape, (low.local_shape(v), a.type)
    values: dict[int, Value] = {id(a): v for a, v in zip(body.args, op.operands)}
    returned: list[Value] = []
    for inner_op in body.body:
        if inner_op.name == "return":
            returned = [values[id(x)] for x in inner_op.operands]
            break
        copy = inner_op.clone([values[id(x)] for x in inner_op.operands])
        low.anchor.parent.insert_before(low.anchor, copy)  # type: ignore[union-attr]
        for old, new in zip(inner_op.results, copy.results):
            values[id(old)] = new
            low.new.add(id(new))
    taken: set[int] = set()
    for j, (r, m) in enumerate(zip(op.results, attr(op, "out_shardings"))):
        _check_free_axes_divide(op, f"out_shardings[{j}]", m, r.type.shape, manual)
        v = returned[j]
        if id(v) not in low.new or id(v) in taken:
            # A body argument (or a value returned twice) stands for another global tensor
            # here: give the result a value of its own.
            v = low.emit("reshape", [v], {}, low.local_shape(v), v.type.dtype)
        taken.add(id(v))
        r.replace_all_uses_with(v)
        low.replaced[id(v)] = r
    op.erase()


def _check_free_axes_divide(
    op: Operation, what: str, m: NamedMapping, shape: tuple[int, ...], manual: tuple[str, ...]
) -> None:
    """Inside a manual block, the free axes must split it evenly: the body pads its own blocks,
    which would not sit where the global layout puts them otherwise."""
    for d, (n, k) in enumerate(zip(shape, manual_shards(m, manual))):
        free = m.num_shards(d) // k
        if free > 1 and (n // k) % free:
            raise PassError(
                f"'manual_computation' op {what} {m}: the free axes of dim {d} split its "
                f"per-block size {n // k} into {free} uneven parts, which the SPMD program "
                "cannot lay out like the global tensor; shard that dim of the body evenly",
                op.loc,
            )


# ----- ops that create data ----------------------------------------------------------------------


def _lower_constant(low: _Lowering, op: Operation) -> None:
    """A splat is the same everywhere; any other sharded constant is cut from the padded global
    value with spmd.all_slice (local, no communication)."""
    m = op.result.mapping
    value = attr(op, "value")
    if m is None or all(k == 1 for k in m.shard_counts()) or value.is_splat:
        if m is not None and m.unreduced:
            raise PassError("a constant cannot be unreduced", op.loc)
        return
    t = op.result.type
    array = value.to_numpy(t.shape, t.dtype)
    padded = tuple(k * chunk(n, k) for n, k in zip(t.shape, m.shard_counts()))
    array = np.pad(array, [(0, p - n) for n, p in zip(t.shape, padded)])
    kind = bool if t.dtype == "i1" else float if is_float(t.dtype) else int
    dense = DenseElements(tuple(kind(v) for v in array.reshape(-1)), padded)
    cur = low.emit("constant", [], {"value": dense}, padded, t.dtype)
    for d, dim in enumerate(m.dims):
        if dim.axes:
            cur = _all_slice(low, cur, d, dim.axes, chunk(t.shape[d], m.num_shards(d)))
    low.replace(op, cur)


def _lower_iota(low: _Lowering, op: Operation) -> None:
    """An iota along a sharded dim counts from the shard's global offset."""
    m = op.result.mapping
    d = attr(op, "iota_dimension")
    if m is None or m.num_shards(d) == 1:
        return
    t = op.result.type
    shape = shard_shape(t.shape, m)
    iota = low.emit("iota", [], {"iota_dimension": d}, shape, t.dtype)
    offset = low.offset(m.dims[d].axes, shape[d])
    if t.dtype != "i32":
        offset = low.emit("convert", [offset], {}, (), t.dtype)
    low.replace(op, low.emit("add", [iota, low.splat(offset, shape)], {}, shape, t.dtype))


# ----- ops that compute locally -----------------------------------------------------------------


def _global_rule(low: _Lowering, op: Operation) -> OpShardingRule | None:
    """The op's rule for its global shapes (operands may already be rewritten to local values):
    asked of a detached probe whose operands carry the original global types."""
    originals = [low.original(v) for v in op.operands]
    if all(o is v for o, v in zip(originals, op.operands)):
        return rule_for(op)
    stubs = [Value(o.type, op, i) for i, o in enumerate(originals)]  # no use-list entries
    probe = Operation(op.name, [], [r.type for r in op.results], dict(op.attributes), op.loc)
    probe._operands = stubs  # read-only probe: never linked into a block
    return rule_for(probe)


def _lower_local(low: _Lowering, op: Operation) -> None:
    """Check the op computes locally under its sharding rule, then mask/adjust as it needs."""
    if op.name in ("call", "return"):
        return
    rule = _global_rule(low, op)
    if rule is None:
        for v in (*op.operands, *op.results):
            m = low.mapping(v)
            if m is not None and not m.is_fully_replicated:
                raise PassError(
                    f"'{op.name}' op has no sharding rule, so it must be replicated, but it "
                    f"has sharding {m}",
                    op.loc,
                )
        return
    _check_local(low, op, rule)
    fix = _LOCAL_FIXES.get(op.name)
    if fix is not None:
        fix(low, op, rule)


def _check_local(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    """Every pass-through factor sharded alike on its tensors, need_replication and permutation
    factors unsharded, sharded reduction factors exactly the result's unreduced axes, no
    unreduced operand, and multi-factor dims whose local block is contiguous."""

    def fail(message: str) -> PassError:
        return PassError(
            f"'{op.name}' op does not compute locally: {message}; run insert-reshards before spmd",
            op.loc,
        )

    operands = [low.mapping(v) for v in op.operands]
    results = [low.mapping(v) for v in op.results]
    for i, m in enumerate(operands):
        if m is not None and m.unreduced:
            raise fail(f"operand {i} is unreduced on {{{', '.join(map(str, m.unreduced))}}}")
    mesh = low.mesh
    proj = ShardingProjection.build(operands, results, rule, mesh, closed_if_missing=True)
    tensors = proj.tensors
    for t in tensors:
        for f, fs in t.factors.items():
            if fs.overflow:
                raise fail(f"factor {f} has axes that do not divide it")
    reduced: list[AxisRef] = []
    for f in range(rule.num_factors):
        seen = [t.factors[f].axes for t in tensors if f in t.factors]
        kind = rule.kind(f)
        if kind in (FactorKind.NEED_REPLICATION, FactorKind.PERMUTATION) and any(seen):
            raise fail(f"a {kind.value} factor is sharded")
        if any(axes != seen[0] for axes in seen):
            shown = " vs ".join("{" + ", ".join(map(str, a)) + "}" for a in seen)
            raise fail(f"a factor is sharded differently on its tensors ({shown})")
        if kind is FactorKind.REDUCTION:
            reduced.extend(seen[0] if seen else ())
    for i, m in enumerate(results):
        got = m.unreduced if m is not None else ()
        want = merge_set(reduced, mesh) if mesh is not None and reduced else ()
        if tuple(got) != tuple(want):
            raise fail(
                f"result {i} must be unreduced on exactly {{{', '.join(map(str, want))}}} "
                f"(the axes of its sharded reduction factors), not {{{', '.join(map(str, got))}}}"
            )
    if mesh is None:
        return
    sizes = rule.factor_sizes
    for v, tm, t in zip((*op.operands, *op.results), rule.mappings, tensors):
        local = low.local_shape(v)
        for d, factors in enumerate(tm):
            if len(factors) < 2:
                continue
            counts = [product(t.factors[f].axes, mesh) for f in factors]
            if all(k == 1 for k in counts):
                continue  # whole dim (its factors need not multiply to its size: convolution)
            parts = [chunk(sizes[f], k) for f, k in zip(factors, counts)]
            last = max((i for i, k in enumerate(counts) if k > 1), default=-1)
            if math.prod(parts) != local[d] or any(p != 1 for p in parts[: max(last, 0)]):
                raise fail(f"the shards of dim {d} of a {len(factors)}-factor dim are not blocks")


def _fix_dot_general(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    """Zero the padding of uneven sharded contracting dims on both sides (0 * garbage could be
    NaN, so both are masked)."""
    lhs, rhs = op.operands
    _, _, lc, rc = dot_general_dims(op)
    lhs_dims, rhs_dims = [], []
    for a, b in zip(lc, rc):
        n, k = low.global_shape(lhs)[a], low.shards(lhs, a)
        if k > 1 and n % k:
            lhs_dims.append((a, n, low.mapping(lhs).dims[a].axes))  # type: ignore[union-attr]
            rhs_dims.append((b, n, low.mapping(rhs).dims[b].axes))  # type: ignore[union-attr]
    if lhs_dims:
        op.set_operand(0, low.mask(lhs, lhs_dims, 0))
        op.set_operand(1, low.mask(rhs, rhs_dims, 0))


def _fix_reduce(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    """Padding of reduced dims becomes the identity; with sharded reduced dims only the first
    device of each group applies `init`, so the partial results combine to exactly one `init`."""
    if "body" in op.attributes:
        _no_sharded_reduction(low, op, rule)  # insert-reshards splits them (scalar_bodies.py)
        return
    x, init = op.operands
    kind = attr(op, "kind").word
    m = low.mapping(x)
    if m is None:
        return
    identity = identity_value(kind, x.type.dtype)
    padded, axes = [], []
    for d in attr(op, "dimensions"):
        n, k = low.global_shape(x)[d], m.num_shards(d)
        if k > 1:
            axes.extend(m.dims[d].axes)
            if n % k:
                padded.append((d, n, m.dims[d].axes))
    if padded:
        op.set_operand(0, low.mask(x, padded, identity))
    if axes and not _is_constant(init, identity):
        first = low.emit(
            "compare",
            [low.axis_index(tuple(axes)), low.const(0, "i32")],
            {"comparison_direction": Keyword("EQ")},
            (),
            "i1",
        )
        dtype = init.type.dtype
        op.set_operand(
            1, low.emit("select", [first, init, low.const(identity, dtype)], {}, (), dtype)
        )


def _check_sort(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    """Each device sorts whole slices: the sort dimension is unsharded everywhere."""
    d = sort_dimension(op)
    for v in (*op.operands, *op.results):
        if low.shards(v, d) > 1:
            raise PassError(
                f"'sort' op does not compute locally: its sort dimension {d} is sharded on "
                f"{v.label}; run insert-reshards before spmd",
                op.loc,
            )


def _is_constant(v: Value, value: Any) -> bool:
    d = v.defining_op
    if d is None or d.name != "constant":
        return False
    array = attr(d, "value").to_numpy(v.type.shape, v.type.dtype)
    return bool(np.all(array == value))


def _fix_slice(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    """A sharded dim is a whole-dim pass-through: its limit becomes the local size."""
    x = op.operand(0)
    limits = list(attr(op, "limit_indices"))
    for d in range(len(limits)):
        if low.shards(x, d) > 1:
            limits[d] = low.local_shape(x)[d]
    op.attributes["limit_indices"] = tuple(limits)


def _fix_gather(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
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


def _localize_gather_indices(low: _Lowering, op: Operation, sharded: list[tuple[int, int]]) -> None:
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


def _no_sharded_reduction(low: _Lowering, op: Operation, rule: OpShardingRule) -> None:
    for m in (low.mapping(r) for r in op.results):
        if m is not None and m.unreduced:
            raise PassError(
                f"'{op.name}' op with a sharded reduction factor (unreduced result) is not "
                "supported by spmd yet; replicate its indexed dims",
                op.loc,
            )


def _lower_region_op(low: _Lowering, op: Operation) -> None:
    """`while`/`case` stay as they are and run the region functions, which are lowered like
    every function (per-device functions on local blocks). insert-reshards laid the operands
    out as the functions' arguments and the results as their results; checked here."""
    def layouts(func: Function, key: str, declared: list) -> list[NamedMapping | None]:
        if is_spmd(func):  # already lowered: its signature records the global layouts
            return list(func.attributes.get(key, [None] * len(declared)))
        return [None if m is None else _closed(m) for m in declared]

    def check(v: Value, want: NamedMapping | None, what: str) -> None:
        have = low._layout(v) if low.mesh is not None else None
        if want is None or have is None:
            return
        if not same_layout(have, _closed(want)):
            raise PassError(
                f"'{op.name}' op: {what} is laid out as {have}, but the region function "
                f"expects {want}; run insert-reshards before spmd",
                op.loc,
            )

    for func, offset in region_signatures(low.module, op):
        args = layouts(func, "in_shardings", [a.mapping for a in func.args])
        for i, want in enumerate(args):
            check(op.operand(i + offset), want, f"operand {i + offset}")
        if op.name == "while" and func.name == attr(op, "cond").name:
            continue
        results = [getattr(t, "mapping", None) for t in func.result_types]
        for k, want in enumerate(layouts(func, "out_shardings", results)):
            check(op.results[k], want, f"result {k}")
    if op.name == "case":
        m = low.mapping(op.operand(0))
        if m is not None and not m.is_fully_replicated:
            raise PassError(
                f"'case' op: the branch index is {m}; it must be replicated (run "
                "insert-reshards before spmd)",
                op.loc,
            )


_HANDLERS = {
    "while": _lower_region_op,
    "case": _lower_region_op,
    "all_gather": _lower_all_gather,
    "all_slice": _lower_all_slice,
    "all_to_all": _lower_all_to_all,
    "collective_permute": _lower_collective_permute,
    "all_reduce": _lower_all_reduce,
    "reduce_scatter": _lower_reduce_scatter,
    "reshard": _lower_identity,
    "sharding_constraint": _lower_identity,
    "propagation_barrier": _lower_identity,
    "sharding_group": _lower_sharding_group,
    "manual_computation": _lower_manual,
    "constant": _lower_constant,
    "iota": _lower_iota,
}

_LOCAL_FIXES = {
    "dot_general": _fix_dot_general,
    "reduce": _fix_reduce,
    "slice": _fix_slice,
    "gather": _fix_gather,
    "scatter": _no_sharded_reduction,
    "sort": _check_sort,
}

from shardc.passes.spmd_extra import EXTRA_FIXES  # noqa: E402 - its fixes take a _Lowering

_LOCAL_FIXES.update(EXTRA_FIXES)
