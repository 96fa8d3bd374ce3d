"""Linear algebra: dot, cholesky, triangular_solve (StableHLO semantics).

%0 = dot %v, %m : tensor<16xf32>                        # vector 32 . matrix 32x16
%1 = cholesky %a {lower = true} : tensor<2x8x8xf32>
%2 = triangular_solve %a, %b {left_side = true, lower = true, transpose_a = NO_TRANSPOSE,
                              unit_diagonal = false} : tensor<2x8x4xf32>

`dot` is StableHLO's older dot of vectors and matrices (rank 1 or 2): it contracts the last dim
of the left operand with the first of the right. `cholesky` factors each trailing matrix `a` of
a batch into `l @ l^T` (`lower`) or `u^T @ u`; only that triangle of the result is defined.
`triangular_solve` solves `op(a) @ x = b` (`left_side`) or `x @ op(a) = b` for `x`, with `a`
lower or upper triangular and `op` the identity, transpose or adjoint.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.types import TensorType

TRANSPOSE_KINDS = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


def dot_dims(op: Operation) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                     tuple[int, ...]]:
    """A `dot` as dot_general dimension numbers: (lhs batching, rhs batching, lhs contracting,
    rhs contracting) -- no batch dims, the lhs's last dim against the rhs's first."""
    lhs = op.operand(0).type
    return (), (), (lhs.rank - 1,), (0,)


def _infer_dot(op: Operation) -> list[TensorType]:
    lhs, rhs = op.operand(0).type, op.operand(1).type
    if lhs.rank not in (1, 2) or rhs.rank not in (1, 2):
        raise op_error(op, f"takes vectors and matrices, got ranks {lhs.rank} and {rhs.rank}")
    if lhs.shape[-1] != rhs.shape[0]:
        raise op_error(
            op, f"contracts lhs dim {lhs.rank - 1} (size {lhs.shape[-1]}) with rhs dim 0 "
            f"(size {rhs.shape[0]}): they differ"
        )
    shape = lhs.shape[:-1] + rhs.shape[1:]
    dtype = op.results[0].type.dtype if op.results else lhs.dtype
    return [TensorType(shape, dtype)]


def _square_batch(op: Operation, t: TensorType, what: str) -> None:
    if t.rank < 2 or t.shape[-1] != t.shape[-2]:
        raise op_error(op, f"{what} must be a batch of square matrices, got {t.tensor}")


def _infer_cholesky(op: Operation) -> list[TensorType]:
    a = op.operand(0).type
    _square_batch(op, a, "operand")
    return [TensorType(a.shape, a.dtype)]


def _infer_triangular_solve(op: Operation) -> list[TensorType]:
    a, b = op.operand(0).type, op.operand(1).type
    _square_batch(op, a, "a")
    if b.rank != a.rank or b.shape[:-2] != a.shape[:-2]:
        raise op_error(op, f"b {b.tensor} must have a's rank and batch dims ({a.tensor})")
    n = a.shape[-1]
    solved = b.shape[-2] if attr(op, "left_side") else b.shape[-1]
    if solved != n:
        side = "rows" if attr(op, "left_side") else "columns"
        raise op_error(op, f"b has {solved} {side}, a is {n}x{n}")
    if a.dtype != b.dtype:
        raise op_error(op, f"a and b have element types {a.dtype} and {b.dtype}")
    return [TensorType(b.shape, b.dtype)]


register(OpDef("dot", 2, 1, {"precision": opt("any", None)}, _infer_dot,
               summary="dot of vectors and matrices (StableHLO's dot)"))
register(OpDef("cholesky", 1, 1, {"lower": opt("bool", False)}, _infer_cholesky,
               summary="Cholesky factorisation of each trailing matrix"))
register(
    OpDef(
        "triangular_solve",
        2,
        1,
        {
            "left_side": req("bool"),
            "lower": req("bool"),
            "unit_diagonal": req("bool"),
            "transpose_a": req("keyword", *TRANSPOSE_KINDS),
        },
        _infer_triangular_solve,
        summary="solve a triangular system for each batch",
    )
)
