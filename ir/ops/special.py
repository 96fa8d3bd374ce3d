"""Ops JAX emits around ordinary computation: barriers, top_k, composites.

%a, %b = optimization_barrier %x, %y : tensor<16x32xf32>, tensor<16x3xf32>
%v, %i = top_k %x {k = 3} : tensor<16x3xf32>, tensor<16x3xi32>
%d = composite %x {decomposition = @my.double, name = "my.double"} : tensor<16x32xf32>

`optimization_barrier` is the identity on each operand. `top_k` gives the k largest entries of
the last dim, sorted descending (ties: lower index first), and their indices. `composite` means
exactly a call of its `decomposition` function (its `name`, `version` and
`composite_attributes` are carried for export only).
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.func import check_callee_signature
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.types import TensorType


def _infer_barrier(op: Operation) -> list[TensorType]:
    if len(op.results) != op.num_operands:
        raise op_error(op, f"has {op.num_operands} operands but {len(op.results)} results")
    return [TensorType(v.type.shape, v.type.dtype) for v in op.operands]


def _infer_top_k(op: Operation) -> list[TensorType]:
    x = op.operand(0).type
    k = attr(op, "k")
    if x.rank < 1:
        raise op_error(op, "operand must have rank >= 1")
    if not 0 <= k <= x.shape[-1]:
        raise op_error(op, f"k = {k} must be between 0 and the last dim's size ({x.shape[-1]})")
    shape = (*x.shape[:-1], k)
    return [TensorType(shape, x.dtype), TensorType(shape, "i32")]


def _verify_composite(op: Operation) -> None:
    check_callee_signature(op, attr(op, "decomposition").name)


register(OpDef("optimization_barrier", None, None, {}, _infer_barrier))
register(OpDef("top_k", 1, 2, {"k": req("int")}, _infer_top_k))
register(
    OpDef(
        "composite",
        None,
        None,
        {
            "name": req("str"),
            "decomposition": req("symbol"),
            "composite_attributes": opt("any", None),
            "version": opt("any", None),
        },
        None,
        _verify_composite,
    )
)
