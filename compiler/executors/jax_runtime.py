"""JAX, an optional dependency of the executors: importing it (or saying how to install it),
`jax.lax` / `jax.numpy` on first use, and `shard_map` across JAX versions.

    jax = import_jax()          # an ExecutionError with the install command without JAX
    jax_lax().add(a, b)         # jax.lax, imported when first called
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.ir.diagnostics import ExecutionError


def import_jax() -> Any:
    """`jax`, or an `ExecutionError` saying how to install it."""
    try:
        import jax  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError:
        raise ExecutionError(
            "the JAX backend needs JAX, which is not installed: pip install 'shardc[jax]'"
        ) from None
    return jax


def shard_map(jax: Any) -> Callable[..., Any]:
    """`shard_map(f, mesh, in_specs, out_specs, axis_names=None)`; `axis_names` (manual axes,
    default all) needs a JAX with `jax.shard_map`."""
    if hasattr(jax, "shard_map"):

        def new(f, mesh, i, o, axis_names=None):
            kw = {} if axis_names is None else {"axis_names": set(axis_names)}
            return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, check_vma=False, **kw)

        return new
    from jax.experimental.shard_map import shard_map  # noqa: PLC0415 - older JAX

    return lambda f, mesh, i, o, axis_names=None: shard_map(
        f, mesh=mesh, in_specs=i, out_specs=o, check_rep=False
    )


def on_mesh(jax: Any, f: Callable[..., Any], mesh: Any) -> Callable[..., Any]:
    """`f` (a `shard_map` over `mesh`) traced with `mesh` as the context mesh, whatever mesh
    the caller set with `jax.set_mesh`: shard_map insists the context mesh be its own."""

    def scoped(*args: Any) -> Any:
        with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
            return f(*args)

    return scoped


def jax_lax() -> Any:
    """`jax.lax` (imported on first use: JAX is optional)."""
    from jax import lax  # noqa: PLC0415 - optional dependency

    return lax


def jax_numpy() -> Any:
    """`jax.numpy` (imported on first use: JAX is optional)."""
    import jax.numpy as jnp  # noqa: PLC0415 - optional dependency

    return jnp


def lax_reducer(kind: str) -> Callable[[Any, Any], Any]:
    """`jax.lax`'s binary op of a reduction kind (add, multiply, maximum, minimum, and, or)."""
    lax = jax_lax()
    return {"add": lax.add, "multiply": lax.mul, "maximum": lax.max, "minimum": lax.min,
            "and": lax.bitwise_and, "or": lax.bitwise_or}[kind]
