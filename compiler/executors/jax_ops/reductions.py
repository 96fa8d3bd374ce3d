"""JAX translations of the ops that reduce dims: dot_general, reduce and top_k.

`reduce` with a `body` function is XLA's own reduce, its region traced from the body function
with the whole translation table (`reduce_op(table)`; table.py wires it); without one it
reduces from the kind's neutral element and combines `init` once, as the reference kernel does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from shardc.executors.jax_ops import JaxOp, result_dtype
from shardc.executors.jax_runtime import jax_lax, lax_reducer
from shardc.executors.kernels.table import KERNELS
from shardc.executors.reduce_kinds import identity
from shardc.executors.scalar_bodies import body_of, evaluate_body
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.compute import dot_algorithm, dot_general_dims
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def reduce_op(table: Mapping[str, JaxOp]) -> JaxOp:
    """The `reduce` translation; a body function is traced with the ops of `table`."""

    def reduce(op: Operation, *xs: Any) -> Any:
        lax = jax_lax()
        if "body" in op.attributes:  # XLA's own reduce, its region traced from the body function
            body = evaluate_body(body_of(op, "body"), table)
            n = len(xs) // 2
            out = lax.reduce(
                tuple(xs[:n]), tuple(xs[n:]), lambda a, b: body(*a, *b),
                tuple(attr(op, "dimensions")),
            )
            return out[0] if n == 1 else tuple(out)
        x, init = xs
        kind = attr(op, "kind").word
        fn = lax_reducer(kind)
        dims = tuple(attr(op, "dimensions"))
        direct = _MONOID_REDUCERS.get(kind)
        dtype = np.dtype(x.dtype)
        if direct is not None and (kind not in ("and", "or") or dtype.kind in "biu"):
            # What `lax.reduce` from the kind's identity resolves to (its monoid reducer),
            # called directly: `lax.reduce` would trace `fn` to find it out, every time.
            reduced = getattr(lax, direct)(x, dims)
            if _is_identity(op.operand(1), kind, dtype):
                return reduced  # (the reducer started from this very value: nothing to add)
            return fn(reduced, init)
        neutral = np.array(identity(kind, dtype), dtype=x.dtype)
        return fn(lax.reduce(x, neutral, fn, dims), init)

    return reduce


def _is_identity(init: Value, kind: str, dtype: np.dtype) -> bool:
    """Whether `init` is a constant holding, bit for bit, the identity `lax.reduce`'s monoid
    reducers start from (0.0, not -0.0, for a sum): combining it again changes nothing. (A
    model's sums and maxima start from such a constant: ~490 of the 32-layer Llama step's
    per-device reduces, each an `add` fewer for JAX to trace and XLA to compile.)"""
    const = init.defining_op
    if const is None or const.name != "constant":
        return False
    value = KERNELS["constant"](const)
    want = np.array(identity(kind, dtype), dtype=dtype)
    return value.dtype == dtype and value.shape == () and value.tobytes() == want.tobytes()


# The `jax.lax` reducer `lax.reduce` picks for each kind when its init value is the kind's
# identity (jax/_src/lax/lax.py, `_get_monoid_reducer`; and/or only on booleans and integers).
_MONOID_REDUCERS = {"add": "reduce_sum", "multiply": "reduce_prod", "maximum": "reduce_max",
                    "minimum": "reduce_min", "and": "reduce_and", "or": "reduce_or"}


def _algorithm(op: Operation) -> Any:
    """The op's `algorithm` as JAX takes it: the `lax.DotAlgorithmPreset` that lowers to it (what
    `jax.jit` had, and all the CPU backend accepts), else a `lax.DotAlgorithm`; None without one."""
    fields = dot_algorithm(op)
    if fields is None:
        return None
    lax = jax_lax()
    counts = [int(fields.get(k, 1)) for k in ("lhs_component_count", "rhs_component_count",
                                               "num_primitive_operations")]
    imprecise = fields.get("allow_imprecise_accumulation") == "true"
    try:
        types = [fields[k] for k in ("lhs_precision_type", "rhs_precision_type",
                                     "accumulation_type")]
        if counts[:2] == [1, 1] and not imprecise:
            name = "_".join(t.upper() for t in types) + (f"_X{counts[2]}" if counts[2] > 1 else "")
            preset = getattr(lax.DotAlgorithmPreset, name, None)
            if preset is not None:
                return preset
        return lax.DotAlgorithm(*(numpy_dtype(t) for t in types), *counts, imprecise)
    except (KeyError, ValueError) as e:
        raise ExecutionError(f"'dot_general' op: cannot run its algorithm "
                             f"{op.attributes['algorithm']}: {e}", op.loc) from None


def dot_general(op: Operation, lhs: Any, rhs: Any) -> Any:
    lb, rb, lc, rc = dot_general_dims(op)
    dtype = result_dtype(op)
    out = jax_lax().dot_general(
        lhs, rhs, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))),
        precision=_algorithm(op), preferred_element_type=dtype,
    )
    return out if out.dtype == dtype else out.astype(dtype)


# `reduce` is not here: it needs the whole table for its body (see `reduce_op`).
REDUCTION_OPS: dict[str, JaxOp] = {
    "dot_general": dot_general,
    "top_k": lambda op, x: tuple(jax_lax().top_k(x, attr(op, "k"))),
}
