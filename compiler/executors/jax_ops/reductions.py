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
from shardc.executors.reduce_kinds import identity
from shardc.executors.scalar_bodies import body_of, evaluate_body
from shardc.ir.core import Operation
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr


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
        neutral = np.array(identity(kind, np.dtype(x.dtype)), dtype=x.dtype)
        return fn(lax.reduce(x, neutral, fn, tuple(attr(op, "dimensions"))), init)

    return reduce


def _dot_general(op: Operation, lhs: Any, rhs: Any) -> Any:
    lb, rb, lc, rc = dot_general_dims(op)
    out = jax_lax().dot_general(
        lhs, rhs, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))),
        preferred_element_type=result_dtype(op),
    )
    return out.astype(result_dtype(op))


# `reduce` is not here: it needs the whole table for its body (see `reduce_op`).
REDUCTION_OPS: dict[str, JaxOp] = {
    "dot_general": _dot_general,
    "top_k": lambda op, x: tuple(jax_lax().top_k(x, attr(op, "k"))),
}
