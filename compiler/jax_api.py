"""From a JAX function to a shardc module, and shardc's shardings back to JAX.

    module = from_jax(f, x, w, mesh=mesh, in_shardings=(P("dp"), P(None, "tp")))
    ins, outs = to_jax_shardings(module, mesh)            # NamedShardings, one per arg/result
    jax_mesh = mesh_to_jax(module.meshes["mesh"])          # a jax.sharding.Mesh, device order kept

`from_jax` lowers with `jax.jit(f, in_shardings=..., out_shardings=...).lower(*args)`, prints it
with `as_text(debug_info=True)` (every op keeps the file and line of the Python that made it, so
errors and `shardc explain` point at the user's code) and imports the StableHLO + sdy text
(docs/interop.md says what imports). JAX is imported only when these functions run; without it
they raise a `ShardcError` with the install command. See docs/jax.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.ir.core import Function, Module
from shardc.ir.diagnostics import ConversionError, ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.types import DistributedTensorType

__all__ = ["from_jax", "lower_to_text", "mesh_to_jax", "to_jax_shardings"]

INSTALL_HINT = "pip install 'shardc[jax]'"


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        raise ShardcError(f"this needs JAX, which is not installed: {INSTALL_HINT}") from None
    return jax


# ----- JAX -> shardc ----------------------------------------------------------------------------


def from_jax(
    f: Callable[..., Any],
    *args: Any,
    mesh: Any = None,
    in_shardings: Any = None,
    out_shardings: Any = None,
) -> Module:
    """Lower `f` on `args` (arrays or `jax.ShapeDtypeStruct`s) with `jax.jit` and import it.

    `in_shardings` / `out_shardings` are what `jax.jit` takes (`NamedSharding`s, a pytree of
    them, or None to leave them to propagation). With `mesh` (a `jax.sharding.Mesh` or
    `AbstractMesh`), `PartitionSpec`s are accepted in their place and bound to that mesh:

        from_jax(f, x, w, mesh=mesh, in_shardings=(P("dp", None), P(None, "tp")))
    """
    from shardc.stablehlo import import_stablehlo

    text = lower_to_text(f, *args, mesh=mesh, in_shardings=in_shardings,
                         out_shardings=out_shardings)
    return import_stablehlo(text, f"<jax:{getattr(f, '__name__', 'f')}>")


def lower_to_text(
    f: Callable[..., Any],
    *args: Any,
    mesh: Any = None,
    in_shardings: Any = None,
    out_shardings: Any = None,
    host_callbacks: list[Any] | None = None,
) -> str:
    """The StableHLO + sdy text `jax.jit` lowers `f` to (what `from_jax` imports).
    `host_callbacks`: a list the lowering's Python host callbacks are added to, in the order
    the text's `custom_call`s index them (executors/jax_ops/host_callbacks.py)."""
    jax = _jax()
    in_shardings = _bind_specs(in_shardings, mesh, "in_shardings")
    out_shardings = _bind_specs(out_shardings, mesh, "out_shardings")
    kwargs = {}
    if in_shardings is not None:
        kwargs["in_shardings"] = in_shardings
    if out_shardings is not None:
        kwargs["out_shardings"] = out_shardings
    _hide_own_frames()
    jitted = jax.jit(f, keep_unused=True, **kwargs)  # an argument per argument, used or not
    if isinstance(mesh, jax.sharding.AbstractMesh):
        # No devices to lower for: JAX wants the platform named.
        platform = getattr(mesh.abstract_device, "platform", None) or jax.default_backend()
        lowered = jitted.trace(*args).lower(lowering_platforms=(platform,))
    else:
        lowered = jitted.lower(*args)
    if host_callbacks is not None:
        # (JAX's own record of them: what its compile hands XLA)
        compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", {})
        host_callbacks.extend(compile_args.get("host_callbacks", ()))
    # With debug info: every op keeps the Python file and line that made it (explanations and
    # errors point there).
    return lowered.as_text(debug_info=True)


