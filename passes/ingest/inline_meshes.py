"""`inline-meshes` (Shardy's `sdy-inline-meshes`): every sharding writes its mesh inline and the
module's `sdy.mesh` declarations go; the inverse of `lift-inlined-meshes`.

    sdy.mesh @mesh = <["x"=2]>
    %0 = ... {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}
 -> %0 = ... {sdy.sharding = #sdy.sharding_per_value<[<mesh<["x"=2]>, [{"x"}, {}]>]>}

Every sharding of the module is rewritten, as Shardy's sharding walk visits them
(`sharding_walk.py`): function arguments and results, op results (reshards, constraints,
explicit edges and collectives included), manual computations' in/out shardings. Device ids and
maximal meshes stay as they are (`mesh<[], device_ids=[3]>`). Meshes nothing refers to go too.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import MESH_ATTRS_PREFIX
from shardc.ir.core import Module
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.passes.ingest.sharding_walk import transform_shardings
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def inline_meshes(module: Module) -> None:
    inlined: dict[tuple, DeviceMesh] = {}

    def inline(m: NamedMapping) -> NamedMapping:
        if m.mesh.inline:
            return m
        key = (m.mesh.axes, m.mesh.device_ids)
        if key not in inlined:
            inlined[key] = DeviceMesh.inline_mesh(m.mesh.axes, m.mesh.device_ids)
        return m.replace(mesh=inlined[key])

    transform_shardings(module, inline)
    for name in list(module.meshes):
        module.attributes.pop(MESH_ATTRS_PREFIX + name, None)
    module.meshes.clear()
    module.mesh_locs.clear()


@register_pass("inline-meshes")
@dataclass(frozen=True)
class InlineMeshes(Pass):
    """Write every sharding's mesh inline and drop the `sdy.mesh` declarations."""

    def run(self, module: Module, ctx: PassContext) -> None:
        inline_meshes(module)


register_alias("sdy-inline-meshes", "inline-meshes")
