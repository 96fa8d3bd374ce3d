"""The SPMD program over global `jax.Array`s: one `jax.jit` whose boundary is the program's
argument and result shardings, so arrays stay on their devices and results come back sharded.

    program = JaxArrayProgram(spmd_module, devices=list(mesh.devices.flat), mesh=mesh)
    ys = program(x, w)                  # jax.Arrays on the mesh (numpy inputs are placed first)
    program.in_shardings                # NamedShardings the arguments are expected in
    program.out_shardings               # NamedShardings the results come back in

`JaxExecutor.run` takes and returns numpy arrays and pads on the host; this runs the same
`jax.shard_map` body on arrays that may span processes (`jax.distributed`), so everything the
boundary needs happens inside the jitted program:

- a dim whose size its axes do not divide is padded to whole shards before `shard_map` and
  sliced after; JAX arrays must tile evenly, so such a dim is replicated in the boundary
  sharding (JAX's own rule for `jax.Array`s);
- an `unreduced` argument holds its value on the devices at index 0 of its unreduced axes and
  the reduction's identity elsewhere; an `unreduced` result is reduced over its unreduced axes
  (one all_reduce the report does not count) since a `jax.Array` has no partial values.

Boundary shardings are on `mesh` (the user's `jax.sharding.Mesh`) when they name whole axes of
it, else on the executor's mesh, whose axes are the program's sub-axes. Under
`jax.distributed`, numpy inputs are taken as the global value (every process passes the same
array) and placed with `jax.make_array_from_callback`; no code here assumes a platform: the
devices are whatever JAX gives (CPU, GPU, TPU).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.executors.jax_exec import JaxExecutor, wide_types
from shardc.executors.jax_runtime import import_jax, on_mesh, shard_map
from shardc.executors.reduce_kinds import REDUCE_OP_KIND, identity
from shardc.executors.replica_text import replica_text
from shardc.executors.xla_replicas import compile_text, load_replicas, replica_executable
from shardc.ir.core import Module
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.mapping import NamedMapping
from shardc.ir.placements import ReduceOp
from shardc.ir.types import numpy_dtype

__all__ = ["JaxArrayProgram", "global_array"]

class JaxArrayProgram:
    """An SPMD module's `function` as one jitted program over global `jax.Array`s."""

    def __init__(
        self,
        module: Module,
        function: str = "main",
        *,
        devices: Sequence[Any] = (),
        mesh: Any = None,
        donate: Sequence[bool] = (),
        host_callbacks: Sequence[Any] | None = None,
    ):
        jax = import_jax()
        self.jax = jax
        # limits=None: loops are lax.while_loop's, unbounded as in JAX (no host callback of
        # shardc's in the program a user jits, lowers or exports; the user's own are
        # `host_callbacks`).
        self.executor = ex = JaxExecutor(module, function, devices=devices, limits=None,
                                         host_callbacks=host_callbacks)
        sig = ex.sig
        self.in_mappings = list(ex.in_shardings)
        self.out_mappings = list(ex.out_shardings)
        self.in_shapes = [tuple(s) for s in sig.in_shapes]
        self.out_shapes = [tuple(s) for s in sig.out_shapes]
        self.in_dtypes = [np.dtype(numpy_dtype(a.type.dtype)) for a in ex.func.args]
        _check_boundary_width(jax, ex)
        self.boundary_mesh = mesh
        self.in_shardings = tuple(
            self._boundary(m, s) for m, s in zip(self.in_mappings, self.in_shapes)
        )
        self.out_shardings = tuple(
            self._boundary(m, s) for m, s in zip(self.out_mappings, self.out_shapes)
        )
        self.multi_process = any(
            d.process_index != jax.process_index() for d in ex.mesh.devices.flat
        )
        P = jax.sharding.PartitionSpec  # noqa: N806 - JAX's name
        in_specs = tuple(P(*self._entries(m)) for m in self.in_mappings)
        out_specs = tuple(P(*self._entries(m)) for m in self.out_mappings)
        grid = ex.mesh
        if host_callbacks and _same_grid(mesh, grid):
            # A callback's sharding is on the shard_map's mesh, which must then be the
            # boundary's own (one mesh per program, axis types included: Explicit ones too).
            grid = mesh
        body = on_mesh(jax, shard_map(jax)(self._body, grid, in_specs, out_specs), grid)

        def program(*args: Any) -> tuple[Any, ...]:
            padded = [_pad(jax, a, m) for a, m in zip(args, self.in_mappings)]
            outs = body(*padded)
            return tuple(o[tuple(slice(0, n) for n in s)] if o.shape != s else o
                         for o, s in zip(outs, self.out_shapes))

        program.__name__ = function
        # How `compile` built the executable: "text" or "trace" (N replicas of the body, from
        # shardc's printing or JAX's trace), "cache" (loaded), "partitioned"; "" before.
        self.route = ""
        # Donated arguments (jax.jit's donate_argnums): XLA may write results into their
        # buffers, and the arrays are deleted by the call.
        self.donate = tuple(bool(d) for d in donate)
        self.donate += (False,) * (len(self.in_shapes) - len(self.donate))
        # keep_unused: the module takes every argument, as the replicas' executable is called
        self.jitted = jax.jit(
            program, in_shardings=self.in_shardings, out_shardings=self.out_shardings,
            keep_unused=True,
            donate_argnums=tuple(i for i, d in enumerate(self.donate) if d),
        )

    # ----- running ----------------------------------------------------------------------------

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        """Global arrays in (jax.Arrays or numpy), global `jax.Array`s out."""
        if len(args) != len(self.in_shapes):
            raise ExecutionError(
                f"@{self.executor.func.name} takes {len(self.in_shapes)} arguments, "
                f"got {len(args)}"
            )
        return self.jitted(*self.place(args))

    def place(self, args: Sequence[Any], donate: bool = True) -> list[Any]:
        """Numpy arguments as global arrays (multi-process); arrays elsewhere moved to their
        boundary sharding (`jax.jit` would reject a committed array sharded otherwise). A
        donated argument that is moved is given up by the move (`donate=False`: kept). For
        the replicas' executable every argument is placed: it takes each array's per-device
        buffers as they are, in its devices' order."""
        out = []
        jax, whole = self.jax, self.replicas
        for a, s, given in zip(args, self.in_shardings, self.donate):
            if isinstance(a, jax.Array):
                if (a.committed or whole) and not _placed(a, s, whole):
                    moved = jax.device_put(a, s, may_alias=False)
                    if given and donate and not _shares_buffers(a, moved):
                        a.delete()  # given up: no second copy of it stays alive
                    a = moved
            elif self.multi_process:
                a = global_array(jax, np.asarray(a), s)
            elif whole:
                a = jax.device_put(a, s)
            out.append(a)
        return out

    def compile(self, traced: Callable[[], None] | None = None) -> Any:
        """XLA's executable of the program, called as `executable(*placed_arrays)`. When the
        program fits, N replicas of the per-device body (xla_replicas.py: no SPMD partitioner
        in XLA's compile), from shardc's own printing of it (replica_text.py: no trace) or
        else from JAX's trace of it; otherwise the partitioned module `jax.jit` compiles.
        `traced()` is called once the Python work is done, before XLA compiles."""
        text = replica_text(self)
        executable = None
        if text is not None:
            executable = compile_text(self.jax, text, self.executor.mesh.devices.flat,
                                      len(self.in_shapes), self.out_shardings,
                                      self._out_types(), traced)
        if executable is not None:
            self.route = "text"
            return executable
        lowered = self.lower()
        if traced is not None:
            traced()
        executable = replica_executable(self.jax, lowered, self.in_shardings,
                                        self.out_shardings, self._out_types())
        self.route = "trace" if executable is not None else "partitioned"
        return executable if executable is not None else lowered.compile()

    @property
    def replicas(self) -> bool:
        """Whether `compile` built N replicas of the body (its executable then takes only
        arrays already in the boundary shardings, which `place` makes)."""
        return self.route in ("text", "trace", "cache")

    def load(self, payload: bytes) -> Any:
        """The replicas' executable `compile` built and the cache kept (None: `payload` holds
        another kind)."""
        executable = load_replicas(self.jax, payload, self.in_shardings, self.out_shardings,
                                   self._out_types())
        if executable is not None:
            self.route = "cache"
        return executable

    def _out_types(self) -> list[tuple[tuple[int, ...], Any]]:
        return [(shape, np.dtype(numpy_dtype(t.dtype)))
                for shape, t in zip(self.out_shapes, self.executor.func.result_types)]

    def lower(self) -> Any:
        """`jax.jit(...).lower` on the program's argument shapes and shardings."""
        structs = [
            self.jax.ShapeDtypeStruct(shape, dtype, sharding=s)
            for shape, dtype, s in zip(self.in_shapes, self.in_dtypes, self.in_shardings)
        ]
        return self.jitted.lower(*structs)

    # ----- the boundary -------------------------------------------------------------------------

    def _entries(self, m: NamedMapping) -> list[Any]:
        return [self.executor.axis_names(d.axes) or None for d in m.dims]

    def _boundary(self, m: NamedMapping, shape: tuple[int, ...]) -> Any:
        """The `NamedSharding` of a boundary value: its dims' axes (uneven dims replicated),
        without its unreduced axes."""
        jax = self.jax
        entries = self._entries(m)
        for d, (n, count) in enumerate(zip(shape, m.shard_counts())):
            if n % count:
                entries[d] = None
        mesh = self.boundary_mesh
        names = {a for e in entries if e for a in e}
        if mesh is None or not names <= set(mesh.axis_names):
            mesh = self.executor.mesh
        spec = jax.sharding.PartitionSpec(*(_spec_entry(e) for e in entries))
        return jax.sharding.NamedSharding(mesh, spec)

    # ----- the traced body --------------------------------------------------------------------

    def _body(self, *args: Any) -> tuple[Any, ...]:
        lax, jnp = self.jax.lax, self.jax.numpy
        ex = self.executor
        local = []
        for a, m in zip(args, self.in_mappings):
            if m.unreduced:
                # Index 0 of the unreduced axes holds the value, the others the identity.
                first = lax.axis_index(ex.axis_names(m.unreduced)) == 0
                neutral = identity(REDUCE_OP_KIND[m.unreduced_op], np.dtype(a.dtype))
                a = jnp.where(first, a, jnp.asarray(neutral, dtype=a.dtype))
            local.append(a)
        with wide_types(self.jax, ex.wide):  # JAX's threefry: ui64 with 64-bit mode off
            outs = ex.call(ex.func, local)
        return tuple(
            _reduce(self.jax, o, ex.axis_names(m.unreduced), m.unreduced_op) if m.unreduced else o
            for o, m in zip(outs, self.out_mappings)
        )


