"""`KERNELS`: op name -> numpy kernel, for every op the reference interpreter and the numpy SPMD
executor run (the families' tables, plus `sort` and `reduce`, whose scalar bodies run with this
same table: scalar_bodies.py).

    y = KERNELS[op.name](op, *arrays)

`call`, `composite`, `while`, `case` and `return` are control flow, handled by the
interpreters; `custom_call` runs the kernel of its target (custom_calls.py).
"""

from __future__ import annotations

import numpy as np

from shardc.executors.kernels import Kernel
from shardc.executors.kernels.bits import BITS_KERNELS
from shardc.executors.kernels.elementwise import ELEMENTWISE_KERNELS
from shardc.executors.kernels.identities import IDENTITY_KERNELS
from shardc.executors.kernels.indexing import indexing_kernels
from shardc.executors.kernels.linalg import LINALG_KERNELS
from shardc.executors.kernels.movement import MOVEMENT_KERNELS
from shardc.executors.kernels.reductions import REDUCTION_KERNELS, reduce_kernel
from shardc.executors.kernels.replica_collectives import REPLICA_COLLECTIVE_KERNELS
from shardc.executors.kernels.special import SPECIAL_KERNELS
from shardc.executors.kernels.windows import window_kernels
from shardc.executors.scalar_bodies import body_reduce_kernel, sort_kernel

KERNELS: dict[str, Kernel] = {}
KERNELS.update(
    {
        **ELEMENTWISE_KERNELS,
        **SPECIAL_KERNELS,
        **MOVEMENT_KERNELS,
        **REDUCTION_KERNELS,
        "reduce": reduce_kernel(body_reduce_kernel(KERNELS, np)),
        "sort": sort_kernel(KERNELS, np),
        **window_kernels(KERNELS),
        **indexing_kernels(KERNELS),
        **IDENTITY_KERNELS,
        **LINALG_KERNELS,
        **BITS_KERNELS,
        **REPLICA_COLLECTIVE_KERNELS,
    }
)
