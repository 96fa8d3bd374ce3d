"""The `spmd.*` collectives as JAX collectives over named mesh axes, inside `shard_map`
(ir/ops/spmd.py gives the correspondence): `all_gather(tiled=True)`, `all_to_all(tiled=True)`,
`psum`/`pmax`/`pmin`, `psum_scatter(tiled=True)`, `axis_index`. `collective_permute` is the
caller's (`ppermute` needs device positions on its mesh).

    y = named_axes_collective(jax, op, [x], ("dp",))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from shardc.executors.jax_runtime import lax_reducer
from shardc.executors.reduce_kinds import identity
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops.registry import attr


def named_axes_collective(jax: Any, op: Operation, xs: Sequence[Any], axes: tuple,
                          starts: dict[tuple[tuple, int], Any] | None = None) -> Any:
    """An `spmd.*` collective (but collective_permute) as the JAX collective over the named
    mesh axes `axes`, inside `shard_map` (ir/ops/spmd.py gives the correspondence). A combined
    collective (several operands) returns a tuple and is one collective in the program JAX
    runs: a tuple all-reduce, or its operands in one buffer (`_packed`). `starts`: where the
    device's block of an `all_slice` starts, by axes and block size, kept for the next ones of
    the same trace (the caller's: a value of one traced function)."""
    lax, jnp = jax.lax, jax.numpy
    name = op.name
    if name == "spmd.axis_index":
        return axis_index(lax, axes).astype(jnp.int32)
    if len(xs) > 1:
        return _combined(jax, op, xs, axes)
    (x,) = xs
    if name == "spmd.all_gather":
        return lax.all_gather(x, axes, axis=attr(op, "dim"), tiled=True)
    if name == "spmd.all_slice":
        d = attr(op, "dim")
        size = op.results[0].type.shape[d]
        start = None if starts is None else starts.get((axes, size))
        if start is None:
            start = axis_index(lax, axes)
            start = lax.mul(start, np.array(size, start.dtype))
            if starts is not None:
                starts[(axes, size)] = start
        # (in range: no wrapping of negative indices)
        return lax.dynamic_slice_in_dim(x, start, size, axis=d, allow_negative_indices=False)
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
        if kind == "multiply":
            return jnp.prod(lax.all_gather(x, axes, axis=0), axis=0).astype(x.dtype)
        if x.dtype == np.bool_:  # logical or/and: one all-reduce, as max/min of 0/1 bytes
            as_bytes = lax.convert_element_type(x, np.uint8)
            folded = lax.pmax(as_bytes, axes) if kind == "or" else lax.pmin(as_bytes, axes)
            return lax.convert_element_type(folded, np.bool_)
        # bitwise and/or of integers (XLA:CPU compiles no all-reduce of them): gathered, folded
        gathered = lax.all_gather(x, axes, axis=0)
        return lax.reduce(gathered, identity(kind, np.dtype(x.dtype)), lax_reducer(kind), (0,))
    raise ExecutionError(f"the JAX backend has no translation of '{name}'", op.loc)


def axis_index(lax: Any, axes: Sequence[str]) -> Any:
    """The device's linear index over the mesh axes `axes` (the first major), as
    `lax.axis_index(axes)`; built from `jax.lax` primitives (one axis: its own index), where
    `lax.axis_index` of a tuple adds a product and a sum per axis through `jax.numpy`'s
    promotion, at ~15x the trace cost."""
    if not axes:
        return lax.axis_index(())
    index = lax.axis_index(axes[0])
    for name in axes[1:]:
        size = np.array(lax.axis_size(name), index.dtype)
        index = lax.add(lax.mul(index, size), lax.axis_index(name))
    return index


def _combined(jax: Any, op: Operation, xs: Sequence[Any], axes: tuple) -> tuple[Any, ...]:
    """A combined collective. All-reduces: `psum` of the tuple, which XLA emits as one tuple
    all-reduce (its all-reduce combiner runs on every backend). All-gathers and reduce-scatters,
    which XLA:CPU does not combine: the operands in one buffer of one row per group member
    (each operand's part of a row is its block along `dim`), one collective, and the buffer
    cut back."""
    lax = jax.lax
    name = op.name
    if name == "spmd.all_reduce":
        if attr(op, "kind").word == "add":
            return tuple(lax.psum(tuple(xs), axes))
        one = [named_axes_collective(jax, op, [x], axes) for x in xs]
        return tuple(one)
    d = attr(op, "dim")
    g = len(attr(op, "groups")[0])
    # (`jax.lax` throughout: the arrays' dtypes agree, and `jax.numpy`'s wrappers would add
    # only their promotion and index handling to the trace.)
    if name == "spmd.all_gather":
        flat = lax.concatenate([lax.reshape(x, (x.size,)) for x in xs], 0)
        rows = lax.all_gather(flat, axes, axis=0, tiled=False)  # [g, total]
        outs, start = [], 0
        for x in xs:
            part = lax.slice_in_dim(rows, start, start + x.size, axis=1)
            part = lax.reshape(part, (g, *x.shape))
            start += x.size
            part = _moveaxis(lax, part, 0, d)  # [.., g, n_d, ..]: member-major along dim d
            shape = list(x.shape)
            shape[d] *= g
            outs.append(lax.reshape(part, tuple(shape)))
        return tuple(outs)
    if name == "spmd.reduce_scatter":
        # The buffer is [g, total / g], member-major, built as its transpose: each operand
        # [total_i / g, g] (its group-member index minor), stacked along dim 0, then one
        # transpose. Stacking the [g, total_i / g] rows along dim 1 instead is a concatenate
        # on the minor dim, which XLA:CPU leaves unfused from 128 elements: a kernel of its
        # own per collective, compiled anew at every layer (32 more kernels to compile for
        # the 32-layer Llama step, none when fused: benchmarks/jit_breakdown.py).
        pieces = []
        for x in xs:
            split = (*x.shape[:d], g, x.shape[d] // g, *x.shape[d + 1:])
            piece = _moveaxis(lax, lax.reshape(x, split), d, x.ndim)
            pieces.append(lax.reshape(piece, (x.size // g, g)))
        rows = lax.transpose(lax.concatenate(pieces, 0), (1, 0))  # [g, total / g]
        summed = lax.psum_scatter(rows, axes, scatter_dimension=0, tiled=False)  # [total / g]
        outs, start = [], 0
        for x in xs:
            shape = list(x.shape)
            shape[d] //= g
            size = x.size // g
            part = lax.slice_in_dim(summed, start, start + size, axis=0)
            outs.append(lax.reshape(part, tuple(shape)))
            start += size
        return tuple(outs)
    raise ExecutionError(f"the JAX backend has no translation of a combined '{name}'", op.loc)


def _moveaxis(lax: Any, x: Any, source: int, dest: int) -> Any:
    """`jnp.moveaxis(x, source, dest)` (one transpose; none when nothing moves)."""
    if source == dest:
        return x
    perm = [i for i in range(x.ndim) if i != source]
    perm.insert(dest, source)
    return lax.transpose(x, tuple(perm))


def manual_permutation(op: Operation, mesh: DeviceMesh, manual: Sequence[str],
                       pairs: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """A collective_permute's `(source, target)` device ids (of `mesh`) as `ppermute`'s pairs
    of indices over the `manual` axes (row-major, in the order given). `ppermute` moves the same
    way in every group of the free axes, so the pairs must too: a pair between devices whose free
    coordinates differ, or groups that move differently, are a located error."""
    position = mesh.positions_by_id()
    free = [a for a in mesh.axis_names if a not in manual and mesh.axis_size(a) > 1]
    by_group: dict[tuple[int, ...], set[tuple[int, int]]] = {}
    for s, t in pairs:
        if s not in position or t not in position:
            raise ExecutionError(f"'{op.name}' op names device {s if s not in position else t}, "
                                 f"which is not a device of mesh @{mesh.name}", op.loc)
        cs, ct = mesh.coords(position[s]), mesh.coords(position[t])
        group = tuple(cs[a] for a in free)
        if group != tuple(ct[a] for a in free):
            raise ExecutionError(
                f"'{op.name}' op sends from device {s} to device {t} along a free axis of its "
                f"manual_computation ({', '.join(free)}); the JAX backend runs a body's "
                "collective_permute over the manual axes only", op.loc)
        by_group.setdefault(group, set()).add((_manual_index(mesh, manual, cs),
                                               _manual_index(mesh, manual, ct)))
    moves = list(by_group.values())
    groups = math.prod(mesh.axis_size(a) for a in free)
    if moves and (len(moves) != groups or any(m != moves[0] for m in moves)):
        raise ExecutionError(
            f"'{op.name}' op moves blocks differently in the groups of the free axes "
            f"({', '.join(free)}) of its manual_computation; the JAX backend's ppermute moves all "
            "groups alike", op.loc)
    return sorted(moves[0]) if moves else []


def _manual_index(mesh: DeviceMesh, manual: Sequence[str], coords: dict[str, int]) -> int:
    i = 0
    for axis in manual:
        i = i * mesh.axis_size(axis) + coords[axis]
    return i