def _check_boundary_width(jax: Any, ex: JaxExecutor) -> None:
    """64-bit arguments and results need JAX's 64-bit mode: a `jax.Array` of one cannot exist
    without it (inside, the program computes 64-bit values whatever the mode)."""
    if jax.config.jax_enable_x64:
        return
    types = [(f"argument {i}", a.type) for i, a in enumerate(ex.func.args)]
    types += [(f"result {i}", t) for i, t in enumerate(ex.func.result_types)]
    for what, t in types:
        if t.dtype in ("f64", "i64", "ui64"):
            raise ExecutionError(
                f"{what} of @{ex.func.name} is {t.dtype}, which a jax.Array holds only with "
                "64-bit mode on: jax.config.update('jax_enable_x64', True)"
            )


def _placed(a: Any, sharding: Any, exact: bool) -> bool:
    """Whether the array `a` is in `sharding` (`exact`: on its devices in its order too)."""
    if not a.sharding.is_equivalent_to(sharding, a.ndim):
        return False
    return not exact or a.sharding._device_assignment == sharding._device_assignment


def _shares_buffers(a: Any, b: Any) -> bool:
    """Whether the arrays share a device buffer: `device_put` keeps a one-device array's
    buffer as its device's shard of a replicated copy even with `may_alias=False` (JAX 0.10),
    so deleting the original would delete that shard too."""
    def pointers(x: Any) -> set[int]:
        return {shard.data.unsafe_buffer_pointer() for shard in x.addressable_shards}

    return bool(pointers(a) & pointers(b))


