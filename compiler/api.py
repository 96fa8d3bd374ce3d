"""The Python face of the `shardc` commands: `parse`, `opt`, `run` (and `shardc.compile`).

    module = shardc.parse(open("examples/mlp.mlir").read())   # native or StableHLO+sdy text
    shardc.opt(module, "propagation-pipeline,close-shardings") # passes, in place
    result = shardc.compile(module)                            # the default pipeline, a copy
    outputs = shardc.run(result, [x, w1, w2])                  # 8 simulated devices
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shardc import formats
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.passes.manager import PassContext, PassManager, parse_pipeline
from shardc.pipeline import CompileOptions, CompileResult, compile

__all__ = ["opt", "parse", "run"]


def parse(text: str, filename: str = "<input>", *, format: str | None = None) -> Module:  # noqa: A002
    """A module from native shardc text or the StableHLO + sdy text JAX prints (detected from
    the text unless `format` is "native" or "sdy"). Errors: `ParseError` at `filename:line:col`.
    """
    if format not in (None, "native", "sdy"):
        raise ShardcError(f"unknown format '{format}' (expected native or sdy)")
    return formats.parse(text, filename, formats.detect(text, format))


def opt(
    module: Module, pipeline: str, *, strict: bool = False, verify_each: bool = True
) -> PassContext:
    """Run the passes of `pipeline` (`"propagate{strategy=basic},insert-reshards"`, Shardy's
    `sdy-*` names too) on `module` in place, as `shardc opt -p` does; the context holds the
    warnings, timings and what passes recorded (`ctx.data["origins"]`: why each sharding)."""
    ctx = PassContext(strict=strict, verify_each=verify_each)
    PassManager(parse_pipeline(pipeline), verify_each=verify_each).run(module, ctx)
    return ctx


def run(
    program: Module | CompileResult,
    inputs: Sequence[Any] | Mapping[str, Any],
    *,
    backend: str = "numpy",
    options: CompileOptions | None = None,
) -> list[np.ndarray]:
    """Run a program on every device of its mesh; global numpy arrays in (by position or
    argument name) and out. A `Module` is compiled first (`options`); a `CompileResult` runs
    as compiled. `backend`: "numpy" (simulated devices) or "jax" (JAX's devices)."""
    if isinstance(program, Module):
        program = compile(program, options)
    elif options is not None:
        raise ShardcError("options apply when compiling: pass a Module, not a CompileResult")
    if not isinstance(program, CompileResult):
        raise ShardcError(
            f"shardc.run takes a Module or a CompileResult, got {type(program).__name__}"
        )
    return program.run(inputs, backend=backend)
