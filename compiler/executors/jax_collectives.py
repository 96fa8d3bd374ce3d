"""The `spmd.*` collectives as JAX collectives over named mesh axes, inside `shard_map`
(ir/ops/spmd.py gives the correspondence): `all_gather(tiled=True)`, `all_to_all(tiled=True)`,
`psum`/`pmax`/`pmin`, `psum_scatter(tiled=True)`, `axis_index`. `collective_permute` is the
caller's (`ppermute` needs device positions on its mesh).

    y = named_axes_collective(jax, op, [x], ("dp",))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr


def named_axes_collective(jax: Any, op: Operation, xs: Sequence[Any], axes: tuple) -> Any:
    """An `spmd.*` collective (but collective_permute) as the JAX collective over the named
    mesh axes `axes`, inside `shard_map` (ir/ops/spmd.py gives the correspondence)."""
    lax, jnp = jax.lax, jax.numpy
    name = op.name
    if name == "spmd.axis_index":
        return lax.axis_index(axes).astype(jnp.int32)
    (x,) = xs
    if name == "spmd.all_gather":
        return lax.all_gather(x, axes, axis=attr(op, "dim"), tiled=True)
    if name == "spmd.all_slice":
        d = attr(op, "dim")
        size = op.results[0].type.shape[d]
        return lax.dynamic_slice_in_dim(x, lax.axis_index(axes) * size, size, axis=d)
    if name == "spmd.all_to_all":
        return lax.all_to_all(x, axes, attr(op, "split_dim"), attr(op, "concat_dim"), tiled=True)
    if name == "spmd.reduce_scatter":
        return lax.psum_scatter(x, axes, scatter_dimension=attr(op, "dim"), tiled=True)
    if name == "spmd.all_reduce":
        kind = attr(op, "kind").word
        if kind == "add":
            return lax.psum(x, axes)
        if kind == "maximum":
            return lax.pmax(x, axes)
        if kind == "minimum":
            return lax.pmin(x, axes)
        return jnp.prod(lax.all_gather(x, axes, axis=0), axis=0).astype(x.dtype)
    raise ExecutionError(f"the JAX backend has no translation of '{name}'", op.loc)
