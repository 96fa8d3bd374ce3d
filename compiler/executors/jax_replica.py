"""StableHLO's collectives by replica groups (`xla.*`, the collectives a `shard_map` body
issues: `psum_scatter`, `all_gather`, `all_to_all`, `ppermute`, ...) and `partition_id` /
`replica_id` on the JAX executor, inside its `shard_map` over the layout's mesh axes (the numpy
executor's counterpart: replica_groups.py).

    y = replica_collective(executor, op, xs)

A collective's replica groups (device ids) must be those of some of the mesh's axes, in some
order (`device_groups`), members in that order: it is then the named-axes collective over those
axes. `collective_permute`'s pairs are device ids, moved by their mesh positions. Groups no axes
give (a ragged split of the devices) are a located error; the numpy executor runs them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from shardc.executors.jax_collectives import axis_index
from shardc.executors.replica_groups import DEVICE_IDS
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.groups import axes_for_groups


def replica_collective(ex: Any, op: Operation, xs: list[Any]) -> Any:
    """`op` (a `DEVICE_IDS` op or an `xla.*` collective) inside the executor `ex`'s shard_map."""
    lax = ex.jax.lax
    name = op.name
    if name in DEVICE_IDS:  # as the numpy executor: the id of the device at this position
        ids = ex.jax.numpy.asarray(np.array(ex.layout.mesh.all_device_ids(), np.uint32))
        return ids[axis_index(lax, ex.names)]
    (x,) = _one(op, xs)
    if name == "xla.collective_permute":
        pairs = [(ex.position[s], ex.position[t]) for s, t in attr(op, "source_target_pairs")]
        return lax.ppermute(x, ex.names, pairs)
    groups = tuple(tuple(g) for g in attr(op, "replica_groups"))
    atoms = _group_atoms(ex.layout.mesh, tuple(ex.layout.atoms), groups)
    if atoms is None:
        raise ExecutionError(f"'{name}' op: its replica groups are not those of any of the "
                             f"mesh's axes; the JAX backend runs only those (the numpy backend "
                             f"runs any)", op.loc)
    axes = ex.axis_names(atoms)
    if name == "xla.all_gather":
        return lax.all_gather(x, axes, axis=attr(op, "all_gather_dim"), tiled=True)
    if name == "xla.all_to_all":
        return lax.all_to_all(x, axes, attr(op, "split_dimension"), attr(op, "concat_dimension"),
                              tiled=True)
    kind = op.attributes.get("kind")
    if kind is None:
        raise ExecutionError(f"'{name}' op: its reduction body is not one shardc recognises "
                             "(add, max, min, ...)", op.loc)
    if name == "xla.reduce_scatter":
        if kind.word != "add":
            raise ExecutionError(f"'{name}' op: the JAX backend scatters sums only, not "
                                 f"{kind.word}", op.loc)
        return lax.psum_scatter(x, axes, scatter_dimension=attr(op, "scatter_dimension"),
                                tiled=True)
    reduce = {"add": lax.psum, "maximum": lax.pmax, "minimum": lax.pmin}.get(kind.word)
    if reduce is None:
        raise ExecutionError(f"'{name}' op: the JAX backend reduces by add, maximum or minimum, "
                             f"not {kind.word}", op.loc)
    return reduce(x, axes)


def _one(op: Operation, xs: list[Any]) -> list[Any]:
    if len(xs) != 1:
        raise ExecutionError(f"'{op.name}' op with {len(xs)} operands: shardc runs per-device "
                             "collectives of one operand only", op.loc)
    return xs


@cache
def _group_atoms(mesh: DeviceMesh, atoms: tuple[AxisRef, ...],
                 groups: tuple[tuple[int, ...], ...]) -> tuple[AxisRef, ...] | None:
    """The layout atoms whose collective groups are `groups` member for member (asked once
    per op shape: the trace asks at every op)."""
    return axes_for_groups(mesh, atoms, groups, ordered=True)
