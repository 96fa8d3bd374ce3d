"""numpy kernels for every op in the registry, by op family (StableHLO semantics).

    from shardc.executors.kernels.table import KERNELS
    y = KERNELS[op.name](op, *arrays)      # an array, or a tuple for 0 or several results

A kernel is a pure function of the op's attributes, its result types and the operand arrays: it
never writes into an operand and assumes nothing about shapes beyond what the arrays and
`op.results[i].type` say, so the per-device executor reuses these same kernels on local shards.
Results may be read-only views (`broadcast_in_dim`, `iota`, `transpose`, `slice`); callers copy
before writing.

Numerics are chosen to match XLA on CPU where StableHLO leaves a choice; bf16/f16 arithmetic is
computed in float32 and rounded once to the result type. Each family's module says the rest:

- `elementwise.py`: unary and binary arithmetic, compare, select, clamp, convert, shifts;
- `movement.py`: constant, iota, broadcast, reshape, transpose, concatenate, slice, pad, reverse,
  dynamic slices;
- `reductions.py`: dot_general, reduce, top_k; `windows.py`: convolution, reduce_window;
- `indexing.py`: gather, scatter; `custom_calls.py`: the custom_call targets shardc knows;
- `identities.py`: sharding ops, global collectives and barriers (the identity on data);
- `table.py`: `KERNELS`, op name -> kernel, assembled from the families.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.ir.core import Operation
from shardc.ir.types import numpy_dtype

Kernel = Callable[..., Any]


def result_type(op: Operation, i: int = 0) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and numpy dtype of result `i`."""
    t = op.results[i].type
    return t.shape, numpy_dtype(t.dtype)