def _spec_entry(names: tuple[str, ...] | None) -> Any:
    if not names:
        return None
    return names[0] if len(names) == 1 else names


def _pad(jax: Any, x: Any, m: NamedMapping) -> Any:
    counts = m.shard_counts()
    widths = [(0, -n % c) for n, c in zip(x.shape, counts)]
    if not any(hi for _, hi in widths):
        return x
    return jax.numpy.pad(x, widths)


def _reduce(jax: Any, x: Any, axes: tuple[str, ...], op: ReduceOp) -> Any:
    """`x` reduced with `op` over the mesh axes `axes` (inside `shard_map`)."""
    lax = jax.lax
    if op is ReduceOp.SUM:
        return lax.psum(x, axes)
    if op is ReduceOp.MAX:
        return lax.pmax(x, axes)
    if op is ReduceOp.MIN:
        return lax.pmin(x, axes)
    combine = {ReduceOp.PROD: lax.mul, ReduceOp.AND: lax.bitwise_and,
               ReduceOp.OR: lax.bitwise_or}[op]
    neutral = np.array(identity(REDUCE_OP_KIND[op], np.dtype(x.dtype)), dtype=x.dtype)
    return lax.reduce(lax.all_gather(x, axes, axis=0), neutral, combine, (0,))


def global_array(jax: Any, value: np.ndarray, sharding: Any) -> Any:
    """A global `jax.Array` of `value` (the whole array, the same in every process) with
    `sharding`; each process fills only the shards on its own devices."""
    return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])


def _same_grid(mesh: Any, grid: Any) -> bool:
    """Whether the `jax.sharding.Mesh` `mesh` has `grid`'s axes and devices, in its order."""
    return (mesh is not None and hasattr(mesh, "devices")
            and tuple(mesh.axis_names) == tuple(grid.axis_names)
            and mesh.devices.shape == grid.devices.shape
            and all(a == b for a, b in zip(mesh.devices.flat, grid.devices.flat)))
