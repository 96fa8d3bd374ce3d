"""`lift-inlined-meshes` (Shardy's `sdy-lift-inlined-meshes`): what is left of it for shardc is
its last step, giving every `sdy.mesh` without one a `stablehlo.mesh` attribute (its axes, and its
device ids when it has explicit ones), as jaxlib prints it:

    sdy.mesh @mesh = <["a"=2], device_ids=[1, 0]>
 -> sdy.mesh @mesh = <["a"=2], device_ids=[1, 0]> {stablehlo.mesh = {axes = [{name = "a",
        size = 2 : i64}], device_ids = dense<[1, 0]> : tensor<2xi64>}}

Lifting inline meshes into named ones has nothing to do: every mesh shardc imports is named.
The attribute is StableHLO spelling, kept in module attribute `shardc.mesh_attrs.<mesh>` and
printed by the StableHLO exporter only.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import MESH_ATTRS_PREFIX, OpaqueAttr
from shardc.ir.core import Module
from shardc.ir.mesh import DeviceMesh
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def stablehlo_mesh_text(mesh: DeviceMesh) -> str:
    axes = ", ".join(f'{{name = "{a}", size = {n} : i64}}' for a, n in mesh.axes)
    text = f"axes = [{axes}]"
    ids = mesh.device_ids
    if ids is not None:
        values = str(ids[0]) if len(set(ids)) == 1 else f"[{', '.join(map(str, ids))}]"
        text += f", device_ids = dense<{values}> : tensor<{len(ids)}xi64>"
    return f"stablehlo.mesh = {{{text}}}"


def stablehlo_mesh_attrs(module: Module) -> None:
    for mesh in module.meshes.values():
        key = MESH_ATTRS_PREFIX + mesh.name
        old = module.attributes.get(key)
        if old is None:
            module.attributes[key] = OpaqueAttr(f"{{{stablehlo_mesh_text(mesh)}}}")
        elif isinstance(old, OpaqueAttr) and "stablehlo.mesh" not in old.text:
            inner = old.text.strip()[1:-1].strip()
            joined = f"{inner}, {stablehlo_mesh_text(mesh)}" if inner else stablehlo_mesh_text(mesh)
            module.attributes[key] = OpaqueAttr(f"{{{joined}}}")


@register_pass("lift-inlined-meshes")
@dataclass(frozen=True)
class LiftInlinedMeshes(Pass):
    """Give every mesh its `stablehlo.mesh` attribute (meshes are always named in shardc)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        stablehlo_mesh_attrs(module)


register_alias("sdy-lift-inlined-meshes", "lift-inlined-meshes")
