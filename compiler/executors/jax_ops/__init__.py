"""JAX translations of the ops, by op family: each op as its `jax.lax` / `jax.numpy`
counterpart, with the reference kernels' semantics (kernels/, StableHLO's, which `jax.lax`
follows). The SPMD executor (jax_exec.py) runs them on local blocks, the global-program
translator (jax_global.py) on whole tensors.

    from shardc.executors.jax_ops.table import JAX_OPS
    y = JAX_OPS[op.name](op, *arrays)

- `elementwise.py`: unary and binary arithmetic, compare (TOTALORDER, signedness), convert
  (to i1 is `x != 0`), select, clamp, shifts;
- `movement.py`: constant, iota, broadcast, reshape, transpose, concatenate, slice, pad,
  reverse, dynamic slices (start indices clamped as StableHLO says);
- `reductions.py`: dot_general, reduce (a body traced into `lax.reduce`), top_k;
  `windows.py`: convolution, reduce_window; `indexing.py`: gather (clamped), scatter (windows
  that do not fit dropped); `custom_calls.py`: the known custom_call targets;
- `table.py`: `JAX_OPS`, op name -> translation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.ir.core import Operation
from shardc.ir.types import numpy_dtype

JaxOp = Callable[..., Any]


def result_dtype(op: Operation) -> np.dtype:
    """The numpy dtype of the op's first result."""
    return numpy_dtype(op.results[0].type.dtype)


def result_shape(op: Operation) -> tuple[int, ...]:
    return op.results[0].type.shape
