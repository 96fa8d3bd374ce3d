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

Plans are memoised on a normalised shape: a dim that every device count of the mesh divides
(a multiple of the mesh's size) is planned as if it were exactly the mesh's size, and the plan's
bytes are scaled back by the whole number of times it is larger. Every local block of such a
dim is unpadded and proportional to its size, so each step's bytes are proportional too and the
planner compares the same candidates in the same order: the costs are the same, exactly (a test
compares both on random shapes). A training step's tensors share few normalised shapes, so the
planner runs for a few thousand distinct reshards rather than one per tensor, and the reshards
from one source share one search (`collectives.fan_out.FanOut`: the planner's plans exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import element_bytes, shard_shape
from shardc.passes.analysis.collectives.fan_out import FanOut
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


def normalised(shape: tuple[int, ...], devices: int) -> tuple[tuple[int, ...], int]:
    """`shape` with every dim that `devices` divides replaced by `devices`, and how many times
    larger the real tensor is (module docstring)."""
    if devices <= 1:
        return shape, 1
    scale = 1
    dims = []
    for n in shape:
        if n > devices and n % devices == 0:
            scale *= n // devices
            dims.append(devices)
        else:
            dims.append(n)
    return tuple(dims), scale


def scaled(r: Reshard, scale: int) -> Reshard:
    if r.comm >= UNPLANNABLE:
        return Reshard(r.comm, r.ring, r.held * scale, r.peak * scale)
    return Reshard(r.comm * scale, r.ring * scale, r.held * scale, r.peak * scale)


class CostModel:
    """Memoised reshard costs and buffer sizes for one objective (`bytes` or `ring`)."""

    def __init__(self, objective: str = "bytes") -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}")
        self.objective = objective
        self._reshards: dict[tuple, Reshard] = {}
        self._normalised: dict[tuple, Reshard] = {}
        self.planned = 0  # distinct reshards the planner was asked for
        # plan_reshard's plans, one search per source layout for all its targets
        self._plans = FanOut()

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
            canonical, scale = normalised(shape, src.mesh.num_devices)
            base_key = (canonical, dtype, src, dst)
            base = self._normalised.get(base_key)
            if base is None:
                base = self._plan(canonical, dtype, src, dst)
                self._normalised[base_key] = base
            found = base if scale == 1 else scaled(base, scale)
            self._reshards[key] = found
        return found

    def _plan(self, shape: tuple[int, ...], dtype: str, src: NamedMapping,
              dst: NamedMapping) -> Reshard:
        self.planned += 1
        held = self.held(shape, dtype, dst)
        try:
            plan = self._plans.summary(shape, dtype, src, dst, cost="ring")
        except ShardcError:
            return Reshard(UNPLANNABLE, UNPLANNABLE, held, held)
        sizes = plan.held
        steps = len(sizes) - 1
        peak = max(((sizes[i] if i else 0) + sizes[i + 1] for i in range(steps)), default=0)
        return Reshard(plan.comm, plan.ring, held if steps else 0, peak)

    def cost(self, r: Reshard) -> int:
        """The objective's figure for one reshard."""
        return r.comm if self.objective == "bytes" else r.ring
