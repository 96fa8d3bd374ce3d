"""Collectives: the six `sdy` collectives as layout transitions, the reshard planner, and a
numpy simulation of them on per-device blocks."""

from shardc.passes.analysis.collectives.groups import device_groups, permute_sources
from shardc.passes.analysis.collectives.planner import Plan, greedy_plan, plan_reshard
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
)

__all__ = [
    "AllGather",
    "AllReduce",
    "AllSlice",
    "AllToAll",
    "CollectivePermute",
    "Plan",
    "ReduceScatter",
    "Step",
    "device_groups",
    "greedy_plan",
    "permute_sources",
    "plan_reshard",
]
