"""Calls and returns (`custom_call` is in custom_call.py; `named_computation` in data_flow.py).

%0 = call %x, %w {callee = @relu} : tensor<8x16xf32>
return %0
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import TERMINATOR, OpDef, attr, op_error, register, req


def _verify_call(op: Operation) -> None:
    check_callee_signature(op, attr(op, "callee").name)


def check_callee_signature(op: Operation, callee_name: str) -> None:
    """`op` (a call or a composite) passes and returns what `@callee_name` takes and returns."""
    func = op.function
    module = func.module if func is not None else None
    if module is None:
        return
    callee = module.lookup_function(callee_name)
    if callee is None:
        raise op_error(op, f"calls @{callee_name}, which is not defined in this module")
    if len(callee.args) != op.num_operands:
        raise op_error(
            op, f"passes {op.num_operands} operands; @{callee_name} takes {len(callee.args)}"
        )
    for i, (v, a) in enumerate(zip(op.operands, callee.args)):
        if v.type.tensor != a.type.tensor:
            raise op_error(
                op, f"operand {i} has type {v.type.tensor}; @{callee_name} expects {a.type.tensor}"
            )
    if len(op.results) != len(callee.result_types):
        raise op_error(
            op, f"has {len(op.results)} results; @{callee_name} returns {len(callee.result_types)}"
        )
    for i, (r, t) in enumerate(zip(op.results, callee.result_types)):
        if r.type.tensor != t.tensor:
            raise op_error(
                op, f"result {i} has type {r.type.tensor}; @{callee_name} returns {t.tensor}"
            )


# Ops that run another function of the module with their operands: op -> the attribute naming it.
CALLEE_ATTR = {"call": "callee", "composite": "decomposition", "named_computation": "body"}


def called_function(op: Operation) -> str | None:
    """The function a call, composite or named_computation runs (None for other ops)."""
    key = CALLEE_ATTR.get(op.name)
    return None if key is None else attr(op, key).name


def _verify_return(op: Operation) -> None:
    func = op.function
    if func is None:
        return
    if op.next is not None:
        raise op_error(op, "must be the last op of its function")
    if op.num_operands != len(func.result_types):
        raise op_error(
            op, f"returns {op.num_operands} values; @{func.name} declares {len(func.result_types)}"
        )
    for i, (v, t) in enumerate(zip(op.operands, func.result_types)):
        if v.type.tensor != t.tensor:
            raise op_error(
                op, f"operand {i} has type {v.type.tensor}; @{func.name} returns {t.tensor}"
            )


register(OpDef("call", None, None, {"callee": req("symbol")}, None, _verify_call))
register(OpDef("return", None, 0, {}, None, _verify_return, frozenset({TERMINATOR})))
