"""The small pieces of MLIR syntax every StableHLO printer writes (exporter.py and its helpers)."""

from __future__ import annotations

from typing import Any

from shardc.ir.core import Operation
from shardc.ir.types import TensorType


def tensor_text(t: TensorType) -> str:
    """`tensor<8x16xf32>` (no encoding: shardings are attributes in MLIR)."""
    return "tensor<" + "".join(f"{d}x" for d in t.shape) + t.dtype + ">"


def results_text(op: Operation) -> str:
    """`tensor<..>` for one result, `(tensor<..>, tensor<..>)` for several."""
    outs = [tensor_text(r.type) for r in op.results]
    return outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"


def functional_type(op: Operation) -> str:
    """`(operand types) -> result type(s)`."""
    return f"({', '.join(tensor_text(v.type) for v in op.operands)}) -> {results_text(op)}"


def int_list(values: Any) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"
