"""`remove-size-one-axes`: drop mesh axes of size 1 from every sharding (Shardy does the same
before propagating: an axis of size 1 splits nothing, and keeping it would only block the axis
for other dims)."""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.ops.manual import manual_computations
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.axes import merge_refs
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def without_size_one_axes(m: NamedMapping) -> NamedMapping:
    mesh = m.mesh
    if all(size != 1 for _, size in mesh.axes):
        return m

    def keep(refs):
        return tuple(r for r in refs if r.axis_size(mesh) != 1)

    dims = []
    for d in m.dims:
        # dropping "x" from `"y":(1)2, "x", "y":(2)2` leaves two sub-axes to merge
        axes = merge_refs(keep(d.axes), mesh)
        prio = d.priority if (axes or not d.is_closed) else None
        dims.append(DimSharding(axes, d.is_closed, prio))
    return NamedMapping(
        mesh, tuple(dims), keep(m.replicated), keep(m.unreduced), m.unreduced_op, m.memory_kind
    )


def remove_size_one_axes(module: Module) -> None:
    for func in module.functions.values():
        values = list(func.args) + [r for op in func.body for r in op.results]
        for v in values:
            if v.mapping is not None:
                v.set_mapping(without_size_one_axes(v.mapping))
        for i, t in enumerate(func.result_types):
            if isinstance(t, DistributedTensorType) and t.mapping is not None:
                func.result_types[i] = t.with_mapping(without_size_one_axes(t.mapping))
    for op in manual_computations(module):
        for key in ("in_shardings", "out_shardings"):
            op.attributes[key] = tuple(without_size_one_axes(m) for m in op.attributes[key])
        mesh = next((m.mesh for m in op.attributes["in_shardings"]), None)
        if mesh is not None:
            axes = op.attributes["manual_axes"]
            op.attributes["manual_axes"] = tuple(a for a in axes if a.axis_size(mesh) != 1)


@register_pass("remove-size-one-axes")
@dataclass(frozen=True)
class RemoveSizeOneAxes(Pass):
    """Drop size-1 mesh axes from every sharding."""

    def run(self, module: Module, ctx: PassContext) -> None:
        remove_size_one_axes(module)


register_alias("sdy-remove-size-one-axes", "remove-size-one-axes")
