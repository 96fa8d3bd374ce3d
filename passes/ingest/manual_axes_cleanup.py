"""`manual-axes-cleanup` (Shardy's `sdy-manual-axes-cleanup`): every manual_computation lists its
manual axes in mesh order, and each in/out sharding replicates the parts of the manual axes it
does not use, so propagation can never add them from outside.

    manual_computation %x {in_shardings = [<@mesh, [{"c", ?}]>],       (mesh <["c", "a", "b"]>)
                           manual_axes = ["a", "c"], ...}
 -> manual_computation %x {in_shardings = [<@mesh, [{"c", ?}], replicated={"a"}>],
                           manual_axes = ["c", "a"], ...}

A sub-axis in use leaves the rest of its axis replicated (`{"y":(2)2}` of `"y"=8` adds
`"y":(1)2, "y":(4)2`); the replicated set keeps Shardy's canonical form. A sharding on the empty
mesh that needs replicated axes moves to the op's mesh. A manual_computation with manual axes,
no in/out shardings and a non-empty body is an error, as in Shardy.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.ir.ops.manual import (
    body_of,
    clean_up_axes,
    fill_values,
    manual_computations,
)
from shardc.ir.ops.registry import attr, op_error
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def cleanup_manual_axes(op: Operation) -> None:
    if not attr(op, "in_shardings") and not attr(op, "out_shardings"):
        body = body_of(op)
        if attr(op, "manual_axes") and body is not None and any(
            o.name != "return" for o in body.body
        ):
            raise op_error(
                op,
                "op has manual_axes when there are no in/out shardings and the body is not "
                "empty. This isn't allowed at this stage, please contact the Shardy team or "
                "file a bug.",
            )
        return
    clean_up_axes(op)
    fill_values(op)


def manual_axes_cleanup(module: Module) -> None:
    for op in list(manual_computations(module)):
        cleanup_manual_axes(op)


@register_pass("manual-axes-cleanup")
@dataclass(frozen=True)
class ManualAxesCleanup(Pass):
    """Sort manual axes in mesh order and replicate the manual axes a sharding does not use."""

    def run(self, module: Module, ctx: PassContext) -> None:
        manual_axes_cleanup(module)


register_alias("sdy-manual-axes-cleanup", "manual-axes-cleanup")
