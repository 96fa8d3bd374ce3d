"""JAX translations of the `custom_call` targets shardc knows (the numpy kernels'
semantics: kernels/custom_calls.py); another target is a located error."""

from __future__ import annotations

from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.custom_call import CUSTOM_CALL_TARGETS
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def _cholesky(op: Operation, a: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp  # noqa: PLC0415 - optional dependency

    text = getattr(op.attributes.get("mhlo.backend_config"), "text", "") or ""
    factor = jnp.linalg.cholesky(a)
    if "uplo = 85" in text:
        factor = jnp.swapaxes(factor, -1, -2)
    info_t = op.results[1].type
    info = jnp.where(jnp.all(jnp.isfinite(factor)), 0, 1).astype(numpy_dtype(info_t.dtype))
    return factor, jnp.broadcast_to(info, info_t.shape)


# The translation of each target the IR knows (`CUSTOM_CALL_TARGETS`), by what it computes.
_CUSTOM_CALLS: dict[str, JaxOp] = {
    name: {"cholesky": _cholesky}[target.computes] for name, target in CUSTOM_CALL_TARGETS.items()
}


def _custom_call(op: Operation, *xs: Any) -> Any:
    target = attr(op, "call_target_name")
    fn = _CUSTOM_CALLS.get(target)
    if fn is None:
        raise ExecutionError(
            f"cannot run custom_call \"{target}\" on JAX: known targets are "
            f"{', '.join(sorted(_CUSTOM_CALLS))}", op.loc
        )
    return fn(op, *xs)


CUSTOM_CALL_OPS: dict[str, JaxOp] = {"custom_call": _custom_call}
