"""JAX translations of `gather` (start indices clamped so the slice fits: StableHLO's) and
`scatter` (an update window that does not fit is dropped: XLA's), as the numpy kernels do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


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


def _scatter(op: Operation, operand: Any, indices: Any, updates: Any) -> Any:
    lax = jax_lax()
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
    fn = {
        "replace": lax.scatter, "add": lax.scatter_add, "multiply": lax.scatter_mul,
        "maximum": lax.scatter_max, "minimum": lax.scatter_min,
    }[attr(op, "kind").word]
    return fn(operand, indices, updates, dims, mode=lax.GatherScatterMode.FILL_OR_DROP)


INDEXING_OPS: dict[str, JaxOp] = {
    "gather": _gather,
    "scatter": _scatter,
}
