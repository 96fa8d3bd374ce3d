"""`lift-inlined-meshes` (Shardy's `sdy-lift-inlined-meshes`): every mesh written inside a
sharding becomes a named mesh, and named meshes that are the same mesh become one.

    sdy.mesh @mesh = <["x"=2, "y"=4]>
    sdy.mesh @copy = <["x"=2, "y"=4]>
    %0 = ... <mesh<["x"=2, "y"=2]>, [{"x"}, {}]> ... <@copy, [{}, {"y"}]>
 -> sdy.mesh @mesh = <["x"=2, "y"=4]>
    sdy.mesh @mesh_0 = <["x"=2, "y"=2]>
    %0 = ... <@mesh_0, [{"x"}, {}]> ... <@mesh, [{}, {"y"}]>

A later named mesh equal to an earlier one (same axes and device ids) is dropped and its
shardings name the earlier one. An inline mesh takes the first named mesh equal to it, or a new
one after the named meshes, in the order the shardings are met (Shardy's sharding walk): `@mesh`,
`@empty_mesh` for `<[]>`, `@maximal_mesh_<id>` for `<[], device_ids=[id]>`, made unique with
`_0`, `_1`, ... Then every mesh gets a `stablehlo.mesh` attribute (its axes, and its device ids
when it has explicit ones), as jaxlib prints it:

    sdy.mesh @mesh = <["a"=2], device_ids=[1, 0]>
 -> sdy.mesh @mesh = <["a"=2], device_ids=[1, 0]> {stablehlo.mesh = {axes = [{name = "a",
        size = 2 : i64}], device_ids = dense<[1, 0]> : tensor<2xi64>}}

The attribute is StableHLO spelling, kept in module attribute `shardc.mesh_attrs.<mesh>` and
printed by the StableHLO exporter only.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import MESH_ATTRS_PREFIX, OpaqueAttr
from shardc.ir.core import Module
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.passes.ingest.sharding_walk import transform_shardings
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


def _key(mesh: DeviceMesh) -> tuple:
    return (mesh.axes, mesh.device_ids)


def _new_name(mesh: DeviceMesh) -> str:
    if mesh.is_maximal:
        return f"maximal_mesh_{mesh.device_ids[0]}"  # type: ignore[index]
    return "empty_mesh" if not mesh.axes else "mesh"


def lift_inlined_meshes(module: Module) -> None:
    by_key: dict[tuple, DeviceMesh] = {}
    replaced: dict[str, DeviceMesh] = {}  # a dropped duplicate's name -> the mesh kept
    for name, mesh in list(module.meshes.items()):
        kept = by_key.setdefault(_key(mesh), mesh)
        if kept is not mesh:
            replaced[name] = kept
            del module.meshes[name]
            module.mesh_locs.pop(name, None)
            module.attributes.pop(MESH_ATTRS_PREFIX + name, None)

    def lift(m: NamedMapping) -> NamedMapping:
        mesh = m.mesh
        if mesh.inline:
            target = by_key.get(_key(mesh))
            if target is None:
                base = name = _new_name(mesh)
                i = 0
                while name in module.meshes:
                    name, i = f"{base}_{i}", i + 1
                target = DeviceMesh(name, mesh.axes, mesh.device_ids)
                module.add_mesh(target)
                by_key[_key(mesh)] = target
            return m.replace(mesh=target)
        kept = replaced.get(mesh.name)
        return m if kept is None else m.replace(mesh=kept)

    if replaced or any(_has_inline(module)):
        transform_shardings(module, lift)


def _has_inline(module: Module):
    for func in module.functions.values():
        for a in func.args:
            yield a.mapping is not None and a.mapping.mesh.inline
        for op in func.body:
            for r in op.results:
                yield r.mapping is not None and r.mapping.mesh.inline
            for key in ("in_shardings", "out_shardings"):
                for m in op.attributes.get(key, ()) if op.name == "manual_computation" else ():
                    yield m.mesh.inline
        for t in func.result_types:
            m = getattr(t, "mapping", None)
            yield m is not None and m.mesh.inline


@register_pass("lift-inlined-meshes")
@dataclass(frozen=True)
class LiftInlinedMeshes(Pass):
    """Name every inline mesh, merge equal named meshes, and give every mesh its
    `stablehlo.mesh` attribute."""

    def run(self, module: Module, ctx: PassContext) -> None:
        lift_inlined_meshes(module)
        stablehlo_mesh_attrs(module)


register_alias("sdy-lift-inlined-meshes", "lift-inlined-meshes")
