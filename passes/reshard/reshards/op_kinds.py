"""How insert-reshards (and its invariant) treats an op besides its factor rule: data movement
and annotations, global collectives, sources that make any sharding locally, and custom calls
that read whole operands."""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops import COLLECTIVE, get_op_def
from shardc.ir.ops.custom_call import custom_call_target

# Ops that only move or annotate data; they are not checked against a factor rule.
DATA_MOVEMENT = ("reshard",)
ANNOTATIONS = ("sharding_constraint", "sharding_group", "propagation_barrier")
# Ops without operands that compute any (reduced) sharding of their result locally.
LOCALLY_SHARDABLE_SOURCES = ("constant", "iota")


def is_global_collective(name: str) -> bool:
    """A global collective (the per-device `spmd.*` ops of a manual body have factor rules)."""
    op_def = get_op_def(name)
    return op_def is not None and op_def.has(COLLECTIVE) and not name.startswith("spmd.")


def needs_whole_operands(op: Operation) -> bool:
    """A custom_call shardc runs (e.g. a Cholesky factorisation) reads whole matrices, whatever
    factors its JAX-given rule names: its operands and results are replicated."""
    target = custom_call_target(op)
    return target is not None and target.whole_operands
