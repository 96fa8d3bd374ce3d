"""The numpy SPMD executor: every device of the mesh in one process.

    outputs = run_spmd(spmd_module, {"x": x, "w": w})          # global arrays in and out
    blocks = scatter_inputs([x, w], shardings)                  # device id -> padded block
    outs = NumpyExecutor(spmd_module).run_blocks(blocks)        # per-device blocks out
    y = gather_outputs(outs, shapes, shardings)

Devices are batched, not looped: a value is one array of shape `(*mesh_atoms, *local_shape)`
where the leading dims are the mesh axes (split into the sub-axes the program uses, in mesh
order, so the row-major index over them is the mesh position) and each leading dim is either
full size or 1 -- 1 means every device along that axis holds the same block (a replicated
weight, a constant, the result of an all_reduce). Local ops run once on the whole batch with
numpy broadcasting (the reference kernels for element-wise ops, batched versions of the others),
so simulating N devices costs about what the unsharded program costs. Collectives are
reshapes, transposes and reductions over the leading dims; a collective whose `groups` are not
the ones its `axes` imply runs group by group on per-device blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import shardc.passes.spmd_ops  # noqa: F401 - registers the spmd.* ops
from shardc.executors import control
from shardc.executors.dtypes import LOW_FLOATS, is_float_dtype
from shardc.executors.kernels import KERNELS
from shardc.executors.reference import known_custom_call, order_inputs
from shardc.executors.scalar_bodies import body_reduce_kernel, sort_kernel
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError, ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import ELEMENTWISE, OPS, attr
from shardc.ir.placements import ReduceOp
from shardc.ir.types import numpy_dtype, shard_bounds, shard_shape
from shardc.passes.collectives.axes import cut_points, mesh_atoms, split_refs
from shardc.passes.collectives.groups import device_groups

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
Blocks = dict[int, np.ndarray]

_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or,
}
_REDUCE_OP_KIND = {ReduceOp.SUM: "add", ReduceOp.MAX: "maximum", ReduceOp.MIN: "minimum",
                   ReduceOp.PROD: "multiply", ReduceOp.AND: "and", ReduceOp.OR: "or"}


def identity(kind: str, dtype: np.dtype) -> Any:
    """The neutral element of `kind` (add, multiply, maximum, minimum, and, or) for `dtype`."""
    if dtype == np.bool_:
        return kind in ("multiply", "and", "minimum")
    if is_float_dtype(dtype):
        return {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}[kind]
    info = np.iinfo(dtype)
    return {"add": 0, "or": 0, "multiply": 1, "and": -1 if info.min < 0 else info.max,
            "maximum": info.min, "minimum": info.max}[kind]


# ----- the device layout ------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceLayout:
    """The leading dims of a batched value: `mesh` split into `atoms` (mesh order, major to
    minor); the row-major index over `sizes` is the mesh position."""

    mesh: DeviceMesh
    atoms: tuple[AxisRef, ...]
    sizes: tuple[int, ...]
    cuts: dict[str, tuple[int, ...]]

    @classmethod
    def build(cls, mesh: DeviceMesh, refs: Sequence[AxisRef]) -> DeviceLayout:
        cuts = cut_points(list(refs), mesh)
        atoms = tuple(mesh_atoms(cuts, mesh))
        return cls(mesh, atoms, tuple(a.axis_size(mesh) for a in atoms), cuts)

    @property
    def rank(self) -> int:
        return len(self.atoms)

    @property
    def num_devices(self) -> int:
        return self.mesh.num_devices

    def index(self, refs: Sequence[AxisRef]) -> list[int]:
        """Leading-dim indices of `refs`, in the order given (sub-axes split into atoms; axes
        of size 1 have none)."""
        kept = [r for r in refs if self.mesh.axis_size(r.name) > 1]
        atoms = split_refs(kept, self.cuts, self.mesh)
        return [self.atoms.index(a) for a in atoms]

    def full(self, x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
        """`x` broadcast to full size along leading dims `dims` (a view)."""
        shape = list(x.shape)
        for a in dims:
            shape[a] = self.sizes[a]
        return np.broadcast_to(x, shape)

    def positions(self, x: np.ndarray) -> np.ndarray:
        """`(num_devices, *local)`: every device's block, by mesh position."""
        x = self.full(x, range(self.rank))
        return x.reshape((self.num_devices,) + x.shape[self.rank:])

    def from_positions(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(self.sizes + x.shape[1:])


def _refs_of(m: NamedMapping) -> list[AxisRef]:
    return [*m.used_axes(), *m.unreduced]


def module_layout(module: Module, function: Function) -> DeviceLayout | None:
    """The device layout of an SPMD function (None when it has no mesh: one device)."""
    sym = function.attributes.get("mesh")
    if sym is None:
        return None
    mesh = module.meshes.get(sym.name)
    if mesh is None:
        raise ExecutionError(f"@{function.name} runs on mesh @{sym.name}, which is not declared")
    refs: list[AxisRef] = []
    for func in module.functions.values():
        for key in ("in_shardings", "out_shardings"):
            for m in func.attributes.get(key, ()):
                refs.extend(_refs_of(m))
        for op in func.body:
            axes = op.attributes.get("axes")
            if op.name.startswith("spmd.") and axes:
                refs.extend(axes)
    return DeviceLayout.build(mesh, refs)


# ----- global arrays <-> batched values ---------------------------------------------------------


def to_batched(array: np.ndarray, mapping: NamedMapping, layout: DeviceLayout) -> np.ndarray:
    """The batched value holding `array` laid out by `mapping` (padding is zero). With
    unreduced axes, the first device of each unreduced group holds the value and the others the
    reduction's identity."""
    shape = array.shape
    counts = mapping.shard_counts()
    chunks = shard_shape(shape, mapping)
    padded = [k * c for k, c in zip(counts, chunks)]
    if list(padded) != list(shape):
        array = np.pad(array, [(0, p - n) for n, p in zip(shape, padded)])
    split: list[int] = []
    labels: list[int] = []  # leading-dim index, or -1 - d for local dim d
    for d, dim in enumerate(mapping.dims):
        atoms = layout.index(dim.axes)
        split += [layout.sizes[a] for a in atoms] + [chunks[d]]
        labels += atoms + [-1 - d]
    x = array.reshape(split)
    present = sorted(a for a in labels if a >= 0)
    order = [labels.index(a) for a in present] + [labels.index(-1 - d) for d in range(len(shape))]
    x = x.transpose(order)
    lead = [layout.sizes[a] if a in present else 1 for a in range(layout.rank)]
    x = x.reshape(lead + list(chunks))
    if mapping.unreduced:
        kind = _REDUCE_OP_KIND[mapping.unreduced_op]
        dims = layout.index(mapping.unreduced)
        out = np.full(layout.full(x, dims).shape, identity(kind, x.dtype), dtype=x.dtype)
        first = tuple(slice(0, 1) if a in dims else slice(None) for a in range(layout.rank))
        out[first] = x
        x = out
    return x


def from_batched(
    x: np.ndarray, shape: Sequence[int], mapping: NamedMapping, layout: DeviceLayout
) -> np.ndarray:
    """The global array a batched value laid out by `mapping` holds (partials combined)."""
    r = layout.rank
    if mapping.unreduced:
        dims = layout.index(mapping.unreduced)
        ufunc = _UFUNCS[_REDUCE_OP_KIND[mapping.unreduced_op]]
        x = ufunc.reduce(layout.full(x, dims), axis=tuple(dims), keepdims=True, dtype=x.dtype)
    dim_atoms = [layout.index(dim.axes) for dim in mapping.dims]
    used = {a for atoms in dim_atoms for a in atoms}
    x = x[tuple(slice(0, 1) if a not in used else slice(None) for a in range(r))]
    x = layout.full(x, sorted(used))
    order = [a for a in range(r) if a not in used]
    for d, atoms in enumerate(dim_atoms):
        order += atoms + [r + d]
    chunks = x.shape[r:]
    counts = [math.prod(layout.sizes[a] for a in atoms) for atoms in dim_atoms]
    x = x.transpose(order).reshape([k * c for k, c in zip(counts, chunks)])
    return np.array(x[tuple(slice(0, n) for n in shape)])


def scatter(array: np.ndarray, mapping: NamedMapping) -> Blocks:
    """`device_put`: device id -> its padded block of `array` under `mapping` (unreduced axes:
    the first device of each group holds the value, the others the reduction's identity)."""
    layout = DeviceLayout.build(mapping.mesh, _refs_of(mapping))
    flat = layout.positions(to_batched(np.asarray(array), mapping, layout))
    return {mapping.mesh.device_id(p): np.array(flat[p]) for p in range(layout.num_devices)}


def gather(
    blocks: Mapping[int, np.ndarray], shape: Sequence[int], mapping: NamedMapping
) -> np.ndarray:
    """The global array per-device `blocks` laid out by `mapping` hold (partials combined)."""
    layout = DeviceLayout.build(mapping.mesh, _refs_of(mapping))
    mesh = mapping.mesh
    missing = [d for d in mesh.all_device_ids() if d not in blocks]
    if missing:
        raise ExecutionError(f"no block for devices {missing} of mesh @{mesh.name}")
    flat = np.stack([blocks[mesh.device_id(p)] for p in range(layout.num_devices)])
    return from_batched(layout.from_positions(flat), shape, mapping, layout)


def scatter_inputs(
    arrays: Sequence[np.ndarray], shardings: Sequence[NamedMapping]
) -> list[Blocks]:
    """Per input, device id -> padded block (see `scatter`)."""
    return [scatter(a, m) for a, m in zip(arrays, shardings, strict=True)]


def gather_outputs(
    blocks: Sequence[Mapping[int, np.ndarray]],
    shapes: Sequence[Sequence[int]],
    shardings: Sequence[NamedMapping],
) -> list[np.ndarray]:
    """Per output, the global array (see `gather`)."""
    return [gather(b, s, m) for b, s, m in zip(blocks, shapes, shardings, strict=True)]


def reference_blocks(array: np.ndarray, mapping: NamedMapping) -> Blocks:
    """The definition of a layout, device by device (for tests): `global[shard_bounds]` padded."""
    mesh = mapping.mesh
    out: Blocks = {}
    for p in range(mesh.num_devices):
        region = shard_bounds(array.shape, mapping, p)
        block = np.zeros(shard_shape(array.shape, mapping), dtype=array.dtype)
        data = array[tuple(slice(a, b) for a, b in region)]
        block[tuple(slice(0, n) for n in data.shape)] = data
        out[mesh.device_id(p)] = block
    return out


# ----- the program ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpmdSignature:
    """What the `spmd` pass records on a function: global shapes and shardings of its
    arguments and results."""

    in_shapes: tuple[tuple[int, ...], ...]
    out_shapes: tuple[tuple[int, ...], ...]
    in_shardings: tuple[NamedMapping, ...] | None
    out_shardings: tuple[NamedMapping, ...] | None

    @classmethod
    def of(cls, func: Function) -> SpmdSignature:
        if "in_shapes" not in func.attributes:
            raise ExecutionError(
                f"@{func.name} is not an SPMD program; run the 'spmd' pass first "
                "(shardc opt -p spmd, or the default pipeline)", func.loc
            )
        a = func.attributes
        return cls(
            tuple(tuple(s) for s in a["in_shapes"]),
            tuple(tuple(s) for s in a.get("out_shapes", ())),
            a.get("in_shardings"),
            a.get("out_shardings"),
        )


def check_inputs(
    func: Function, sig: SpmdSignature, inputs: Sequence[Any] | Mapping[str, Any]
) -> list[np.ndarray]:
    """Global input arrays in argument order, checked against the recorded global shapes."""
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    values = order_inputs(func, inputs)
    out = []
    for name, arg, shape, value in zip(names, func.args, sig.in_shapes, values):
        array = np.asarray(value)
        want = numpy_dtype(arg.type.dtype)
        if array.shape != shape or array.dtype != want:
            raise ExecutionError(
                f"argument %{name} of @{func.name} expects {list(shape)} {want}, got "
                f"{list(array.shape)} {array.dtype}", func.loc
            )
        out.append(array)
    return out


class NumpyExecutor:
    """Runs an SPMD module's `function` on every device of its mesh (see the module doc).

    `general_groups=True` runs every collective group by group on per-device blocks (slow; the
    semantics of `groups` taken literally), for cross-checking the batched path.
    """

    def __init__(self, module: Module, function: str = "main", *, general_groups: bool = False):
        func = module.lookup_function(function)
        if func is None:
            raise ExecutionError(f"module has no function @{function}")
        self.module = module
        self.func = func
        self.sig = SpmdSignature.of(func)
        self.layout = module_layout(module, func) or DeviceLayout.build(
            DeviceMesh.create("single", {}), []
        )
        self.general_groups = general_groups
        self._plans: dict[str, _Plan] = {}

    @classmethod
    def on_layout(cls, module: Module, layout: DeviceLayout) -> NumpyExecutor:
        """An executor for `call`ing per-device functions of `module` on batched values laid
        out by `layout` (no entry function: the body of a manual_computation)."""
        ex = cls.__new__(cls)
        ex.module, ex.layout, ex.general_groups, ex._plans = module, layout, False, {}
        return ex

    # ----- entry points ---------------------------------------------------------------------

    def run(self, inputs: Sequence[Any] | Mapping[str, Any]) -> list[np.ndarray]:
        """Global arrays in (by position or argument name), global arrays out."""
        arrays = check_inputs(self.func, self.sig, inputs)
        shardings = self._shardings(self.sig.in_shardings, self.sig.in_shapes)
        batched = [to_batched(a, m, self.layout) for a, m in zip(arrays, shardings)]
        outs = self.run_batched(batched)
        out_shardings = self._shardings(self.sig.out_shardings, self.sig.out_shapes)
        return [
            from_batched(x, s, m, self.layout)
            for x, s, m in zip(outs, self.sig.out_shapes, out_shardings)
        ]

    def run_blocks(self, blocks: Sequence[Mapping[int, np.ndarray]]) -> list[Blocks]:
        """Per-device blocks in (device id -> padded local block), per-device blocks out."""
        mesh = self.layout.mesh
        ids = mesh.all_device_ids()
        batched = []
        for i, b in enumerate(blocks):
            if any(d not in b for d in ids):
                raise ExecutionError(f"input {i} needs a block for every device {ids}")
            batched.append(self.layout.from_positions(np.stack([b[d] for d in ids])))
        outs = self.run_batched(batched)
        result = []
        for x in outs:
            flat = self.layout.positions(x)
            result.append({d: np.array(flat[p]) for p, d in enumerate(ids)})
        return result

    def run_batched(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return list(self.call(self.func, list(values)))

    def _shardings(self, given, shapes) -> list[NamedMapping]:
        if given is not None:
            return list(given)
        return [NamedMapping.fully_replicated(self.layout.mesh, len(s)) for s in shapes]

    # ----- interpretation -------------------------------------------------------------------

    def call(self, func: Function, args: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        plan = self._plans.get(func.name)
        if plan is None:
            plan = self._plans[func.name] = self._plan(func)
        env: list[Any] = [None] * plan.num_slots
        env[: len(args)] = args
        op = None
        try:
            for op, run, ins, outs, free in plan.steps:  # noqa: B007 - op names a failure
                result = run(*[env[i] for i in ins])
                if len(outs) == 1:
                    env[outs[0]] = result
                else:
                    for i, v in zip(outs, result):
                        env[i] = v
                for i in free:
                    env[i] = None
        except ShardcError:
            raise
        except Exception as e:
            name = op.name if op is not None else "?"
            raise ExecutionError(
                f"'{name}' op failed in the numpy SPMD executor: {type(e).__name__}: {e}",
                op.loc if op is not None else None,
            ) from e
        return tuple(env[i] for i in plan.returns)

    def _plan(self, func: Function) -> _Plan:
        slots = {id(a): i for i, a in enumerate(func.args)}
        steps: list[tuple[Operation, Callable[..., Any], list[int], list[int], list[int]]] = []
        returns: list[int] = []
        for op in func.body:
            ins = [slots[id(v)] for v in op.operands]
            if op.name == "return":
                returns = ins
                break
            outs = list(range(len(slots), len(slots) + len(op.results)))
            for r, i in zip(op.results, outs):
                slots[id(r)] = i
            steps.append((op, self._runner(op), ins, outs, []))
        last: dict[int, int] = {}
        for n, (_, _, ins, outs, _) in enumerate(steps):
            for i in (*ins, *outs):
                last[i] = n
        for i, n in last.items():
            if i not in returns:
                steps[n][4].append(i)
        return _Plan(len(slots), steps, returns)

    def _runner(self, op: Operation) -> Callable[..., Any]:
        name = op.name
        r = self.layout.rank
        if name in ("call", "composite"):
            callee = self.module.lookup_function(
                attr(op, "callee" if name == "call" else "decomposition").name
            )
            assert callee is not None
            single = len(op.results) == 1
            return lambda *xs: (lambda out: out[0] if single else out)(self.call(callee, list(xs)))
        if name in ("while", "case"):
            return self._region_runner(op)
        if name.startswith("spmd."):
            return _collective(op, self.layout, self.general_groups)
        batched = _BATCHED.get(name)
        if batched is not None:
            return batched(op, r)
        kernel = known_custom_call(op) if name == "custom_call" else KERNELS.get(name)
        if kernel is None:
            raise ExecutionError(f"no numpy kernel for op '{name}'", op.loc)
        op_def = OPS.get(name)
        if op_def is not None and op_def.has(ELEMENTWISE):
            rank = op.results[0].type.rank
            if name in ("select", "clamp"):  # scalar operands: align their (empty) local dims
                return lambda *xs: kernel(op, *[_lift(x, r, rank) for x in xs])
            return lambda *xs: kernel(op, *xs)
        return _per_device(op, kernel, self.layout)


    def _region_runner(self, op: Operation) -> Callable[..., Any]:
        """`while`/`case` on batched values: the predicate / branch index must be the same on
        every device (it is replicated), so the whole batch takes one path."""
        module = self.module

        def uniform(x: np.ndarray) -> Any:
            flat = np.asarray(x).reshape(-1)
            if flat.size and not np.all(flat == flat[0]):
                what = "loop condition" if op.name == "while" else "branch index"
                raise ExecutionError(
                    f"'{op.name}' op: the {what} differs between devices; it must be replicated",
                    op.loc,
                )
            return flat[0]

        if op.name == "while":
            control.while_functions(module, op)
            return lambda *xs: control.single(
                op, control.run_while(module, op, self.call, xs, lambda c: bool(uniform(c)))
            )
        control.branch_functions(module, op)
        return lambda *xs: control.single(
            op, control.run_case(module, op, self.call, xs, lambda i: int(uniform(i)))
        )


@dataclass
class _Plan:
    num_slots: int
    steps: list[tuple[Operation, Callable[..., Any], list[int], list[int], list[int]]]
    returns: list[int]


def _lift(x: np.ndarray, r: int, rank: int) -> np.ndarray:
    """Insert size-1 local dims so a lower-rank (scalar) operand broadcasts correctly."""
    missing = rank - (x.ndim - r)
    return x.reshape(x.shape[:r] + (1,) * missing + x.shape[r:]) if missing else x


def run_spmd(
    module: Module, inputs: Sequence[Any] | Mapping[str, Any], *, function: str = "main"
) -> list[np.ndarray]:
    """Run an SPMD module on its mesh, global arrays in and out."""
    return NumpyExecutor(module, function).run(inputs)


# ----- local ops on batched values --------------------------------------------------------------


def _per_device(op: Operation, kernel: Callable[..., Any], layout: DeviceLayout):
    """Fallback: run the kernel device by device."""
    r = layout.rank

    def run(*xs: np.ndarray) -> Any:
        flat = [layout.positions(x) for x in xs]
        outs = [kernel(op, *[f[p] for f in flat]) for p in range(layout.num_devices)]
        if len(op.results) == 1:
            return layout.from_positions(np.stack(outs))
        return tuple(
            layout.from_positions(np.stack([o[i] for o in outs])) for i in range(len(op.results))
        )

    if not op.operands:
        return lambda: _uniform(np.asarray(kernel(op)), r)
    return run


def _uniform(x: np.ndarray, r: int) -> np.ndarray:
    return x.reshape((1,) * r + x.shape)


def _local_shape(op: Operation) -> tuple[int, ...]:
    return op.results[0].type.shape


def _b_constant(op: Operation, r: int):
    value = _uniform(KERNELS["constant"](op), r)
    value.flags.writeable = False
    return lambda: value


def _b_iota(op: Operation, r: int):
    value = _uniform(np.ascontiguousarray(KERNELS["iota"](op)), r)
    value.flags.writeable = False
    return lambda: value


def _b_broadcast(op: Operation, r: int):
    dims = attr(op, "broadcast_dimensions")
    out = _local_shape(op)
    order = sorted(range(len(dims)), key=lambda i: dims[i])

    def run(x: np.ndarray) -> np.ndarray:
        if order != list(range(len(dims))):
            x = x.transpose(list(range(r)) + [r + i for i in order])
        expanded = list(x.shape[:r]) + [1] * len(out)
        for i, src in enumerate(order):
            expanded[r + dims[src]] = x.shape[r + i]
        return np.broadcast_to(x.reshape(expanded), x.shape[:r] + out)

    return run


def _b_reshape(op: Operation, r: int):
    out = _local_shape(op)
    return lambda x: x.reshape(x.shape[:r] + out)


def _b_transpose(op: Operation, r: int):
    perm = list(range(r)) + [r + p for p in attr(op, "permutation")]
    return lambda x: x.transpose(perm)


def _b_slice(op: Operation, r: int):
    start, limit = attr(op, "start_indices"), attr(op, "limit_indices")
    strides = attr(op, "strides") or (1,) * len(start)
    index = (slice(None),) * r + tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))
    return lambda x: x[index]


def _b_reverse(op: Operation, r: int):
    dims = tuple(r + d for d in attr(op, "dimensions"))
    return lambda x: np.flip(x, axis=dims) if dims else x


def _b_concatenate(op: Operation, r: int):
    dim = r + attr(op, "dimension")

    def run(*xs: np.ndarray) -> np.ndarray:
        lead = np.broadcast_shapes(*[x.shape[:r] for x in xs])
        return np.concatenate([np.broadcast_to(x, lead + x.shape[r:]) for x in xs], axis=dim)

    return run


def _b_pad(op: Operation, r: int):
    lo, hi = attr(op, "edge_padding_low"), attr(op, "edge_padding_high")
    interior = attr(op, "interior_padding") or (0,) * len(lo)
    kernel = KERNELS["pad"]

    def run(x: np.ndarray, value: np.ndarray) -> np.ndarray:
        if value.size != 1:
            return _per_device(op, kernel, _layout_like(x, r))(x, value)
        spread = [n + max(n - 1, 0) * k for n, k in zip(x.shape[r:], interior)]
        buffer = [max(a, 0) + n + max(b, 0) for a, n, b in zip(lo, spread, hi)]
        out = np.full(x.shape[:r] + tuple(buffer), value.reshape(()), dtype=x.dtype)
        inner = tuple(slice(max(a, 0), max(a, 0) + n, k + 1) for a, n, k in
                      zip(lo, spread, interior))
        out[(slice(None),) * r + inner] = x
        crop = tuple(slice(max(-a, 0), size - max(-b, 0)) for a, b, size in zip(lo, hi, buffer))
        return out[(slice(None),) * r + crop]

    return run


def _layout_like(x: np.ndarray, r: int) -> DeviceLayout:
    mesh = DeviceMesh.create("batch", {f"a{i}": n for i, n in enumerate(x.shape[:r])})
    return DeviceLayout.build(mesh, [])


def _dot_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    if is_float_dtype(out) or is_float_dtype(lhs) or is_float_dtype(rhs):
        return F64 if F64 in (lhs, rhs, out) else F32
    return I64 if out == np.bool_ else out


def _b_dot_general(op: Operation, r: int):
    lb, rb, lc, rc = dot_general_dims(op)
    out_local = _local_shape(op)
    out_dtype = numpy_dtype(op.results[0].type.dtype)
    lead = list(range(r))

    def run(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        lrank, rrank = lhs.ndim - r, rhs.ndim - r
        lf = [d for d in range(lrank) if d not in lb and d not in lc]
        rf = [d for d in range(rrank) if d not in rb and d not in rc]
        ls, rs = lhs.shape[r:], rhs.shape[r:]
        b = math.prod(ls[d] for d in lb)
        k = math.prod(ls[d] for d in lc)
        m = math.prod(ls[d] for d in lf)
        n = math.prod(rs[d] for d in rf)
        compute = _dot_dtype(lhs.dtype, rhs.dtype, out_dtype)
        a = lhs.transpose(lead + [r + d for d in (*lb, *lf, *lc)])
        c = rhs.transpose(lead + [r + d for d in (*rb, *rc, *rf)])
        la, ra = lhs.shape[:r], rhs.shape[:r]
        if not lb and all(p == 1 or q == 1 for p, q in zip(la, ra)):
            # No device dim varies on both sides (data x tensor parallel, replicated
            # activations): one big GEMM over all devices' rows and columns, as fast as the
            # unsharded product, instead of one small GEMM per device.
            a = a.reshape(math.prod(la) * m, k).astype(compute, copy=False)
            c = np.moveaxis(c.reshape(ra + (k, n)), r, 0).reshape(k, math.prod(ra) * n)
            out = np.matmul(a, c.astype(compute, copy=False)).reshape(la + (m,) + ra + (n,))
            pick = [i if la[i] > 1 else r + 1 + i for i in range(r)]
            rest = [i for i in range(2 * r + 2) if i not in pick and i not in (r, 2 * r + 1)]
            out = out.transpose(pick + [r, 2 * r + 1] + rest)
            out_lead = tuple(max(p, q) for p, q in zip(la, ra))
            return out.reshape(out_lead + out_local).astype(out_dtype, copy=False)
        a = a.reshape(la + ((b, m, k) if lb else (m, k))).astype(compute, copy=False)
        c = c.reshape(ra + ((b, k, n) if lb else (k, n))).astype(compute, copy=False)
        out = np.matmul(a, c)
        return out.reshape(out.shape[:r] + out_local).astype(out_dtype, copy=False)

    return run


def _b_reduce(op: Operation, r: int):
    if "body" in op.attributes:  # the device dims are batch dims of the vectorised body
        return lambda *xs: body_reduce_kernel(KERNELS, np, r)(op, *xs)
    kind = attr(op, "kind").word
    ufunc = _UFUNCS[kind]
    dims = tuple(r + d for d in attr(op, "dimensions"))
    out_rank = len(_local_shape(op))
    kernel = KERNELS["reduce"]

    def run(x: np.ndarray, init: np.ndarray) -> np.ndarray:
        if any(x.shape[d] == 0 for d in dims):
            return _per_device(op, kernel, _layout_like(x, r))(x, init)
        dtype = x.dtype
        compute = F32 if dtype in LOW_FLOATS else dtype
        out = ufunc.reduce(x.astype(compute, copy=False), axis=dims, dtype=compute)
        init = init.astype(compute, copy=False).reshape(init.shape[:r] + (1,) * out_rank)
        return np.asarray(ufunc(out, init)).astype(dtype, copy=False)

    return run


_BATCHED: dict[str, Callable[[Operation, int], Callable[..., Any]]] = {
    "constant": _b_constant,
    "iota": _b_iota,
    "broadcast_in_dim": _b_broadcast,
    "reshape": _b_reshape,
    "transpose": _b_transpose,
    "slice": _b_slice,
    "reverse": _b_reverse,
    "concatenate": _b_concatenate,
    "pad": _b_pad,
    "dot_general": _b_dot_general,
    "reduce": _b_reduce,
    "sort": lambda op, r: lambda *xs: sort_kernel(KERNELS, np, r)(op, *xs),
}


# ----- collectives on batched values ------------------------------------------------------------


def _collective(op: Operation, layout: DeviceLayout, general: bool) -> Callable[..., Any]:
    name = op.name
    r = layout.rank
    if name == "spmd.axis_index":
        return _axis_index(op, layout)
    if name == "spmd.collective_permute":
        return _permute(op, layout)
    axes = attr(op, "axes")
    g = layout.index(axes)
    groups = [list(x) for x in attr(op, "groups")]
    if general or groups != device_groups(layout.mesh, axes):
        return _grouped(op, layout, groups)
    if name == "spmd.all_gather":
        d = attr(op, "dim")
        return lambda x: _gather(layout, x, g, r + d)
    if name == "spmd.all_slice":
        d = attr(op, "dim")
        return lambda x: _slice(layout, x, g, r + d)
    if name == "spmd.all_to_all":
        s, c = attr(op, "split_dim"), attr(op, "concat_dim")
        return lambda x: _slice(layout, _gather(layout, x, g, r + c), g, r + s)
    if name == "spmd.all_reduce":
        kind = attr(op, "kind").word
        return lambda x: _reduce(layout, x, g, kind)
    if name == "spmd.reduce_scatter":
        d = attr(op, "dim")
        return lambda x: _slice(layout, _reduce(layout, x, g, "add"), g, r + d)
    raise ExecutionError(f"the numpy executor has no implementation of '{name}'", op.loc)


def _gather(layout: DeviceLayout, x: np.ndarray, g: list[int], dim: int) -> np.ndarray:
    """Concatenate the group's blocks (member order) along `dim`; uniform along `g` after."""
    r = layout.rank
    x = layout.full(x, g)
    rest = [a for a in range(r) if a not in g]
    perm = rest + list(range(r, dim)) + g + list(range(dim, x.ndim))
    local = list(x.shape[r:])
    local[dim - r] *= math.prod(layout.sizes[a] for a in g)
    lead = [1 if a in g else x.shape[a] for a in range(r)]
    return x.transpose(perm).reshape(lead + local)


def _slice(layout: DeviceLayout, x: np.ndarray, g: list[int], dim: int) -> np.ndarray:
    """Each device keeps part `i` (its index in the group) of `dim`, cut into equal parts."""
    x = layout.full(x, g)
    sizes = [layout.sizes[a] for a in g]
    part = x.shape[dim] // math.prod(sizes)
    x = x.reshape(x.shape[:dim] + tuple(sizes) + (part,) + x.shape[dim + 1:])
    for a in g:  # the device's own part: the diagonal of its leading dim and the split dim
        x = np.moveaxis(np.diagonal(x, axis1=a, axis2=dim), -1, a)
    return x


def _reduce(layout: DeviceLayout, x: np.ndarray, g: list[int], kind: str) -> np.ndarray:
    x = layout.full(x, g)
    dtype = x.dtype
    compute = F32 if dtype in LOW_FLOATS else dtype
    out = _UFUNCS[kind].reduce(x, axis=tuple(g), keepdims=True, dtype=compute)
    return out.astype(dtype, copy=False)


def _axis_index(op: Operation, layout: DeviceLayout) -> Callable[[], np.ndarray]:
    index = np.zeros((1,) * layout.rank, dtype=np.int32)
    for a in layout.index(attr(op, "axes")):
        shape = [1] * layout.rank
        shape[a] = layout.sizes[a]
        index = index * layout.sizes[a] + np.arange(layout.sizes[a], dtype=np.int32).reshape(shape)
    index.flags.writeable = False
    return lambda: index


def _permute(op: Operation, layout: DeviceLayout) -> Callable[[np.ndarray], np.ndarray]:
    mesh = layout.mesh
    position = {mesh.device_id(p): p for p in range(mesh.num_devices)}
    pairs = attr(op, "pairs")
    src = np.array([position[s] for s, _ in pairs], dtype=np.intp)
    tgt = np.array([position[t] for _, t in pairs], dtype=np.intp)

    def run(x: np.ndarray) -> np.ndarray:
        flat = layout.positions(x)
        out = np.zeros_like(flat)  # lax.ppermute: a device no pair targets receives zeros
        out[tgt] = flat[src]
        return layout.from_positions(out)

    return run


def _grouped(op: Operation, layout: DeviceLayout, groups: list[list[int]]):
    """A collective run group by group on per-device blocks, exactly as `groups` says."""
    mesh = layout.mesh
    position = {mesh.device_id(p): p for p in range(mesh.num_devices)}
    covered = sorted(d for grp in groups for d in grp)
    if covered != sorted(position):
        raise ExecutionError(f"'{op.name}' op groups must cover every device once", op.loc)
    name = op.name
    kind = attr(op, "kind").word if name == "spmd.all_reduce" else "add"

    def parts(block: np.ndarray, dim: int, n: int) -> list[np.ndarray]:
        return np.split(block, n, axis=dim)

    def run(x: np.ndarray) -> np.ndarray:
        flat = layout.positions(x)
        block_dtype = x.dtype
        out: list[Any] = [None] * layout.num_devices
        for grp in groups:
            members = [flat[position[d]] for d in grp]
            n = len(grp)
            if name == "spmd.all_gather":
                whole = np.concatenate(members, axis=attr(op, "dim"))
                new = [whole] * n
            elif name == "spmd.all_slice":
                new = [parts(b, attr(op, "dim"), n)[i] for i, b in enumerate(members)]
            elif name == "spmd.all_to_all":
                s, c = attr(op, "split_dim"), attr(op, "concat_dim")
                pieces = [parts(b, s, n) for b in members]
                new = [np.concatenate([p[j] for p in pieces], axis=c) for j in range(n)]
            else:
                total = _UFUNCS[kind].reduce(np.stack(members), axis=0, dtype=block_dtype)
                new = [total] * n if name == "spmd.all_reduce" else parts(total, attr(op, "dim"), n)
            for d, block in zip(grp, new):
                out[position[d]] = block
        return layout.from_positions(np.stack(out))

    return run
