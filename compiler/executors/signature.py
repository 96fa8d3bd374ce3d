"""What a function to run takes: its inputs in argument order (by position, or by argument
name with or without `%`), checked against its types; for a per-device program, the global
shapes and shardings the `spmd` pass recorded on it.

    arrays = check_global_inputs(func, {"x": x, "w": w})       # the reference interpreter
    sig = SpmdSignature.of(spmd_func)                          # in/out global shapes, shardings
    arrays = check_spmd_inputs(spmd_func, sig, [x, w])         # the SPMD executors
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.ir.core import Function
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import numpy_dtype


def order_inputs(func: Function, inputs: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """The inputs in argument order: a sequence as given, or a mapping by argument name (with
    or without `%`). Raises a located `ExecutionError` for a wrong count or name."""
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    if isinstance(inputs, Mapping):
        given = {k.removeprefix("%"): v for k, v in inputs.items()}
        unknown = [k for k in given if k not in names]
        if unknown:
            raise ExecutionError(
                f"@{func.name} has no argument named {', '.join('%' + k for k in unknown)} "
                f"(arguments: {', '.join('%' + n for n in names)})", func.loc
            )
        missing = [n for n in names if n not in given]
        if missing:
            raise ExecutionError(
                f"missing input for argument {', '.join('%' + n for n in missing)} of "
                f"@{func.name}", func.loc
            )
        values = [given[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(func.args):
            raise ExecutionError(
                f"@{func.name} takes {len(func.args)} inputs "
                f"({', '.join('%' + n for n in names)}), got {len(values)}", func.loc
            )
    return values


def check_global_inputs(
    func: Function, inputs: Sequence[Any] | Mapping[str, Any]
) -> list[np.ndarray]:
    """The inputs of a global program's function in argument order, each checked to have its
    argument's exact shape and element type (a located `ExecutionError` says what to change)."""
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    values = order_inputs(func, inputs)
    arrays = []
    for i, (arg, name, value) in enumerate(zip(func.args, names, values)):
        t = arg.type
        try:
            want = numpy_dtype(t.dtype)
        except ImportError:
            raise ExecutionError(
                f"argument %{name} of @{func.name} is {t.dtype}, which needs ml_dtypes: "
                "pip install ml_dtypes", func.loc
            ) from None
        array = np.asarray(value)
        where = f"argument %{name} (#{i}) of @{func.name}"
        if array.shape != tuple(t.shape):
            raise ExecutionError(
                f"{where} expects shape {list(t.shape)} ({t.tensor}), got {list(array.shape)}",
                func.loc,
            )
        if array.dtype != want:
            raise ExecutionError(
                f"{where} expects element type {t.dtype} (numpy {want}), got numpy "
                f"{array.dtype}; convert it with .astype(...)", func.loc
            )
        arrays.append(array)
    return arrays


@dataclass(frozen=True)
class SpmdSignature:
    """What the `spmd` pass records on a function: global shapes and shardings of its
    arguments and results."""

    in_shapes: tuple[tuple[int, ...], ...]
    out_shapes: tuple[tuple[int, ...], ...]
    in_shardings: tuple[NamedMapping, ...] | None
    out_shardings: tuple[NamedMapping, ...] | None

    @classmethod
    def of(cls, func: Function) -> SpmdSignature:
        if "in_shapes" not in func.attributes:
            raise ExecutionError(
                f"@{func.name} is not an SPMD program; run the 'spmd' pass first "
                "(shardc opt -p spmd, or the default pipeline)", func.loc
            )
        a = func.attributes
        return cls(
            tuple(tuple(s) for s in a["in_shapes"]),
            tuple(tuple(s) for s in a.get("out_shapes", ())),
            a.get("in_shardings"),
            a.get("out_shardings"),
        )


def check_spmd_inputs(
    func: Function, sig: SpmdSignature, inputs: Sequence[Any] | Mapping[str, Any]
) -> list[np.ndarray]:
    """Global input arrays in argument order, checked against the recorded global shapes."""
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    values = order_inputs(func, inputs)
    out = []
    for name, arg, shape, value in zip(names, func.args, sig.in_shapes, values):
        array = np.asarray(value)
        want = numpy_dtype(arg.type.dtype)
        if array.shape != shape or array.dtype != want:
            raise ExecutionError(
                f"argument %{name} of @{func.name} expects {list(shape)} {want}, got "
                f"{list(array.shape)} {array.dtype}", func.loc
            )
        out.append(array)
    return out
