"""Typed PRNG keys (`jax.random.key`, an `nnx.Rngs` in a model's state) across `shardc.jit`'s
boundary. A key array has an extended dtype (`key<fry>`), which StableHLO has no type for: JAX
itself passes its key data (`jax.random.key_data`, uint32 with the implementation's trailing
dims, `[..., 2]` for threefry). shardc does the same: a key leaf goes in as its key data and is
rewrapped (`jax.random.wrap_key_data` with the key's dtype) inside the traced function; a key
result comes out as key data and is rewrapped after the call. A sharding given for a key leaf
is over the key's own dims; the trailing key-data dims stay whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.ir.diagnostics import ShardcError

__all__ = ["is_key", "key_data", "key_data_struct", "rewrap", "unwrap_results"]


def is_key(jax: Any, x: Any) -> bool:
    """Whether `x` (an array or ShapeDtypeStruct) is a typed PRNG key array."""
    dtype = getattr(x, "dtype", None)
    # np.dtype first: the common case costs one isinstance
    return (dtype is not None and not isinstance(dtype, np.dtype)
            and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key))


def key_data(jax: Any, x: Any, where: Callable[[], str]) -> Any:
    """The key data of a typed key leaf (a ShapeDtypeStruct for a struct); `where()` names the
    leaf when its extended dtype is not a PRNG key's."""
    if not is_key(jax, x):
        raise ShardcError(f"{where()} has dtype {x.dtype}, an extended dtype shardc cannot "
                          "pass (typed PRNG keys it can)")
    if isinstance(x, jax.ShapeDtypeStruct):
        return key_data_struct(jax, x)
    return jax.random.key_data(x)


def key_data_struct(jax: Any, x: Any) -> Any:
    """The ShapeDtypeStruct of a key struct's data (its sharding, if any, kept)."""
    data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(x.shape, x.dtype))
    sharding = getattr(x, "sharding", None)
    if sharding is None:
        return data
    return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=sharding)


def rewrap(jax: Any, leaves: list[Any], keys: Sequence[tuple[int, Any]]) -> list[Any]:
    """`leaves` with the key data at each `(index, key dtype)` of `keys` wrapped as keys."""
    if not keys:
        return leaves
    leaves = list(leaves)
    for i, dtype in keys:
        leaves[i] = jax.random.wrap_key_data(leaves[i], dtype=dtype)
    return leaves


def unwrap_results(jax: Any, leaves: list[Any]) -> tuple[list[Any], tuple[tuple[int, Any], ...]]:
    """A traced function's result leaves with every key as its key data, and `(index, key
    dtype)` of each (to rewrap after the call)."""
    keys = tuple((i, x.dtype) for i, x in enumerate(leaves) if is_key(jax, x))
    if not keys:
        return leaves, ()
    out = list(leaves)
    for i, _ in keys:
        out[i] = jax.random.key_data(out[i])
    return out, keys


def key_rank(jax: Any, dtype: Any) -> int:
    """How many trailing dims the key data of a key dtype adds (1 for threefry's 2 words)."""
    probe = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct((), dtype))
    return len(probe.shape)
