"""The mesh a `shardc.jit` runs on: the one given (`mesh=`, or the mesh of the `NamedSharding`s
given as `in_shardings`/`out_shardings`), else the call's, as `jax.jit` finds it: the mesh of
`jax.set_mesh(mesh)` around the call, else the mesh of the arguments' `NamedSharding`s (arrays
a user placed with `jax.device_put`). The first call's mesh binds the function; a later call
under another `jax.set_mesh` is an error (one `shardc.jit` per mesh), not a silent recompile for
the first mesh.

    mesh = given_mesh(jax, mesh, in_shardings, out_shardings, backend)   # None: from the call
    mesh = call_mesh(jax, name, bound, leaves)                           # at each call
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.ir.diagnostics import ShardcError
from shardc.jit_specs import is_leaf, same_mesh


def given_mesh(jax: Any, mesh: Any, ins: Any, outs: Any, backend: str) -> Any:
    """The mesh given, or the one every NamedSharding in `ins`/`outs` is on; None for neither
    (the call's mesh then)."""
    Mesh, AbstractMesh = jax.sharding.Mesh, jax.sharding.AbstractMesh  # noqa: N806
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise ShardcError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")
    if mesh is None:
        named = [s for s in jax.tree_util.tree_leaves((ins, outs), is_leaf=is_leaf(jax))
                 if isinstance(s, jax.sharding.NamedSharding)]
        if not named:
            return None
        mesh = named[0].mesh
    if isinstance(mesh, AbstractMesh) and backend == "jax":
        raise ShardcError("an AbstractMesh has no devices to run on: pass a jax.sharding.Mesh, "
                          "or backend='numpy' to run on simulated devices")
    return mesh


def call_mesh(jax: Any, name: str, bound: Any, leaves: list[Any]) -> Any:
    """The mesh of a call of a `shardc.jit` given none: `jax.set_mesh`'s, else the first
    argument's `NamedSharding`'s, else the one an earlier call bound (`bound`)."""
    context = jax.sharding.get_mesh()
    if not context.empty:
        if bound is not None and not same_mesh(context, bound):
            raise ShardcError(
                f"shardc.jit({name}) was first called on the mesh {dict(bound.shape)}, this call "
                f"under jax.set_mesh of {dict(context.shape)}: make one shardc.jit per mesh, "
                "or pass mesh=")
        return bound if bound is not None else context
    if bound is not None:
        return bound
    for x in leaves:
        sharding = getattr(x, "sharding", None)
        if isinstance(sharding, jax.sharding.NamedSharding) and not sharding.mesh.empty:
            return sharding.mesh
    raise ShardcError(
        f"shardc.jit({name}) needs a mesh: pass mesh=jax.sharding.Mesh(...) or NamedShardings "
        "as in_shardings/out_shardings, call it under jax.set_mesh(mesh), or with arguments "
        "placed on a mesh (jax.device_put(x, NamedSharding(mesh, spec)))")


def mesh_context(jax: Any, mesh: Any) -> Any:
    if isinstance(mesh, jax.sharding.AbstractMesh):
        return jax.sharding.use_abstract_mesh(mesh)
    return jax.set_mesh(mesh)


def auto_mesh(jax: Any, mesh: Any) -> Any:
    """`mesh` with every axis `Auto`: shardc's propagation decides what JAX leaves open."""
    auto = (jax.sharding.AxisType.Auto,) * len(mesh.axis_names)
    if isinstance(mesh, jax.sharding.AbstractMesh):
        return jax.sharding.AbstractMesh(mesh.axis_sizes, mesh.axis_names, axis_types=auto)
    return jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=auto)


def lower_on(jax: Any, mesh: Any, trace_mesh: Any, lower: Callable[[Any], str]) -> str:
    """`lower(trace_mesh)`: the function traced on `mesh`'s axes made Auto, so that what JAX
    leaves open is shardc's to decide. A function written for explicit sharding
    (`out_sharding=`, `jax.sharding.reshard`, a sharding read off `jax.typeof`) traces only on
    the mesh's own Explicit axes: failing on Auto ones, it is lowered on `mesh` as given, as
    `jax.jit` would, and JAX's shardings reach propagation as constraints. Failing there too,
    the error raised is the first trace's."""
    try:
        return lower(trace_mesh)
    except ShardcError:
        raise
    except Exception as first:
        if jax.sharding.AxisType.Explicit not in getattr(mesh, "axis_types", ()):
            raise
        try:
            return lower(mesh)
        except Exception:
            raise first from None
