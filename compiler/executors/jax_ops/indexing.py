"""JAX translations of `gather` (start indices clamped so the slice fits: StableHLO's) and
`scatter` (an update window that does not fit is dropped: XLA's), as the numpy kernels do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import scatter_reduction


def _indices_last(indices: Any, index_vector_dim: int) -> tuple[Any, Callable[[int], int]]:
    """Indices with the index vector as the last dim (what `jax.lax` wants), and the map from
    an indices dim (other than the index vector dim) to its new number."""
    rank = indices.ndim
    if index_vector_dim == rank:
        return indices[..., None], lambda d: d
    moved = jax_lax().transpose(
        indices, [d for d in range(rank) if d != index_vector_dim] + [index_vector_dim]
    )
    return moved, lambda d: d if d < index_vector_dim else d - 1


def _gather(op: Operation, operand: Any, indices: Any) -> Any:
    lax = jax_lax()
    indices, renumber = _indices_last(indices, attr(op, "index_vector_dim"))
    dims = lax.GatherDimensionNumbers(
        offset_dims=tuple(attr(op, "offset_dims")),
        collapsed_slice_dims=tuple(attr(op, "collapsed_slice_dims")),
        start_index_map=tuple(attr(op, "start_index_map")),
        operand_batching_dims=tuple(attr(op, "operand_batching_dims")),
        start_indices_batching_dims=tuple(
            renumber(d) for d in attr(op, "start_indices_batching_dims")
        ),
    )
    return lax.gather(
        operand, indices, dims, tuple(attr(op, "slice_sizes")),
        mode=lax.GatherScatterMode.CLIP,
    )


def _scatter(op: Operation, *arrays: Any) -> Any:
    """`lax.scatter_add`, ... for each input with the op's kind or common reduction; a general
    update body has no JAX translation (the numpy executors run it)."""
    lax = jax_lax()
    n = len(op.results)
    inputs, indices, updates = arrays[:n], arrays[n], arrays[n + 1 :]
    indices, renumber = _indices_last(indices, attr(op, "index_vector_dim"))
    dims = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(attr(op, "update_window_dims")),
        inserted_window_dims=tuple(attr(op, "inserted_window_dims")),
        scatter_dims_to_operand_dims=tuple(attr(op, "scatter_dims_to_operand_dims")),
        operand_batching_dims=tuple(attr(op, "input_batching_dims")),
        scatter_indices_batching_dims=tuple(
            renumber(d) for d in attr(op, "scatter_indices_batching_dims")
        ),
    )
    kind = attr(op, "kind").word if "kind" in op.attributes else scatter_reduction(op)
    if kind is None:
        raise ExecutionError(
            f"'scatter' op: its update body @{attr(op, 'body').name} is not one add, multiply, "
            "maximum or minimum per input, which the JAX executor cannot run; use the numpy "
            "executor", op.loc)
    fn = {
        "replace": lax.scatter, "add": lax.scatter_add, "multiply": lax.scatter_mul,
        "maximum": lax.scatter_max, "minimum": lax.scatter_min,
        "and": lax.scatter_min, "or": lax.scatter_max,  # on i1 (the only type they take)
    }[kind]
    outs = tuple(fn(x, indices, u, dims, mode=lax.GatherScatterMode.FILL_OR_DROP)
                 for x, u in zip(inputs, updates))
    return outs if n > 1 else outs[0]


INDEXING_OPS: dict[str, JaxOp] = {
    "gather": _gather,
    "scatter": _scatter,
}
