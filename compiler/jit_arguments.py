"""`shardc.jit`'s argument numbers and names: `static_argnums`/`static_argnames` checked against
`fun`'s signature, and `donate_argnums`/`donate_argnames` resolved as `jax.jit` resolves them
(numbers from names and names from numbers by the signature, neither overlapping a static
argument), then turned into a per-leaf donation mask for one call's pytree; and the leaves
themselves: a Python scalar as the array JAX makes of it, a leaf's part of the call signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.ir.diagnostics import ShardcError

__all__ = ["Donation", "check_argnums", "ints", "leaf_key", "scalar_array", "strs"]


def ints(value: int | Sequence[int]) -> tuple[int, ...]:
    return (value,) if isinstance(value, int) else tuple(value)


def strs(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _parameters(fun: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None  # no signature to check against (a builtin)


def check_argnums(fun: Callable[..., Any], name: str, what: str, argnums: tuple[int, ...],
                  argnames: tuple[str, ...]) -> None:
    """Argument numbers and names (`what`: static or donate) that `fun`'s signature has (as
    `jax.jit` checks)."""
    params = _parameters(fun)
    if params is None:
        return
    kinds = inspect.Parameter
    if any(p.kind is kinds.VAR_KEYWORD for p in params):
        argnames = ()
    positional = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY,
                                                  kinds.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind is kinds.VAR_POSITIONAL for p in params):
        bad = [i for i in argnums if not -len(positional) <= i < len(positional)]
        if bad:
            raise ShardcError(f"{name}: {what}_argnums {bad} out of range: it takes "
                              f"{len(positional)} positional arguments")
    unknown = [n for n in argnames if n not in {p.name for p in params}]
    if unknown:
        raise ShardcError(f"{name}: {what}_argnames {unknown} are not parameters of it")


@dataclass(frozen=True)
class Donation:
    """Which arguments' buffers a call gives up (`jax.jit`'s donation): by call position
    (negative counts from the end) and by keyword."""

    argnums: frozenset[int] = frozenset()
    argnames: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.argnums or self.argnames)

    @classmethod
    def resolve(cls, fun: Callable[..., Any], name: str,
                donate_argnums: int | Sequence[int] | None,
                donate_argnames: str | Sequence[str] | None,
                static_argnums: tuple[int, ...], static_argnames: tuple[str, ...]) -> Donation:
        """As `jax.jit`: when only one of numbers and names is given, the other follows from
        `fun`'s signature (its positional-or-keyword parameters); a donated argument that is
        also static is an error."""
        nums = None if donate_argnums is None else ints(donate_argnums)
        names = None if donate_argnames is None else strs(donate_argnames)
        params = _parameters(fun)
        if params is not None and (nums is None) != (names is None):
            either = inspect.Parameter.POSITIONAL_OR_KEYWORD
            if nums is None:
                nums = tuple(i for i, p in enumerate(params)
                             if p.kind is either and p.name in (names or ()))
            else:
                names = tuple(p.name for i, p in enumerate(params)
                              if p.kind is either and (i in nums or i - len(params) in nums))
        nums, names = nums or (), names or ()
        check_argnums(fun, name, "donate", nums, names)
        both = sorted(set(nums) & set(static_argnums))
        if both:
            raise ShardcError(f"{name}: arguments {both} are in both static_argnums and "
                              "donate_argnums; a static argument is a Python value, not a "
                              "buffer to donate")
        both_names = sorted(set(names) & set(static_argnames))
        if both_names:
            raise ShardcError(f"{name}: arguments {both_names} are in both static_argnames and "
                              "donate_argnames; a static argument is a Python value, not a "
                              "buffer to donate")
        return cls(frozenset(nums), frozenset(names))

    def mask(self, jax: Any, num_args: int, positions: Sequence[int], dyn: Sequence[Any],
             kwargs: dict[str, Any]) -> tuple[bool, ...]:
        """Whether each leaf of `(tuple(dyn), kwargs)` (in `tree_flatten`'s order) is donated;
        `positions[i]` is the call position of `dyn[i]`, `num_args` how many positional
        arguments the call passed."""
        if not self:
            return (False,) * len(jax.tree_util.tree_leaves((tuple(dyn), kwargs)))
        out = []
        for path, _ in jax.tree_util.tree_flatten_with_path((tuple(dyn), kwargs))[0]:
            which, key = path[0], path[1]
            if which.idx == 0:
                at = positions[key.idx]
                out.append(at in self.argnums or at - num_args in self.argnums)
            else:
                out.append(key.key in self.argnames)
        return tuple(out)


# ----- argument leaves --------------------------------------------------------------------------


def scalar_array(jax: Any, x: Any) -> Any:
    """A Python or numpy scalar as a 0-d array of JAX's type for it; None for anything else."""
    if isinstance(x, (bool, int, float, complex, np.generic)):
        value = np.asarray(x)
        return value.astype(jax.dtypes.canonicalize_dtype(value.dtype))
    return None


def leaf_key(jax: Any, x: Any) -> tuple[Any, ...]:
    """A leaf's part of the call signature: shape, dtype and, for a committed array, its
    sharding (an uncommitted one goes wherever the program wants it)."""
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    sharding = getattr(x, "sharding", None)
    if isinstance(x, jax.Array) and not x.committed:
        sharding = None
    return (x.shape, x.dtype, sharding)
