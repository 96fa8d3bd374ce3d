"""numpy kernels of the `custom_call` targets shardc knows, keyed by `call_target_name` (the
IR's table of targets, `shardc.ir.ops.custom_call`, says what each computes).

- `lapack_spotrf_ffi` / `lapack_dpotrf_ffi` (Cholesky, as JAX's `jnp.linalg.cholesky` lowers on
  CPU): the factor and an i32 `info` (0 on success; a matrix that is not positive definite gives
  NaNs and info 1).

    kernel = known_custom_call(op)        # a located ExecutionError for an unknown target
"""

from __future__ import annotations

import re

import numpy as np

from shardc.executors.kernels import Kernel
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.custom_call import CUSTOM_CALL_TARGETS
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def _cholesky(op: Operation, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    config = op.attributes.get("mhlo.backend_config")
    text = getattr(config, "text", "") or ""
    m = re.search(r"uplo\s*=\s*(\d+)", text)
    upper = m is not None and int(m.group(1)) == ord("U")
    work = a.astype(np.float64)
    try:
        factor = np.linalg.cholesky(work)
        info = 0
    except np.linalg.LinAlgError:
        factor = np.full_like(work, np.nan)
        info = 1
    if upper:
        factor = np.swapaxes(factor, -1, -2)
    info_t = op.results[1].type
    return factor.astype(a.dtype), np.full(info_t.shape, info, dtype=numpy_dtype(info_t.dtype))


# The kernel of each target the IR knows (`CUSTOM_CALL_TARGETS`), by what the target computes.
CUSTOM_CALLS: dict[str, Kernel] = {
    name: {"cholesky": _cholesky}[target.computes] for name, target in CUSTOM_CALL_TARGETS.items()
}


def custom_call_kernel(op: Operation) -> Kernel | None:
    """The kernel of the op's call target, or None when shardc does not know the target."""
    return CUSTOM_CALLS.get(attr(op, "call_target_name"))


def known_custom_call(op: Operation) -> Kernel:
    """The kernel of a custom_call's target; an error located at the op for other targets."""
    kernel = custom_call_kernel(op)
    if kernel is None:
        target = attr(op, "call_target_name")
        known = ", ".join(sorted(CUSTOM_CALLS))
        raise ExecutionError(
            f"cannot run custom_call \"{target}\": it has no numpy kernel (known targets: "
            f"{known}); replace it with ops shardc knows before running",
            op.loc,
        )
    return kernel