def _hide_own_frames() -> None:
    """Have JAX's locations skip shardc's own frames, as they skip JAX's (Flax does the same):
    ops JAX makes outside the user's code, a function's `return` among them, are then located
    at the user's call of `shardc.jit`'s function, not in the shardc module that traced it
    (explanations and warnings print these locations)."""
    try:
        from jax._src import source_info_util  # noqa: PLC0415 - JAX's own registry, private
    except ImportError:  # (another JAX: its locations are left as they are)
        return
    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    if own not in getattr(source_info_util, "_exclude_paths", [own]):
        source_info_util.register_exclusion(own)


def _bind_specs(shardings: Any, mesh: Any, what: str) -> Any:
    """Replace every PartitionSpec in the pytree `shardings` with `NamedSharding(mesh, spec)`."""
    if shardings is None:
        return None
    jax = _jax()
    P, NamedSharding = jax.sharding.PartitionSpec, jax.sharding.NamedSharding

    def bind(leaf: Any) -> Any:
        if not isinstance(leaf, P):
            return leaf
        if mesh is None:
            raise ShardcError(
                f"{what} has a PartitionSpec ({leaf}) but no mesh was given: pass "
                "mesh=jax.sharding.Mesh(...) or use NamedShardings"
            )
        try:
            return NamedSharding(mesh, leaf)
        except Exception as e:  # JAX's checks: an axis the mesh lacks (ValueError), one twice
            raise ShardcError(f"{what}: {leaf} is not a sharding on this mesh: {e}") from None

    return jax.tree_util.tree_map(bind, shardings, is_leaf=lambda x: isinstance(x, P))


# ----- shardc -> JAX ----------------------------------------------------------------------------


def mesh_to_jax(device_mesh: DeviceMesh, devices: Sequence[Any] | None = None) -> Any:
    """A `jax.sharding.Mesh` with the axes of `device_mesh` and its device order.

    `device_ids[p]` of `sdy.mesh @m = <["x"=2, "y"=2], device_ids=[3, 1, 2, 0]>` indexes
    `devices` (default: `jax.devices()`), so position p of the JAX mesh holds
    `devices[device_ids[p]]`. Axis types are `Auto` (what propagation needs).
    """
    jax = _jax()
    pool = list(jax.devices() if devices is None else devices)
    n = device_mesh.num_devices
    if n > len(pool):
        raise ConversionError(
            f"mesh @{device_mesh.name} needs {n} devices, only {len(pool)} are available "
            "(on CPU, set XLA_FLAGS=--xla_force_host_platform_device_count=N before importing jax)"
        )
    order = device_mesh.device_ids if device_mesh.device_ids is not None else range(n)
    grid = np.empty(n, dtype=object)
    for position, index in enumerate(order):
        grid[position] = pool[index]
    shape = tuple(size for _, size in device_mesh.axes)
    axis_types = (jax.sharding.AxisType.Auto,) * len(shape)
    return jax.sharding.Mesh(grid.reshape(shape), device_mesh.axis_names, axis_types=axis_types)


