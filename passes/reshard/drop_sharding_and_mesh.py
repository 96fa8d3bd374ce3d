"""`drop-sharding-and-mesh`: remove every `sdy.sharding` (of function arguments, results and
ops) and every mesh declaration (Shardy's `sdy-drop-sharding-and-mesh`). Shardings that are
part of an op (a constraint's, a reshard's, a collective's, a manual_computation's) stay.

    func @f(%arg0: tensor<8xf32> {sdy.sharding = <@mesh, [{"x"}]>}) -> tensor<8xf32>
  becomes
    func @f(%arg0: tensor<8xf32>) -> tensor<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.ops import COLLECTIVE, SHARDING, get_op_def
from shardc.ir.types import TensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

MESH_ATTRS_PREFIX = "shardc.mesh_attrs."


def holds_sharding(name: str) -> bool:
    """Ops whose sharding is an operand of the op rather than an `sdy.sharding` attribute."""
    op_def = get_op_def(name)
    return name == "manual_computation" or (
        op_def is not None and (op_def.has(SHARDING) or op_def.has(COLLECTIVE))
    )


@register_pass("drop-sharding-and-mesh")
@dataclass(frozen=True)
class DropShardingAndMesh(Pass):
    """Remove every sdy.sharding and every mesh (sdy-drop-sharding-and-mesh)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for a in func.args:
                a.type = TensorType(a.type.shape, a.type.dtype)
            func.result_types = [TensorType(t.shape, t.dtype) for t in func.result_types]
            for op in func.body:
                if holds_sharding(op.name):
                    continue
                for r in op.results:
                    r.type = TensorType(r.type.shape, r.type.dtype)
        module.meshes.clear()
        for key in [k for k in module.attributes if k.startswith(MESH_ATTRS_PREFIX)]:
            del module.attributes[key]


register_alias("sdy-drop-sharding-and-mesh", "drop-sharding-and-mesh")
