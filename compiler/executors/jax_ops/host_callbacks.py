"""Python host callbacks (`jax.pure_callback`, `jax.debug.print`, `jax.debug.callback`,
`io_callback`) in the per-device program traced on JAX.

JAX lowers each to a `custom_call @xla_ffi_python_{cpu,gpu}_callback` whose
`mhlo.backend_config = {index = i}` names the i-th of the lowering's host callbacks: Python
functions that exist only in the process that traced the user's function, handed to XLA when
it compiles. Re-issued as the custom call it is, the index would name nothing (XLA then crashes),
so the callback is issued again from its function, which `shardc.jit` keeps from its lowering:

- with a side effect and no results (`jax.debug.print`, `jax.debug.callback`): once, on the
  mesh's first device, as `jax.jit` runs it on its device 0 (shardc computes the operands of an
  op on one device replicated, so that device holds them whole);
- with results: on every device, `jax.pure_callback` (or `io_callback` with a side effect),
  each device calling it on the same replicated operands.

A program imported from text (`shardc run`, `from_jax` then `compile`) has no functions to call:
such a callback is a located error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype

PYTHON_CALLBACK_TARGETS = frozenset({
    "xla_ffi_python_cpu_callback", "xla_ffi_python_gpu_callback",
    "xla_python_cpu_callback", "xla_python_gpu_callback",
})
_INDEX = re.compile(r"index\s*=\s*(\d+)")


def is_host_callback(op: Operation) -> bool:
    """Whether `op` is a custom_call to a Python host callback."""
    return op.name == "custom_call" and attr(op, "call_target_name") in PYTHON_CALLBACK_TARGETS


def host_callback(jax: Any, op: Operation, xs: Sequence[Any],
                  callbacks: Sequence[Callable[..., Any]] | None,
                  first_device: Callable[[], Any]) -> Any:
    """The callback `op` calls, issued in the trace on `xs` (see the module's docstring);
    `first_device()`: whether the tracing device is the mesh's first (a traced bool)."""
    config = getattr(op.attributes.get("mhlo.backend_config"), "text", "") or ""
    found = _INDEX.search(config)
    index = int(found.group(1)) if found else -1
    if callbacks is None or not 0 <= index < len(callbacks):
        raise ExecutionError(
            f"custom_call \"{attr(op, 'call_target_name')}\" is a Python host callback "
            "(jax.pure_callback, jax.debug.print, io_callback): its function lives only in the "
            "process that traced it, so it runs through shardc.jit, not from a module's text",
            op.loc)
    callback = callbacks[index]
    shapes = [jax.ShapeDtypeStruct(r.type.shape, numpy_dtype(r.type.dtype)) for r in op.results]

    def run(*args: Any) -> list[Any]:
        return list(callback(*args))

    side_effect = getattr(op.attributes.get("has_side_effect"), "text", "") == "true"
    if side_effect and not shapes:
        from jax.experimental import io_callback  # noqa: PLC0415 - optional dependency

        jax.lax.cond(first_device(), lambda: io_callback(run, [], *xs, ordered=False),
                     lambda: [])
        return ()
    if side_effect:
        from jax.experimental import io_callback  # noqa: PLC0415 - optional dependency

        out = io_callback(run, shapes, *xs, ordered=False)
    else:
        out = jax.pure_callback(run, shapes, *xs, vmap_method="sequential")
    return out[0] if len(shapes) == 1 else tuple(out)
