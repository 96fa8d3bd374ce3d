"""Tokens: `after_all` joins tokens into one (StableHLO semantics).

%t = after_all %t0, %t1 : tensor<token>

A token (`!stablehlo.token`) is a value of element type `token` and rank 0 that carries no data;
it only orders side effects. shardc keeps tokens as they are: they have no sharding rule and
the executors pass them through as empty values.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, op_error, register
from shardc.ir.types import TensorType

TOKEN = TensorType((), "token")


def _infer_after_all(op: Operation) -> list[TensorType]:
    for i, v in enumerate(op.operands):
        if v.type.dtype != "token":
            raise op_error(op, f"operand {i} must be a token, got {v.type.tensor}")
    return [TOKEN]


register(OpDef("after_all", None, 1, {}, _infer_after_all, summary="join tokens into one"))
