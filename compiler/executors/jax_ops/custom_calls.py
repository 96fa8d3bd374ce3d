"""JAX translations of the `custom_call` targets shardc knows (the numpy kernels'
semantics: kernels/custom_calls.py), and of any typed-FFI call (a target whose
`mhlo.backend_config` is a dictionary, as JAX lowers `jnp.linalg`'s LAPACK calls, `lapack_*_ffi`)
re-issued as it was written with `jax.ffi.ffi_call`: the same target, attributes, layouts and
aliases, on the per-device operands (a sharding rule marked `custom` keeps the dims such a call
reads whole). Another target is a located error."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from shardc.executors.jax_ops import JaxOp
from shardc.ir.attributes import unescape
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


_ENTRY = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,:]+?)\s*(?::\s*(\w+))?\s*(?:,|$)')
_DENSE = re.compile(r"dense<\[?([^\]>]*)\]?>")
_ALIAS = re.compile(r"output_tuple_indices = \[(\d*)\], operand_index = (\d+)")


def _ffi_attributes(text: str) -> dict[str, Any] | None:
    """`{mode = 86 : ui8, eps = 1.0e-05 : f32, flag = true, name = "x"}` as ffi_call's keyword
    arguments (numpy scalars of the written types); None when it is not a dictionary."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    out: dict[str, Any] = {}
    for key, value, dtype in _ENTRY.findall(text[1:-1]):
        value = value.strip()
        if value in ("true", "false"):
            out[key] = np.bool_(value == "true")
        elif value.startswith('"'):
            out[key] = unescape(value)
        else:
            number = float(value) if dtype.startswith(("f", "bf")) else int(value)
            out[key] = np.asarray(number, numpy_dtype(dtype or "i64"))[()]
    return out


def _layouts(op: Operation, key: str) -> list[tuple[int, ...]] | None:
    """MLIR's minor-to-major layouts as `ffi_call` takes them (major to minor)."""
    value = op.attributes.get(key)
    if value is None:
        return None
    return [tuple(reversed([int(d) for d in m.split(",") if d.strip()]))
            for m in _DENSE.findall(getattr(value, "text", str(value)))]


def _typed_ffi(op: Operation, *xs: Any) -> Any | None:
    config = op.attributes.get("mhlo.backend_config")
    if config is None or "called_computations" in op.attributes:  # XLA's own (ApproxTopK)
        return None
    attributes = _ffi_attributes(getattr(config, "text", ""))
    if attributes is None:
        return None
    import jax  # noqa: PLC0415 - optional dependency
    from jax._src.lib import lapack  # noqa: F401, PLC0415 - loads the LAPACK kernels the targets call

    aliases = op.attributes.get("output_operand_aliases")
    alias_text = "" if aliases is None else getattr(aliases, "text", str(aliases))
    results = [jax.ShapeDtypeStruct(r.type.shape, numpy_dtype(r.type.dtype)) for r in op.results]
    one = len(results) == 1
    outputs = _layouts(op, "result_layouts")
    call = jax.ffi.ffi_call(
        attr(op, "call_target_name"), results[0] if one else results,
        has_side_effect=bool(op.attributes.get("has_side_effect", False)),
        input_layouts=_layouts(op, "operand_layouts"),
        output_layouts=outputs[0] if one and outputs else outputs,
        input_output_aliases={int(i): int(o or 0) for o, i in _ALIAS.findall(alias_text)},
    )
    out = call(*xs, **attributes)
    return out if one else tuple(out)


def _custom_call(op: Operation, *xs: Any) -> Any:
    target = attr(op, "call_target_name")
    fn = _CUSTOM_CALLS.get(target)
    if fn is None:
        out = _typed_ffi(op, *xs)
        if out is not None:
            return out
        raise ExecutionError(
            f"cannot run custom_call \"{target}\" on JAX: known targets are "
            f"{', '.join(sorted(_CUSTOM_CALLS))} and typed-FFI calls (an "
            "mhlo.backend_config dictionary)", op.loc
        )
    return fn(op, *xs)


CUSTOM_CALL_OPS: dict[str, JaxOp] = {"custom_call": _custom_call}
