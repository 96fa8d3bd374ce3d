"""The axis lists a collective names (`sdy.all_gather [{}, {"x", "y":(1)2}] ...`), checked as
Shardy's verifier checks them: every axis in the mesh, no ref twice, no two consecutive sub-axes
of one axis written apart, and the lists Shardy keeps as sets (`all_reduce`,
`replicated_to_unreduced`) in mesh order.

    sdy.all_reduce {"y", "x"} ...           # error: reduction axes are not ordered w.r.t. mesh
    sdy.all_slice [{"x":(1)2, "x":(2)2}] ...  # error: two consecutive sub-axes can be merged
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.registry import op_error


def mesh_order(mesh: DeviceMesh, ref: AxisRef) -> tuple[int, int, int]:
    """Sort key of Shardy's mesh comparator: mesh axis order, then major to minor."""
    return (mesh.axis_index(ref.name), ref.pre, ref.axis_size(mesh))


def check_axis_list(op: Operation, refs: Sequence[AxisRef], mesh: DeviceMesh,
                    ordered: str | None = None) -> None:
    """Raise a located error for the first fault of `refs`; `ordered` names a list that must be
    in mesh order (`reduction`, `r2u`)."""
    seen: set[AxisRef] = set()
    for i, ref in enumerate(refs):
        if not mesh.has_axis(ref.name):
            raise op_error(op, f'unknown axis name: "{ref.name}"')
        try:
            ref.validate(mesh)
        except ShardcError as e:
            raise op_error(op, e.message) from None
        if ref in seen:
            raise op_error(op, f"duplicate axis ref: {ref}")
        seen.add(ref)
        if i > 0 and refs[i - 1].can_merge(ref):
            raise op_error(op, f"two consecutive sub-axes can be merged: {refs[i - 1]}, {ref}")
    if ordered is not None:
        keys = [mesh_order(mesh, r) for r in refs]
        if keys != sorted(keys):
            raise op_error(op, f"{ordered} axes are not ordered w.r.t. mesh")


def check_axis_lists(op: Operation, lists: Sequence[Sequence[AxisRef]], mesh: DeviceMesh) -> None:
    """`check_axis_list` on each list of a per-dim attribute."""
    for refs in lists:
        check_axis_list(op, refs, mesh)
