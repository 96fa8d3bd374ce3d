"""What a choice costs, in the units of shardc's report (docs/cost.md).

    model = CostModel("bytes")
    model.reshard(shape, dtype, src, dst)   # -> Reshard(comm, ring, held)
    model.held(shape, dtype, layout)        # bytes one device holds for the tensor

A reshard costs what `lower-collectives` will make of it: the planner's cheapest plan under the
ring model (what `lower-collectives` minimises by default), counted as the report counts it:
`comm` is the plan's `bytes_per_device` total (the report's `total_comm_bytes`), `ring` its
ring-model total. `held` is the padded local buffer of the target layout, which stays live
until the consumer has run; `peak` the most the plan's collectives hold beyond the source while
they run (an intermediate layout and the next one). A pair the planner cannot express costs
`UNPLANNABLE`, so the solver avoids it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import element_bytes, shard_shape
from shardc.passes.analysis.collectives.planner import plan_reshard
from shardc.passes.analysis.collectives.steps import same_layout

OBJECTIVES = ("bytes", "ring")
# A reshard the planner cannot lower; large enough that no plan takes it if another exists.
UNPLANNABLE = 10**15


@dataclass(frozen=True, slots=True)
class Reshard:
    comm: int  # bytes_per_device of the planned collectives
    ring: int  # their ring-model bytes
    held: int  # bytes of the target buffer while it waits for its consumer (0: no reshard)
    peak: int  # the most the collectives hold beyond their source while they run

    def __add__(self, other: Reshard) -> Reshard:
        return Reshard(
            self.comm + other.comm,
            self.ring + other.ring,
            self.held + other.held,
            self.peak + other.peak,
        )


NO_RESHARD = Reshard(0, 0, 0, 0)


class CostModel:
    """Memoised reshard costs and buffer sizes for one objective (`bytes` or `ring`)."""

    def __init__(self, objective: str = "bytes") -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}")
        self.objective = objective
        self._reshards: dict[tuple, Reshard] = {}
        self.planned = 0

    def held(self, shape: tuple[int, ...], dtype: str, layout: NamedMapping) -> int:
        return math.prod(shard_shape(shape, layout)) * element_bytes(dtype)

    def reshard(
        self, shape: tuple[int, ...], dtype: str, src: NamedMapping, dst: NamedMapping
    ) -> Reshard:
        if same_layout(src, dst):
            return NO_RESHARD
        key = (shape, dtype, src, dst)
        found = self._reshards.get(key)
        if found is None:
            self.planned += 1
            held = self.held(shape, dtype, dst)
            try:
                plan = plan_reshard(shape, dtype, src, dst, cost="ring")
            except ShardcError:
                found = Reshard(UNPLANNABLE, UNPLANNABLE, held, held)
            else:
                sizes = [self.held(shape, dtype, m) for m in plan.layouts]
                peak = max(
                    ((sizes[i] if i else 0) + sizes[i + 1] for i in range(len(plan.steps))),
                    default=0,
                )
                found = Reshard(plan.comm_bytes, plan.ring_bytes, held if plan.steps else 0, peak)
            self._reshards[key] = found
        return found

    def cost(self, r: Reshard) -> int:
        """The objective's figure for one reshard."""
        return r.comm if self.objective == "bytes" else r.ring
