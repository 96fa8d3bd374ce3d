"""Pytree paths of `shardc.jit`'s arguments, so a message names a leaf as JAX does:

    params['layers'][3]['attn']['kernel'] (float32[32,64])   # an argument leaf, its shape
    in_shardings[0]['layers']                                # where its sharding was given

The parameter name comes from `fun`'s signature (`args[2]` past it, the `*args` name for the
extras), the rest is `jax.tree_util.keystr` of the leaf's key path. Paths are computed only on
a cache miss or an error: a call that hits the cache flattens without them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ArgumentNames", "array_text", "leaf_paths", "prefix_mismatches", "shape_text"]

# How many leaves a structure mismatch lists before "and N more".
_LISTED = 6


@dataclass(frozen=True)
class ArgumentNames:
    """The names of a function's positional parameters, for naming its arguments."""

    params: tuple[str, ...]  # positional parameters, in order
    varargs: str | None  # the name of `*args`, if any

    @classmethod
    def of(cls, fun: Callable[..., Any]) -> ArgumentNames:
        try:
            parameters = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            return cls((), None)  # a builtin: positions only
        kinds = inspect.Parameter
        positional = tuple(p.name for p in parameters
                           if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD))
        varargs = next((p.name for p in parameters if p.kind is kinds.VAR_POSITIONAL), None)
        return cls(positional, varargs)

    def positional(self, index: int) -> str:
        """The name of the argument at `index` of the call (statics counted)."""
        if index < len(self.params):
            return self.params[index]
        if self.varargs is not None:
            return f"{self.varargs}[{index - len(self.params)}]"
        return f"args[{index}]"


def array_text(shape: Sequence[int], dtype: Any) -> str:
    """`float32[32,64]` (JAX's spelling), `key<fry>[16]`."""
    name = dtype.name if isinstance(dtype, np.dtype) else str(dtype)
    return f"{name}[{','.join(str(n) for n in shape)}]"


def shape_text(x: Any) -> str:
    """`array_text` of an array, or the type of anything else."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "shape"):
        return type(x).__name__
    return array_text(x.shape, dtype)


def leaf_paths(jax: Any, names: ArgumentNames, positions: Sequence[int], dyn: Sequence[Any],
               kwargs: dict[str, Any]) -> list[str]:
    """The path of every leaf of `(tuple(dyn), kwargs)`, in `tree_flatten`'s order;
    `positions[i]` is the call position of `dyn[i]`."""
    flat, _ = jax.tree_util.tree_flatten_with_path((tuple(dyn), kwargs))
    keystr = jax.tree_util.keystr
    out = []
    for path, _ in flat:
        which, key, *rest = path
        head = names.positional(positions[key.idx]) if which.idx == 0 else str(key.key)
        out.append(head + keystr(tuple(rest)))
    return out


def prefix_mismatches(jax: Any, prefix: Any, tree: Any, is_leaf: Callable[[Any], bool],
                      prefix_name: str, tree_name: str) -> list[str]:
    """Where the pytree `prefix` (leaves by `is_leaf`) fails to be a prefix of `tree`: each
    leaf of `tree` no entry of `prefix` covers, each entry that names nothing in `tree`
    (by key path; [] when only node types differ)."""
    keystr = jax.tree_util.keystr
    entries = [(keystr(p), leaf) for p, leaf in
               jax.tree_util.tree_flatten_with_path(prefix, is_leaf=is_leaf)[0]]
    leaves = [(keystr(p), leaf) for p, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]]
    # keystr paths are prefixes of each other exactly when the key paths are ("[1]" of
    # "[10]" aside: compare up to a key boundary)
    def covers(entry: str, leaf: str) -> bool:
        return leaf == entry or (leaf.startswith(entry) and leaf[len(entry)] in "[.")

    out = [f"{prefix_name}{e} ({spec}) names nothing in {tree_name}"
           for e, spec in entries
           if spec is not None and not any(covers(e, path) for path, _ in leaves)]
    out += [f"{tree_name}{path} ({shape_text(leaf)}) has no entry in {prefix_name}"
            for path, leaf in leaves if not any(covers(e, path) for e, _ in entries)]
    if len(out) > _LISTED:
        out = out[:_LISTED] + [f"and {len(out) - _LISTED} more"]
    return out
