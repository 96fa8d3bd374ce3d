"""Rules for gather and scatter (Shardy's `addGatherScatterFactors`, same factor order).

    gather 64x32, 8x16x1 {offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0],
                          index_vector_dim=2, slice_sizes=[1, 32]}
        ([l, k], [i, j, m])->([i, j, k]) {i=8, j=16, k=32, l=64, m=1}
            reduction={l} need_replication={m}

Factors, in order: one per slices dim (the gather result / the scatter updates) — a batch dim
shared with the indices (and with the input for explicit batching dims), or an offset dim shared
with its input dim when unsliced; then the collapsed (inserted) input dims; then the index
vector dim of the indices.
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery, Shape
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

# add(input_dim, indices_dim, slices_dim, size, kind, blocked)
AddFn = Callable[[int, int, int, int, FactorKind, bool], None]


def _gather_scatter_factors(
    is_scatter: bool,
    input_shape: Shape,
    slices_shape: Shape,
    indices_shape: Shape,
    index_vector_dim: int,
    offset_dims: tuple[int, ...],
    collapsed_dims: tuple[int, ...],
    input_batching_dims: tuple[int, ...],
    indices_batching_dims: tuple[int, ...],
    add: AddFn,
    reducible: bool = False,
) -> None:
    input_dim = 0
    batch_pos = 0
    for slices_dim, slices_size in enumerate(slices_shape):
        if slices_dim in offset_dims:
            while input_dim in collapsed_dims or input_dim in input_batching_dims:
                input_dim += 1
            input_size = input_shape[input_dim]
            if input_size == slices_size:
                add(input_dim, NULL, slices_dim, input_size, FactorKind.PASS_THROUGH, False)
            elif is_scatter:
                add(input_dim, NULL, NULL, input_size, FactorKind.NEED_REPLICATION, False)
                add(NULL, NULL, slices_dim, slices_size, FactorKind.NEED_REPLICATION, False)
            elif slices_size == 1:
                # Keeping the operand dim sharded needs an all-reduce of the result.
                add(input_dim, NULL, NULL, input_size, FactorKind.REDUCTION, False)
                add(NULL, NULL, slices_dim, slices_size, FactorKind.NEED_REPLICATION, False)
            else:
                # NOTE: sized like the input dim, as Shardy does (the slices dim is smaller).
                add(input_dim, NULL, slices_dim, input_size, FactorKind.NEED_REPLICATION, True)
            input_dim += 1
        else:
            indices_dim = batch_pos if batch_pos < index_vector_dim else batch_pos + 1
            explicit = indices_dim in indices_batching_dims
            input_batch_dim = (
                input_batching_dims[indices_batching_dims.index(indices_dim)] if explicit else NULL
            )
            # A batch dim only in indices and updates makes scatter results partial: reduced
            # when the update region is one reduction Shardy knows, else replicated.
            kind = FactorKind.PASS_THROUGH
            if is_scatter and not explicit:
                kind = FactorKind.REDUCTION if reducible else FactorKind.NEED_REPLICATION
            add(input_batch_dim, indices_dim, slices_dim, slices_size, kind, False)
            batch_pos += 1
    for d in collapsed_dims:
        # A gather's collapsed dim of size 1 is pointless to shard: replicated.
        kind = FactorKind.PASS_THROUGH if is_scatter else (
            FactorKind.NEED_REPLICATION if input_shape[d] == 1 else FactorKind.REDUCTION)
        add(d, NULL, NULL, input_shape[d], kind, False)
    if index_vector_dim < len(indices_shape):
        add(
            NULL,
            index_vector_dim,
            NULL,
            indices_shape[index_vector_dim],
            FactorKind.NEED_REPLICATION,
            False,
        )


def gather(q: RuleQuery) -> OpShardingRule:
    """Operands (input, start_indices), result slices."""
    (input_shape, indices_shape), (slices_shape,) = q.operands, q.results
    b = RuleBuilder(q.operands, q.results)

    def add(i: int, x: int, s: int, size: int, kind: FactorKind, blocked: bool) -> None:
        b.add_factor((i, x), (s,), size, kind, blocked)

    _gather_scatter_factors(
        False,
        input_shape,
        slices_shape,
        indices_shape,
        q.attr("index_vector_dim"),
        q.attr("offset_dims"),
        q.attr("collapsed_slice_dims"),
        q.attr("operand_batching_dims"),
        q.attr("start_indices_batching_dims"),
        add,
    )
    return b.build()


def scatter(q: RuleQuery) -> OpShardingRule:
    """Operands (N inputs, scatter_indices, N updates), N results shaped like the inputs; every
    factor maps the same dim of all inputs (and of all updates)."""
    n = len(q.results)
    input_shape, indices_shape, updates_shape = q.operands[0], q.operands[n], q.operands[n + 1]
    b = RuleBuilder(q.operands, q.results)

    def add(i: int, x: int, s: int, size: int, kind: FactorKind, blocked: bool) -> None:
        b.add_factor((i,) * n + (x,) + (s,) * n, (i,) * n, size, kind, blocked)

    _gather_scatter_factors(
        True,
        input_shape,
        updates_shape,
        indices_shape,
        q.attr("index_vector_dim"),
        q.attr("update_window_dims"),
        q.attr("inserted_window_dims"),
        q.attr("input_batching_dims"),
        q.attr("scatter_indices_batching_dims"),
        add,
        q.attr("reducible"),
    )
    return b.build()
