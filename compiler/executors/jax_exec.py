"""The JAX executor: an SPMD program as one jitted `jax.shard_map` over a `jax.sharding.Mesh`.

    run = JaxExecutor(spmd_module)            # builds the Mesh, traces and jits once
    outputs = run({"x": x, "w": w})           # global numpy arrays in and out

The mesh has the program's axes, in order, on the devices `device_ids` names (device id i is
`jax.devices()[i]`); an axis the program also uses through sub-axes (`"x":(1)2`) is split into
one JAX mesh axis per sub-axis, so every collective names whole JAX axes. Each `spmd.*` op is one
JAX collective (jax_collectives.py; `collective_permute` is `ppermute`); every other op is its
`jax.lax` / `jax.numpy` counterpart on the local block (jax_ops/). Uneven dims are padded on
the host to whole shards before `device_put` and sliced after; unreduced inputs and outputs
travel with one extra leading dim split over their unreduced axes. On CPU, simulate devices with
`XLA_FLAGS=--xla_force_host_platform_device_count=8` set before JAX is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from shardc.executors import control
from shardc.executors.control import control_flow
from shardc.executors.device_layout import DeviceLayout, module_layout
from shardc.executors.host_callbacks import is_host_callback
from shardc.executors.jax_collectives import axis_index, named_axes_collective
from shardc.executors.jax_ops.host_callbacks import host_callback
from shardc.executors.jax_ops.table import JAX_OPS
from shardc.executors.jax_replica import replica_collective
from shardc.executors.jax_runtime import import_jax, on_mesh, shard_map
from shardc.executors.reduce_kinds import REDUCE_OP_KIND, REDUCE_UFUNCS, identity
from shardc.executors.replica_groups import DEVICE_IDS
from shardc.executors.signature import SpmdSignature, check_spmd_inputs
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops.registry import attr
from shardc.ir.ops.replica_collectives import REPLICA_COLLECTIVES
from shardc.ir.types import shard_shape

_WIDE = ("f64", "i64", "ui64")


class JaxExecutor:
    """Runs an SPMD module's `function` under `jax.shard_map`, jitted once."""

    def __init__(
        self,
        module: Module,
        function: str = "main",
        *,
        devices: Sequence[Any] = (),
        limits: Limits | None = DEFAULT_LIMITS,
        host_callbacks: Sequence[Callable[..., Any]] | None = None,
    ):
        jax = import_jax()
        # The Python functions of the program's host callbacks (jax_ops/host_callbacks.py).
        self.host_callbacks = host_callbacks
        func = module.lookup_function(function)
        if func is None:
            raise ExecutionError(f"module has no function @{function}")
        self.jax = jax
        self.module = module
        self.func = func
        self._starts: dict[tuple[tuple, int], Any] = {}  # (see `call`)
        self.sig = SpmdSignature.of(func)
        # None: loops run as lax.while_loop does, unbounded (the jitted Python API).
        self.loops = control.LoopWatch(limits) if limits is not None else None
        # JAX's own threefry lowering has ui64 values with 64-bit mode off: such a program is
        # traced (and run, so 64-bit host arrays keep their type) with 64-bit types on.
        self.wide = uses_wide_types(module)
        layout = module_layout(module, func)
        if layout is None or layout.rank == 0:
            # A program on one device (or a mesh of size-1 axes): a one-axis mesh of size 1.
            base = layout.mesh if layout is not None else DeviceMesh.create("single", {})
            layout = DeviceLayout(base, (), (), {})
            self.names: tuple[str, ...] = ("_",)
            shape: tuple[int, ...] = (1,)
        else:
            self.names = tuple(
                a.name if not a.is_sub_axis else f"{a.name}:({a.pre}){a.size}"
                for a in layout.atoms
            )
            shape = layout.sizes
        self.layout = layout
        available = list(devices) or jax.devices()
        mesh = layout.mesh
        if mesh.num_devices > len(available):
            raise ExecutionError(
                f"mesh @{mesh.name} has {mesh.num_devices} devices but JAX sees "
                f"{len(available)}; on CPU set XLA_FLAGS=--xla_force_host_platform_device_count="
                f"{mesh.num_devices} before importing jax"
            )
        grid = np.array([available[i] for i in mesh.all_device_ids()], dtype=object)
        self.mesh = jax.sharding.Mesh(grid.reshape(shape), self.names)
        self.position = mesh.positions_by_id()
        self.in_shardings = self._shardings(self.sig.in_shardings, self.sig.in_shapes)
        self.out_shardings = self._shardings(self.sig.out_shardings, self.sig.out_shapes)
        in_specs = tuple(self._spec(m) for m in self.in_shardings)
        out_specs = tuple(self._spec(m) for m in self.out_shardings)
        body = shard_map(jax)(self._body, self.mesh, in_specs, out_specs)
        self._fn = jax.jit(on_mesh(jax, body, self.mesh))

    # ----- running ----------------------------------------------------------------------------

    def __call__(self, inputs: Sequence[Any] | Mapping[str, Any]) -> list[np.ndarray]:
        return self.run(inputs)

    def run(self, inputs: Sequence[Any] | Mapping[str, Any]) -> list[np.ndarray]:
        """Global numpy arrays in (by position or argument name), global numpy arrays out."""
        arrays = check_spmd_inputs(self.func, self.sig, inputs)
        host = [_to_host(a, m) for a, m in zip(arrays, self.in_shardings)]
        with wide_types(self.jax, self.wide):
            outs = self._fn(*host)
        if self.loops is not None:
            self.loops.check()
        return [
            _from_host(np.asarray(o), s, m)
            for o, s, m in zip(outs, self.sig.out_shapes, self.out_shardings)
        ]

    # ----- specs --------------------------------------------------------------------------------

    def _shardings(self, given, shapes) -> list[NamedMapping]:
        if given is not None:
            return list(given)
        return [NamedMapping.fully_replicated(self.layout.mesh, len(s)) for s in shapes]

    def _first_device(self) -> Any:
        """Whether the device tracing is the mesh's first (its index 0 on every axis)."""
        lax = self.jax.lax
        return lax.eq(axis_index(lax, self.names), 0)

    def axis_names(self, refs) -> tuple[str, ...]:
        return tuple(self.names[i] for i in self.layout.index(refs))

    def _spec(self, m: NamedMapping) -> Any:
        entries: list[Any] = []
        if m.unreduced:
            entries.append(self.axis_names(m.unreduced))
        for dim in m.dims:
            entries.append(self.axis_names(dim.axes) or None)
        return self.jax.sharding.PartitionSpec(*entries)

    # ----- the traced body --------------------------------------------------------------------

    def _body(self, *args: Any) -> tuple[Any, ...]:
        args = tuple(a[0] if m.unreduced else a for a, m in zip(args, self.in_shardings))
        with wide_types(self.jax, self.wide):
            outs = self.call(self.func, args)
        return tuple(o[None] if m.unreduced else o for o, m in zip(outs, self.out_shardings))

    def call(self, func: Function, args: Sequence[Any]) -> tuple[Any, ...]:
        env: dict[int, Any] = {id(a): x for a, x in zip(func.args, args)}
        # (the all_slices' block starts computed in this function's trace: a region or callee
        # traced inside it starts its own, as values of one trace are not another's)
        outer, self._starts = self._starts, {}
        try:
            for op in func.body:
                xs = [env[id(v)] for v in op.operands]
                if op.name == "return":
                    return tuple(xs)
                out = self._op(op, xs)
                if len(op.results) == 1:
                    env[id(op.results[0])] = out
                else:
                    for r, v in zip(op.results, out):
                        env[id(r)] = v
        finally:
            self._starts = outer
        raise ExecutionError(f"function @{func.name} has no return", func.loc)

    def _op(self, op: Operation, xs: list[Any]) -> Any:
        name = op.name
        if name in ("call", "composite"):
            callee = self.module.lookup_function(
                attr(op, "callee" if name == "call" else "decomposition").name
            )
            assert callee is not None
            out = self.call(callee, xs)
            return out[0] if len(op.results) == 1 else out
        if name in ("while", "case"):
            return control.single(op, control_flow(self.module, op, self.call, xs, self.loops))
        if name.startswith("spmd."):
            return self._collective(op, xs)
        if name in DEVICE_IDS or name in REPLICA_COLLECTIVES:
            return replica_collective(self, op, xs)
        if name == "custom_call" and is_host_callback(op):
            return host_callback(self.jax, op, xs, self.host_callbacks, self._first_device)
        fn = JAX_OPS.get(name)
        if fn is None:
            raise ExecutionError(f"the JAX backend has no translation of '{name}' yet", op.loc)
        return fn(op, *xs)

    def _collective(self, op: Operation, xs: list[Any]) -> Any:
        lax = self.jax.lax
        name = op.name
        if name == "spmd.collective_permute":
            if not self.layout.atoms:
                return xs[0]
            perm = [(self.position[s], self.position[t]) for s, t in attr(op, "pairs")]
            return lax.ppermute(xs[0], self.names, perm)
        return named_axes_collective(self.jax, op, xs, self.axis_names(attr(op, "axes")),
                                     self._starts)


