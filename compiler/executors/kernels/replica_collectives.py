"""numpy kernels of StableHLO's collectives in a global program (`xla.*`): shardc runs one copy
of the program, so they run when every replica group has one member (each is then the
identity, as the ops mean for a group of one); larger groups are a located error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shardc.executors.kernels import Kernel
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.replica_collectives import REPLICA_COLLECTIVES, group_size


def _single_member(op: Operation, *xs: np.ndarray) -> Any:
    if op.name == "xla.collective_permute":
        pairs = attr(op, "source_target_pairs")
        trivial = all(a == b for a, b in pairs) and pairs
    else:
        trivial = group_size(op) == 1
    if not trivial:
        raise ExecutionError(
            f"'{op.name}' op communicates between the replicas of its groups; shardc runs one "
            "copy of the program, so it runs these collectives only for groups of one (use a "
            "manual_computation for per-device code)", op.loc)
    return xs[0] if len(xs) == 1 else tuple(xs)


REPLICA_COLLECTIVE_KERNELS: dict[str, Kernel] = dict.fromkeys(REPLICA_COLLECTIVES, _single_member)
