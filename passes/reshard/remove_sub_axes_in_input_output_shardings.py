"""`remove-sub-axes-in-input-output-shardings`: an open dim of the main function's argument and
result shardings keeps its axes up to the first sub-axis (Shardy's
`sdy-remove-sub-axes-in-input-output-shardings`; closed dims are left alone).

    func @main(%arg0: tensor<8xf32> {sdy.sharding = <@m, [{"y", "x":(1)2, ?}]>})
  becomes
    func @main(%arg0: tensor<8xf32> {sdy.sharding = <@m, [{"y", ?}]>})

The main function is the module's only function, else `@main`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def main_function(module: Module) -> Function:
    """Shardy's `getMainFuncOrDie(useSingleFunc=true)`."""
    if len(module.functions) == 1:
        return next(iter(module.functions.values()))
    func = module.functions.get("main")
    if func is None:
        raise PassError("the module has several functions and none is named @main")
    return func


def without_sub_axes(m: NamedMapping) -> NamedMapping:
    dims = []
    for d in m.dims:
        axes = d.axes
        if d.is_open:
            k = next((i for i, a in enumerate(axes) if a.is_sub_axis), len(axes))
            axes = axes[:k]
        dims.append(d if axes == d.axes else DimSharding(axes, d.is_closed, d.priority))
    return m.with_dims(dims)


@register_pass("remove-sub-axes-in-input-output-shardings")
@dataclass(frozen=True)
class RemoveSubAxesInInputOutputShardings(Pass):
    """Cut open argument/result dims of the main function at their first sub-axis
    (sdy-remove-sub-axes-in-input-output-shardings)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        func = main_function(module)
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(without_sub_axes(a.mapping))
        for i, t in enumerate(func.result_types):
            if isinstance(t, DistributedTensorType) and t.mapping is not None:
                func.result_types[i] = DistributedTensorType(
                    t.shape, t.dtype, without_sub_axes(t.mapping))


register_alias(
    "sdy-remove-sub-axes-in-input-output-shardings", "remove-sub-axes-in-input-output-shardings"
)
