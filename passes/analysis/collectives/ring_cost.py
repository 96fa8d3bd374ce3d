"""The cost of one collective, per device, in bytes, on padded local buffers (shards.py):

- `buffer_cost` (`bytes_per_device`): the larger of the local input and output buffer (CLI.md);
  0 for all_slice, which communicates nothing. An all_gather or reduce_scatter over several dims
  runs as one collective per dim, in dim order (op_steps.issued_steps, the `spmd` lowering), so
  it costs the sum of those collectives' larger buffers.
- `ring_cost`: SEMANTICS.md §5's ring model with B the padded larger buffer and n the group size:
  all_gather and reduce_scatter B·(n-1)/n (= (n-1) padded shards), all_to_all B·(n-1)/n (= (n-1)
  pieces of the input block cut along the target dim), all_reduce 2·(n-1)·ceil(B/n),
  collective_permute B, all_slice 0. Every cost is an exact integer.

Both take shard counts, not shardings, so the planner's fast path can cost an edge without
building the layout it leads to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.passes.analysis.collectives.shards import Shape, chunk, local_elements


def ring_cost(
    kind: str,
    shape: Shape,
    elem_bytes: int,
    counts_in: Sequence[int],
    counts_out: Sequence[int],
    group: int,
    tgt_dim: int = -1,
) -> int:
    """Ring-model bytes per device of one collective (see the module docstring)."""
    if kind == "collective_permute":
        return local_elements(shape, counts_in) * elem_bytes
    if kind == "all_slice" or group <= 1:
        return 0
    if kind == "all_gather":
        return (group - 1) * local_elements(shape, counts_in) * elem_bytes
    if kind == "reduce_scatter":
        return (group - 1) * local_elements(shape, counts_out) * elem_bytes
    if kind == "all_to_all":
        piece = math.prod(
            chunk(n, ko if d == tgt_dim else ki)
            for d, (n, ki, ko) in enumerate(zip(shape, counts_in, counts_out))
        )
        return (group - 1) * piece * elem_bytes
    if kind == "all_reduce":
        return 2 * (group - 1) * chunk(local_elements(shape, counts_in), group) * elem_bytes
    raise AssertionError(f"unknown collective kind {kind}")


def buffer_cost(kind: str, shape: Shape, elem_bytes: int, counts_in, counts_out) -> int:
    """CLI.md's `bytes_per_device`: the larger local buffer (0 for all_slice), summed over the
    per-dim collectives an all_gather or reduce_scatter over several dims runs as."""
    if kind == "all_slice":
        return 0
    if kind in ("all_gather", "reduce_scatter"):
        total, counts = 0, list(counts_in)
        for d, k in enumerate(counts_out):
            if k != counts[d]:
                before = local_elements(shape, counts)
                counts[d] = k
                total += max(before, local_elements(shape, counts))
        if total:
            return total * elem_bytes
    return max(local_elements(shape, counts_in), local_elements(shape, counts_out)) * elem_bytes
