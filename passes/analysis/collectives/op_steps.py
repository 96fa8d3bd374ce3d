"""An IR collective as planner steps and back: `step_op` spells a planned step as the op that
performs it, `op_steps` reads the steps an op performs (the cost report counts them, the
lowering passes emit them), and `issued_steps` is what a backend issues for a step: an
all_gather, all_slice or reduce_scatter over several dims is one collective per dim, in dim
order (`per_dim`; the `spmd` lowering emits them so)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardc.ir.attributes import AllToAllParam
from shardc.ir.core import Operation
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.sharding import all_to_all_params, explicit_reduction_axes, reduced_axes
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
)


def step_op(step: Step) -> tuple[str, dict[str, Any]]:
    """The IR op name and attributes of one planned collective."""
    if isinstance(step, AllGather):
        return "all_gather", {"gathering_axes": step.gathering_axes}
    if isinstance(step, AllSlice):
        return "all_slice", {"slicing_axes": step.slicing_axes}
    if isinstance(step, AllToAll):
        return "all_to_all", {"params": (AllToAllParam(step.axes, step.src_dim, step.tgt_dim),)}
    if isinstance(step, CollectivePermute):
        return "collective_permute", {}
    if isinstance(step, AllReduce):
        return "all_reduce", {"reduction_axes": step.reduction_axes}
    if isinstance(step, ReduceScatter):
        return "reduce_scatter", {"scatter_axes": step.reduce_scatter_axes}
    raise AssertionError(f"unknown step {step!r}")


def op_steps(op: Operation) -> tuple[Step, ...]:
    """The planner steps an IR collective performs, in order (inverse of `step_op`): one, or
    one per parameter of an all_to_all, or none for the local sharded/replicated_to_unreduced."""
    name = op.name
    if name == "all_gather":
        return (AllGather(op.attr("gathering_axes")),)
    if name == "all_slice":
        return (AllSlice(op.attr("slicing_axes")),)
    if name == "all_to_all":
        return tuple(AllToAll(axes, s, t) for axes, s, t in all_to_all_params(op))
    if name == "collective_permute":
        return (CollectivePermute(op.result.mapping),)
    if name in ("all_reduce", "reduce_scatter"):
        explicit = explicit_reduction_axes(op, steps_input(op))
        if name == "all_reduce":
            return (AllReduce(explicit),) if explicit else ()
        per_dim = op.attr("scatter_axes")
        if len(explicit) == len(reduced_axes(op)):
            return (ReduceScatter(per_dim),)
        # Some axes are only implicitly partial: reduce the others, then keep the own part.
        return ((AllReduce(explicit),) if explicit else ()) + (AllSlice(per_dim),)
    if name in ("sharded_to_unreduced", "replicated_to_unreduced"):
        return ()
    raise AssertionError(f"'{name}' is not a collective")


def steps_input(op: Operation) -> NamedMapping:
    """The sharding `op_steps(op)` start from: the operand's (fully replicated when it has
    none)."""
    source = op.operand(0).mapping
    if source is None:
        target = op.result.mapping
        assert target is not None, "collectives verify that their result has a sharding"
        source = NamedMapping.fully_replicated(target.mesh, target.rank)
    return source


def per_dim(axes: Sequence[Sequence[AxisRef]]) -> list[tuple[int, tuple[tuple[AxisRef, ...], ...]]]:
    """`(d, axes on dim d only)` for every dim with axes, in dim order: how a collective over
    several dims is issued, one dim at a time."""
    rank = len(axes)
    return [(d, tuple(tuple(a) if i == d else () for i in range(rank)))
            for d, a in enumerate(axes) if a]


def issued_steps(step: Step) -> tuple[Step, ...]:
    """The collectives a backend issues for `step`, in order (see the module docstring)."""
    if isinstance(step, AllGather):
        return tuple(AllGather(one) for _, one in per_dim(step.gathering_axes))
    if isinstance(step, AllSlice):
        return tuple(AllSlice(one) for _, one in per_dim(step.slicing_axes))
    if isinstance(step, ReduceScatter):
        return tuple(ReduceScatter(one) for _, one in per_dim(step.reduce_scatter_axes))
    return (step,)
