"""`propagate-to-func-results` (Shardy's `sdy-propagate-to-func-results`): every function but
the entry function declares the sharding of the value it returns (or none, if that value has
none).

    func private @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
      %0 = stablehlo.negate %arg0 {sdy.sharding = <@m, [{"x"}]>} : tensor<8xf32>
      return %0 : tensor<8xf32>
    }
  becomes
    func private @f(%arg0: tensor<8xf32>) -> (tensor<8xf32> {sdy.sharding = <@m, [{"x"}]>})

Region and body functions (loop bodies, branches, computation bodies) are not functions in
Shardy's program and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.types import DistributedTensorType, TensorType
from shardc.passes.ingest.call_graph import region_functions
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.state import entry_functions


def propagate_to_func_results(module: Module) -> None:
    regions = region_functions(module)
    entries = entry_functions(module, regions)
    for func in module.functions.values():
        ret = func.return_op
        if func.name in entries or func.name in regions or ret is None:
            continue
        for i, v in enumerate(ret.operands):
            t = func.result_types[i]
            m = v.mapping
            func.result_types[i] = (DistributedTensorType(t.shape, t.dtype, m)
                                    if m is not None else TensorType(t.shape, t.dtype))


@register_pass("propagate-to-func-results")
@dataclass(frozen=True)
class PropagateToFuncResults(Pass):
    """Give every non-entry function's results the shardings of the values it returns."""

    def run(self, module: Module, ctx: PassContext) -> None:
        propagate_to_func_results(module)


register_alias("sdy-propagate-to-func-results", "propagate-to-func-results")
