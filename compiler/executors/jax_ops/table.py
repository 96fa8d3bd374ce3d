"""`JAX_OPS`: op name -> JAX translation, for every op the JAX executors run on arrays (the
families' tables, plus `sort` and `reduce`, whose scalar bodies are traced with this same
table: scalar_bodies.py).

    y = JAX_OPS[op.name](op, *arrays)

Control flow (`call`, `composite`, `while`, `case`), the `spmd.*` collectives and, in a global
program, the sharding ops are the executors' own (jax_exec.py, jax_global.py).
"""

from __future__ import annotations

from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_ops.bits import BITS_OPS
from shardc.executors.jax_ops.custom_calls import CUSTOM_CALL_OPS
from shardc.executors.jax_ops.elementwise import ELEMENTWISE_OPS
from shardc.executors.jax_ops.indexing import INDEXING_OPS
from shardc.executors.jax_ops.linalg import LINALG_OPS
from shardc.executors.jax_ops.movement import MOVEMENT_OPS
from shardc.executors.jax_ops.reductions import REDUCTION_OPS, reduce_op
from shardc.executors.jax_ops.windows import window_ops
from shardc.executors.jax_runtime import jax_lax, jax_numpy
from shardc.executors.kernels.replica_collectives import REPLICA_COLLECTIVE_KERNELS
from shardc.executors.scalar_bodies import sort_kernel
from shardc.ir.core import Operation


def _optimization_barrier(op: Operation, *xs: Any) -> Any:
    out = jax_lax().optimization_barrier(tuple(xs))
    return out[0] if len(xs) == 1 else tuple(out)  # one result is a value, as every op's is


JAX_OPS: dict[str, JaxOp] = {}
JAX_OPS.update(
    {
        **ELEMENTWISE_OPS,
        **MOVEMENT_OPS,
        **REDUCTION_OPS,
        "reduce": reduce_op(JAX_OPS),
        "sort": lambda op, *xs: sort_kernel(JAX_OPS, jax_numpy())(op, *xs),
        **window_ops(JAX_OPS),
        **INDEXING_OPS,
        **CUSTOM_CALL_OPS,
        **LINALG_OPS,
        **BITS_OPS,
        **REPLICA_COLLECTIVE_KERNELS,  # groups of one only: the identity on any arrays
        "optimization_barrier": _optimization_barrier,
    }
)

