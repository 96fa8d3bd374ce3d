"""`propagate-to-func-results`: every function but the main one gets, as each result's
sharding, the sharding of the value it returns (none when that value has none) (Shardy's
`sdy-propagate-to-func-results`).

    func private @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
      %0 = stablehlo.negate %arg0 {sdy.sharding = <@m, [{"x"}]>} : tensor<8xf32>
      return %0 : tensor<8xf32>
    }
  becomes
    func private @f(%arg0: tensor<8xf32>) -> (tensor<8xf32> {sdy.sharding = <@m, [{"x"}]>})
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.types import DistributedTensorType, TensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.remove_sub_axes_in_input_output_shardings import main_function


@register_pass("propagate-to-func-results")
@dataclass(frozen=True)
class PropagateToFuncResults(Pass):
    """Give non-main functions' results the shardings of what they return
    (sdy-propagate-to-func-results)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        main = main_function(module)
        for func in module.functions.values():
            ret = func.return_op
            if func is main or ret is None:
                continue
            for i, v in enumerate(ret.operands):
                t = func.result_types[i]
                m = v.mapping
                func.result_types[i] = (DistributedTensorType(t.shape, t.dtype, m)
                                        if m is not None else TensorType(t.shape, t.dtype))


register_alias("sdy-propagate-to-func-results", "propagate-to-func-results")
