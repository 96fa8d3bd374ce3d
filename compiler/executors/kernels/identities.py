"""numpy kernels of the ops that are the identity on a global program's data: the sharding ops,
the global collectives and the barriers.

`all_reduce` and `reduce_scatter` are the identity here too: a global program's value is the
logical tensor, so reducing an unreduced value's partial sums leaves its logical value as is.
"""

from __future__ import annotations

import numpy as np

from shardc.executors.kernels import Kernel
from shardc.ir.core import Operation


def _identity(op: Operation, x: np.ndarray) -> np.ndarray:
    return x


def _no_result(op: Operation, *xs: np.ndarray) -> tuple[()]:
    return ()


def _optimization_barrier(op: Operation, *xs: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(xs)


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
    "optimization_barrier": _optimization_barrier,
}
