"""`shardc.jit`'s shardings: `in_shardings`/`out_shardings` as PartitionSpecs checked against
the mesh, broadcast over an argument's leaves, and checked against each leaf's shape. Every
message names where the sharding was given (`in_shardings[0]['layers']`) and, for a leaf, its
path and shape (`params['layers'][3]['attn']['bias'] (float32[64])`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.ir.diagnostics import ShardcError
from shardc.jit_paths import prefix_mismatches

__all__ = ["broadcast", "check_spec", "committed_spec", "is_leaf", "is_spec_leaf", "same_mesh",
           "spec_key", "to_specs"]


def is_leaf(jax: Any) -> Callable[[Any], bool]:
    return lambda x: x is None or is_spec_leaf(jax, x)


def is_spec_leaf(jax: Any, x: Any) -> bool:
    return isinstance(x, (jax.sharding.PartitionSpec, jax.sharding.Sharding))


def same_mesh(a: Any, b: Any) -> bool:
    if tuple(a.axis_names) != tuple(b.axis_names) or tuple(a.axis_sizes) != tuple(b.axis_sizes):
        return False
    da, db = getattr(a, "devices", None), getattr(b, "devices", None)
    if isinstance(da, np.ndarray) and isinstance(db, np.ndarray):
        return [d.id for d in da.flat] == [d.id for d in db.flat]
    return True


def to_specs(jax: Any, shardings: Any, mesh: Any, what: str) -> Any:
    """The pytree `shardings` with every NamedSharding replaced by its PartitionSpec (after
    checking it is on `mesh`); `what` (`f: in_shardings`) and the key path name each one."""
    keystr = jax.tree_util.keystr

    def spec(path: Any, leaf: Any) -> Any:
        where = what + keystr(path)
        if leaf is None:
            return leaf
        if isinstance(leaf, jax.sharding.PartitionSpec):
            _check_axes(leaf, mesh, where)
            return leaf
        if isinstance(leaf, jax.sharding.NamedSharding):
            if not same_mesh(leaf.mesh, mesh):
                raise ShardcError(f"{where}: a NamedSharding is on mesh {leaf.mesh}, not on the "
                                  f"mesh given ({mesh})")
            return leaf.spec
        raise ShardcError(f"{where}: {type(leaf).__name__} is not supported; use "
                          "PartitionSpec or NamedSharding")

    return jax.tree_util.tree_map_with_path(spec, shardings, is_leaf=is_leaf(jax))


def broadcast(jax: Any, prefix: Any, tree: Any, prefix_name: str, tree_name: str,
              fname: str) -> list[tuple[Any, str]]:
    """`(spec, where it was given)` for each leaf of `tree`: the leaves of `prefix` (a pytree
    prefix of `tree`, named `prefix_name`) repeated over the leaves below them. A `prefix`
    that is not one is an error (of function `fname`) listing every leaf without an entry and
    every entry without leaves."""
    if prefix is None or is_spec_leaf(jax, prefix):
        return [(prefix, prefix_name)] * len(jax.tree_util.tree_leaves(tree))
    out: list[tuple[Any, str]] = []
    keystr = jax.tree_util.keystr

    def spread(path: Any, p: Any, sub: Any) -> None:
        out.extend([(p, prefix_name + keystr(path))] * len(jax.tree_util.tree_leaves(sub)))

    try:
        jax.tree_util.tree_map_with_path(spread, prefix, tree, is_leaf=is_leaf(jax))
    except ValueError as e:
        found = prefix_mismatches(jax, prefix, tree, is_leaf(jax), prefix_name, tree_name)
        detail = "; ".join(found) if found else str(e)
        raise ShardcError(f"{fname}: {prefix_name} does not match the structure of "
                          f"{tree_name}: {detail}") from None
    return out


def committed_spec(jax: Any, x: Any, mesh: Any, rank: int) -> Any:
    """The PartitionSpec of a committed `jax.Array` (or a `ShapeDtypeStruct` with a
    sharding) of rank `rank` when it is sharded on `mesh`, else None. A typed key's sharding
    may name its key data's trailing (unsharded) dims too: they are dropped."""
    sharding = getattr(x, "sharding", None)
    placed = x.committed if isinstance(x, jax.Array) else isinstance(x, jax.ShapeDtypeStruct)
    if (placed and isinstance(sharding, jax.sharding.NamedSharding)
            and same_mesh(sharding.mesh, mesh)):
        spec = sharding.spec
        if len(spec) > rank and all(e is None for e in list(spec)[rank:]):
            spec = jax.sharding.PartitionSpec(*list(spec)[:rank])
        return spec
    return None


def spec_axes(spec: Any) -> list[tuple[str, ...]]:
    """The axis names of each dim of a PartitionSpec (() for None and P.UNCONSTRAINED)."""
    return [(e,) if isinstance(e, str) else tuple(e) if isinstance(e, (tuple, list)) else ()
            for e in spec]


def spec_key(jax: Any, spec: Any) -> Any:
    """`spec` as a hashable value equal for equal shardings: `P("dp")` and `P("dp", None)`
    alike (PartitionSpec's own == tells them apart), trailing unsharded dims dropped."""
    if spec is None:
        return None
    unconstrained = jax.sharding.PartitionSpec.UNCONSTRAINED
    dims = ["?" if e is unconstrained else axes for e, axes in zip(spec, spec_axes(spec))]
    while dims and dims[-1] == ():
        dims.pop()
    return tuple(dims), tuple(sorted(getattr(spec, "unreduced", ()) or ()))


def _check_axes(spec: Any, mesh: Any, where: str) -> None:
    """Every axis `spec` names is an axis of `mesh`, and none is named twice."""
    names = [n for dim in spec_axes(spec) for n in dim]
    unknown = [n for n in names if n not in mesh.axis_names]
    if unknown:
        raise ShardcError(f"{where}: sharding {spec} names axes {unknown} that the mesh "
                          f"does not have (axes: {list(mesh.axis_names)})")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ShardcError(f"{where}: sharding {spec} names axes {twice} more than once; a "
                          "mesh axis shards at most one dim")


def check_spec(spec: Any, shape: tuple[int, ...], mesh: Any, leaf: str, given: str) -> None:
    """`spec` fits an argument `leaf` (its path and shape) of `shape`: no more dims than it
    has, whole shards per dim (JAX's rule for an argument). `given`: where `spec` came from."""
    if len(spec) > len(shape):
        raise ShardcError(f"{given} is {spec}, which names {len(spec)} dims, but {leaf} has "
                          f"rank {len(shape)}")
    _check_axes(spec, mesh, given)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for d, names in enumerate(spec_axes(spec)):
        if not names:
            continue
        count = int(np.prod([sizes[n] for n in names], dtype=np.int64))
        if shape[d] % count:
            raise ShardcError(f"{given} is {spec}, but dim {d} of {leaf} has size {shape[d]}, "
                              f"which does not split evenly over {names} ({count} devices), as "
                              "JAX requires of an argument")
