"""Python host callbacks (`jax.pure_callback`, `jax.debug.print`, `jax.debug.callback`,
`io_callback`) in a per-device program: which ops are, the function each calls, and their
run on the numpy backend (jax_ops/host_callbacks.py issues them on JAX).

JAX lowers each to a `custom_call @xla_ffi_python_{cpu,gpu}_callback` whose
`mhlo.backend_config = {index = i}` names the i-th of the lowering's host callbacks: Python
functions that exist only in the process that traced the user's function, handed to XLA when
it compiles. `shardc.jit` keeps them from its lowering (`Lowered.host_callbacks`). A program
imported from text (`shardc run`, `from_jax` then `compile`) has none: such a callback is a
located error.

shardc computes the operands of such an op (which JAX places on one device) replicated, so
every device holds them whole. The numpy backend calls the function once, with device 0's
operands, as `jax.jit` does, and gives every device its results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.executors.device_layout import DeviceLayout
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


def has_side_effect(op: Operation) -> bool:
    return getattr(op.attributes.get("has_side_effect"), "text", "") == "true"


def callback_of(op: Operation,
                callbacks: Sequence[Callable[..., Any]] | None) -> Callable[..., list[Any]]:
    """The Python function the host callback `op` calls (its results as a list); a located
    error when the program came without them."""
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
    return lambda *args: list(callback(*args))


def numpy_runner(op: Operation, callbacks: Sequence[Callable[..., Any]] | None,
                 layout: DeviceLayout) -> Callable[..., Any]:
    """The host callback `op` on batched values: called once, on the first device's operands
    (replicated: every device's are the same), its results every device's."""
    run = callback_of(op, callbacks)
    r = layout.rank
    types = [res.type for res in op.results]

    def call(*xs: np.ndarray) -> Any:
        outs = run(*[layout.positions(x)[0] for x in xs])
        if len(outs) != len(types):
            raise ExecutionError(f"the host callback returned {len(outs)} values, its op has "
                                 f"{len(types)} results", op.loc)
        outs = [np.asarray(o, dtype=numpy_dtype(t.dtype)).reshape((1,) * r + t.shape)
                for o, t in zip(outs, types)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    return call
