"""numpy kernels of the ops that are the identity on a global program's data: the sharding ops,
the global collectives and the barriers.

`all_reduce` and `reduce_scatter` are the identity here too: a global program's value is the
logical tensor, so reducing an unreduced value's partial sums leaves its logical value as is
(and so do `sharded_to_unreduced` and `replicated_to_unreduced`, which only make it unreduced).
"""

from __future__ import annotations

import numpy as np

from shardc.executors.kernels import Kernel
from shardc.ir.core import Operation


def _identity(op: Operation, x: np.ndarray) -> np.ndarray:
    return x


def _no_result(op: Operation, *xs: np.ndarray) -> tuple[()]:
    return ()


def _optimization_barrier(op: Operation, *xs: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
    return xs[0] if len(xs) == 1 else tuple(xs)  # one result is a value, as every kernel's is


IDENTITY_KERNELS: dict[str, Kernel] = {
    "sharding_constraint": _identity,
    "reshard": _identity,
    "propagation_barrier": _identity,
    "sharding_group": _no_result,
    "all_gather": _identity,
    "all_slice": _identity,
    "all_to_all": _identity,
    "collective_permute": _identity,
    "all_reduce": _identity,
    "reduce_scatter": _identity,
    "sharded_to_unreduced": _identity,
    "replicated_to_unreduced": _identity,
    "optimization_barrier": _optimization_barrier,
}
