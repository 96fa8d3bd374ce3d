"""`close-shardings`: make every open dim closed (`{"x", ?}` -> `{"x"}`, `{?}` -> `{}`).

Run after propagation, when nothing more may be added; values with no sharding at all get a
fully replicated one on the module's mesh (`ir.mesh.default_mesh`: its only mesh, or its only
mesh with axes beside JAX's axis-less `@empty_mesh`).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Value
from shardc.ir.mapping import NamedMapping, interned
from shardc.ir.mesh import default_mesh
from shardc.ir.ops.manual import fill_all, sync_all
from shardc.ir.types import DistributedTensorType
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.propagation.layouts import close, per_mapping


@register_pass("close-shardings")
@dataclass(frozen=True)
class CloseShardings(Pass):
    """Close every open dim: after this, propagation can add nothing."""

    def run(self, module: Module, ctx: PassContext) -> None:
        mesh = default_mesh(module.meshes)
        fill_all(module)  # manual_computation values take their shardings from its attributes

        closed = per_mapping(close)
        replicated: dict[int, NamedMapping] = {}  # rank -> fully replicated on `mesh`

        def fix(v: Value) -> None:
            m = v.mapping
            if m is not None:
                v.set_mapping(closed(m))
            elif mesh is not None:
                rank = v.type.rank
                r = replicated.get(rank)
                if r is None:
                    r = replicated[rank] = interned(NamedMapping.fully_replicated(mesh, rank))
                v.set_mapping(r)

        for func in module.functions.values():
            for a in func.args:
                fix(a)
            for op in func.body:
                for r in op.results:
                    fix(r)
            for i, t in enumerate(func.result_types):
                m = t.mapping if isinstance(t, DistributedTensorType) else None
                if m is not None:
                    func.result_types[i] = DistributedTensorType(t.shape, t.dtype, closed(m))
                elif mesh is not None:
                    func.result_types[i] = DistributedTensorType(
                        t.shape, t.dtype, NamedMapping.fully_replicated(mesh, t.rank)
                    )
        sync_all(module)  # ... and give them back closed