def to_jax_shardings(
    module: Module, mesh: Any, function: str = "main"
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """`(in_shardings, out_shardings)` of `@function` as `NamedSharding`s on `mesh`.

    `[{"dp"}, {}]` -> `P("dp", None)`, `[{"x", "y"}, {?}]` -> `P(("x", "y"), P.UNCONSTRAINED)`,
    an argument or result without a sharding -> None (unspecified, as jit reads it). Raises
    `ConversionError` for what a PartitionSpec cannot say: sub-axes, priorities, open dims that
    already have axes, `replicated` axes on a sharding with open dims, or a mesh whose axes or
    device order differ from `mesh` (build it with `mesh_to_jax`; an `sdy.mesh` without
    device_ids matches any order, since JAX's text never records a Mesh's device order).

    For `jax.jit`, pass `out_shardings=outs[0]` when `f` returns a single array, and close the
    module's shardings first: jit rejects `P.UNCONSTRAINED` in in/out shardings.
    """
    func = module.functions.get(function)
    if func is None:
        raise ConversionError(
            f"module has no function @{function} (functions: "
            f"{', '.join('@' + n for n in module.functions) or 'none'})"
        )
    ins = tuple(
        _named_sharding(a.mapping, mesh, f"argument #{i} of @{func.name}")
        for i, a in enumerate(func.args)
    )
    outs = tuple(
        _named_sharding(_result_mapping(func, i), mesh, f"result #{i} of @{func.name}")
        for i in range(len(func.result_types))
    )
    return ins, outs


def _result_mapping(func: Function, index: int) -> NamedMapping | None:
    t = func.result_types[index]
    return t.mapping if isinstance(t, DistributedTensorType) else None


def _named_sharding(mapping: NamedMapping | None, mesh: Any, where: str) -> Any:
    if mapping is None:
        return None
    jax = _jax()
    P = jax.sharding.PartitionSpec
    _check_mesh(mapping.mesh, mesh, where)
    text = f"{where} ({mapping})"
    entries: list[Any] = []
    for d, dim in enumerate(mapping.dims):
        if dim.priority is not None:
            raise ConversionError(f"{text}: dim {d} has priority p{dim.priority}, which a "
                                  "PartitionSpec cannot express; propagate first")
        if any(a.is_sub_axis for a in dim.axes):
            raise ConversionError(f"{text}: dim {d} uses a sub-axis, which a PartitionSpec "
                                  "cannot express")
        names = tuple(a.name for a in dim.axes)
        if dim.is_open:
            if names:
                raise ConversionError(
                    f"{text}: dim {d} is open with axes ({dim}); a PartitionSpec has no "
                    "'these axes or more': run close-shardings first"
                )
            entries.append(P.UNCONSTRAINED)
        else:
            entries.append(None if not names else names[0] if len(names) == 1 else names)
    if mapping.replicated and not mapping.is_fully_resolved:
        raise ConversionError(f"{text}: replicated axes on a sharding with open dims cannot be "
                              "expressed by a PartitionSpec")
    unreduced = {a.name for a in mapping.unreduced}
    if any(a.is_sub_axis for a in mapping.unreduced):
        raise ConversionError(f"{text}: unreduced sub-axes cannot be expressed")
    spec = P(*entries, unreduced=unreduced) if unreduced else P(*entries)
    if mapping.memory_kind is not None:
        return jax.sharding.NamedSharding(mesh, spec, memory_kind=mapping.memory_kind)
    return jax.sharding.NamedSharding(mesh, spec)


def _check_mesh(ours: DeviceMesh, mesh: Any, where: str) -> None:
    theirs = tuple(zip(mesh.axis_names, mesh.axis_sizes))
    if tuple(ours.axes) != theirs:
        raise ConversionError(
            f"{where} is on mesh @{ours.name} {list(ours.axes)}, but the JAX mesh has axes "
            f"{list(theirs)}; build the mesh with mesh_to_jax(module.meshes[{ours.name!r}])"
        )
    if ours.device_ids is None:
        # NOTE: JAX's text does not record a Mesh's device order (it lives in the compiled
        # program's device assignment), so a module lowered from a permuted Mesh has an iota
        # sdy.mesh. An iota mesh therefore matches a JAX mesh of any device order.
        return
    devices = getattr(mesh, "devices", None)
    if not isinstance(devices, np.ndarray):
        return  # an AbstractMesh: no device order to check
    ids = [d.id for d in devices.flat]
    order = sorted(ids)
    positions = [order.index(i) for i in ids]  # the JAX mesh's device order, as device_ids
    if positions != list(ours.device_ids):
        raise ConversionError(
            f"{where}: mesh @{ours.name} orders its devices {list(ours.device_ids)} but the JAX "
            f"mesh orders them {positions}; build the mesh with "
            f"mesh_to_jax(module.meshes[{ours.name!r}])"
        )