def run_jax(
    module: Module,
    inputs: Sequence[Any] | Mapping[str, Any],
    *,
    function: str = "main",
    limits: Limits = DEFAULT_LIMITS,
) -> list[np.ndarray]:
    """Run an SPMD module with JAX (global arrays in and out)."""
    return JaxExecutor(module, function, limits=limits).run(inputs)


def uses_wide_types(module: Module) -> bool:
    """Whether a value of `module` has a 64-bit type (f64, i64, ui64)."""
    for func in module.functions.values():
        if any(a.type.dtype in _WIDE for a in func.args):
            return True
        if any(r.type.dtype in _WIDE for op in func.body for r in op.results):
            return True
    return False


def wide_types(jax: Any, wide: bool) -> Any:
    """A context with JAX's 64-bit types on when `wide` (else nothing changes): the program's
    ui64/i64/f64 values keep their type, whatever the caller's `jax_enable_x64`."""
    return jax.enable_x64(True) if wide and not jax.config.jax_enable_x64 else nullcontext()


# ----- host side: padding and unreduced partials --------------------------------------------------


def _to_host(array: np.ndarray, m: NamedMapping) -> np.ndarray:
    """Pad every dim to whole shards; unreduced: a leading dim, the value first, then identities."""
    padded = [k * c for k, c in zip(m.shard_counts(), shard_shape(array.shape, m))]
    if padded != list(array.shape):
        array = np.pad(array, [(0, p - n) for n, p in zip(array.shape, padded)])
    if not m.unreduced:
        return array
    g = 1
    for ref in m.unreduced:
        g *= ref.axis_size(m.mesh)
    kind = REDUCE_OP_KIND[m.unreduced_op]
    out = np.full((g, *array.shape), identity(kind, array.dtype), dtype=array.dtype)
    out[0] = array
    return out


def _from_host(array: np.ndarray, shape: Sequence[int], m: NamedMapping) -> np.ndarray:
    if m.unreduced:
        ufunc = REDUCE_UFUNCS[REDUCE_OP_KIND[m.unreduced_op]]
        array = ufunc.reduce(array, axis=0, dtype=array.dtype)
    return np.array(array[tuple(slice(0, n) for n in shape)])
