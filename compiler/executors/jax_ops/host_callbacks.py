"""Python host callbacks in the per-device program traced on JAX (executors/host_callbacks.py
says what they are and where their functions come from), each issued again from its function:

- with a side effect and no results (`jax.debug.print`, `jax.debug.callback`): once, on the
  mesh's first device, as `jax.jit` runs it on its device 0 (shardc computes the operands of an
  op on one device replicated, so that device holds them whole);
- with results: on every device, `jax.pure_callback` (or `io_callback` with a side effect),
  each device calling it on the same replicated operands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shardc.executors.host_callbacks import callback_of, has_side_effect
from shardc.ir.core import Operation
from shardc.ir.types import numpy_dtype


def host_callback(jax: Any, op: Operation, xs: Sequence[Any],
                  callbacks: Sequence[Callable[..., Any]] | None,
                  first_device: Callable[[], Any]) -> Any:
    """The callback `op` calls, issued in the trace on `xs`; `first_device()`: whether the
    tracing device is the mesh's first (a traced bool)."""
    run = callback_of(op, callbacks)
    shapes = [jax.ShapeDtypeStruct(r.type.shape, numpy_dtype(r.type.dtype)) for r in op.results]
    if has_side_effect(op):
        from jax.experimental import io_callback  # noqa: PLC0415 - optional dependency

        if not shapes:
            jax.lax.cond(first_device(), lambda: io_callback(run, [], *xs, ordered=False),
                         lambda: [])
            return ()
        out = io_callback(run, shapes, *xs, ordered=False)
    else:
        out = jax.pure_callback(run, shapes, *xs, vmap_method="sequential")
    return out[0] if len(shapes) == 1 else tuple(out)
