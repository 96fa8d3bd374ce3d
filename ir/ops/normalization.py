"""Batch normalisation (StableHLO semantics): inference, training and its gradient.

%y = batch_norm_inference %x, %scale, %offset, %mean, %var {epsilon = 1.0e-03, feature_index = 2}
     : tensor<4x8x16x32xf32>
%y, %mean, %var = batch_norm_training %x, %scale, %offset {epsilon = ..., feature_index = 2}
     : tensor<4x8x16x32xf32>, tensor<16xf32>, tensor<16xf32>
%dx, %dscale, %doffset = batch_norm_grad %x, %scale, %mean, %var, %dy {...}
     : tensor<4x8x16x32xf32>, tensor<16xf32>, tensor<16xf32>

Every vector operand and result has one entry per feature (dim `feature_index` of `x`);
training and the gradient compute the statistics over all the other dims.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, register, req
from shardc.ir.types import TensorType


def _features(op: Operation) -> tuple[TensorType, TensorType]:
    x = op.operand(0).type
    d = attr(op, "feature_index")
    if not 0 <= d < x.rank:
        raise op_error(op, f"feature_index {d} is out of range for rank {x.rank}")
    vector = TensorType((x.shape[d],), x.dtype)
    return x, vector


def _check_vectors(op: Operation, indices: range, vector: TensorType) -> None:
    for i in indices:
        t = op.operand(i).type
        if t.tensor != vector:
            raise op_error(op, f"operand {i} must be {vector} (one entry per feature), got {t}")


def _infer_inference(op: Operation) -> list[TensorType]:
    x, vector = _features(op)
    _check_vectors(op, range(1, 5), vector)
    return [x.tensor]


def _infer_training(op: Operation) -> list[TensorType]:
    x, vector = _features(op)
    _check_vectors(op, range(1, 3), vector)
    return [x.tensor, vector, vector]


def _infer_grad(op: Operation) -> list[TensorType]:
    x, vector = _features(op)
    _check_vectors(op, range(1, 4), vector)
    if op.operand(4).type.tensor != x.tensor:
        raise op_error(op, f"grad_output must be {x.tensor}, got {op.operand(4).type}")
    return [x.tensor, vector, vector]


_ATTRS = {"epsilon": req("float"), "feature_index": req("int")}
register(OpDef("batch_norm_inference", 5, 1, _ATTRS, _infer_inference,
               summary="normalise with given mean and variance"))
register(OpDef("batch_norm_training", 3, 3, _ATTRS, _infer_training,
               summary="normalise with the batch's own mean and variance"))
register(OpDef("batch_norm_grad", 5, 3, _ATTRS, _infer_grad,
               summary="gradients of batch_norm_training"))
