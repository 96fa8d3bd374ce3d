"""`update-non-divisible-input-output-shardings`: the shardings at function boundaries shard
every dim evenly (Shardy's `sdy-update-non-divisible-input-output-shardings`).

Per dim that its axes do not divide: axes are kept major to minor while they divide what is left
of the dim; the first that does not is cut to its largest dividing part (its gcd with the rest),
and the axes after it are dropped.

    [{"y", "x"}] : tensor<4xf32> on ["x"=4, "y"=2]  ->  [{"y", "x":(1)2}]
    [{"x"}] : tensor<3xf32>                          ->  [{}]

It applies to every function's arguments and results, `call` results, and the in/out
shardings of `manual_computation`s (the body's view, without the manual axes, must divide the
body's local shapes).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.ops import attr
from shardc.ir.ops.manual import body_of, fill_values, local_shape, with_free_axes
from shardc.ir.types import DistributedTensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.layouts import evenly_sharded
from shardc.passes.reshard.reshards.explicit_walk import erase_manual, manual_axes


@register_pass("update-non-divisible-input-output-shardings")
@dataclass(frozen=True)
class UpdateNonDivisibleInputOutputShardings(Pass):
    """Make function, call and manual_computation boundary shardings divide their dims
    (sdy-update-non-divisible-input-output-shardings)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for a in func.args:
                if a.mapping is not None:
                    a.set_mapping(evenly_sharded(a.mapping, a.type.shape))
            for i, t in enumerate(func.result_types):
                if isinstance(t, DistributedTensorType) and t.mapping is not None:
                    func.result_types[i] = DistributedTensorType(
                        t.shape, t.dtype, evenly_sharded(t.mapping, t.shape))
        for func in module.functions.values():
            for op in func.body:
                if op.name == "call":
                    for r in op.results:
                        if r.mapping is not None:
                            r.set_mapping(evenly_sharded(r.mapping, r.type.shape))
                elif op.name == "manual_computation":
                    self.manual(op)

    @staticmethod
    def manual(op) -> None:
        manual = manual_axes(op)
        ins = []
        for v, m in zip(op.operands, attr(op, "in_shardings"), strict=True):
            local = local_shape(v.type.shape, m, manual)
            inner = evenly_sharded(erase_manual(m, manual), local)
            ins.append(with_free_axes(m, inner, manual))
        op.attributes["in_shardings"] = tuple(ins)
        op.attributes["out_shardings"] = tuple(
            evenly_sharded(m, r.type.shape)
            for m, r in zip(attr(op, "out_shardings"), op.results, strict=True)
        )
        if body_of(op) is not None:
            fill_values(op)


register_alias(
    "sdy-update-non-divisible-input-output-shardings",
    "update-non-divisible-input-output-shardings",
)
