"""`remove-all-gather-reduce-scatter-for-cmv1` (Shardy's
`sdy-remove-all-gather-reduce-scatter-for-cmv1`): for XLA's collective matmul V1, a dot reads the
operands of the all_gathers feeding it and writes what its reduce_scatter would.

    %0 = sdy.all_gather [{"x"}, {}] %b out_sharding=<@m, [{}, {}]>     (only user: the dot)
    %1 = stablehlo.dot %a, %0 {sdy.sharding = <@m, [{"x"}, {}]>}
 -> %1 = stablehlo.dot %a, %b {sdy.sharding = <@m, [{"x"}, {}]>}

    %1 = stablehlo.dot_general %a, %b ... {sdy.sharding = <@m, [{}, {}]>}  (only user: the rs)
    %2 = sdy.reduce_scatter [{"x"}, {}] %1 out_sharding=<@m, [{"x"}, {}]>
 -> %1 = stablehlo.dot_general %a, %b ... {sdy.sharding = <@m, [{"x"}, {}]>}

An all_gather goes when the dot is its only user. A dot with such an operand keeps its
reduce_scatter; otherwise a reduce_scatter that is the dot's only user goes and the dot takes
its sharding, unless the dot's result is unreduced. The program is then no longer equivalent by
itself: XLA's CMV1 rewrite puts the collectives back inside the matmul.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

DOTS = ("dot", "dot_general")


def removable(module: Module) -> list[Operation]:
    """The all_gathers and reduce_scatters to remove, in Shardy's walk order."""
    out: list[Operation] = []
    for func in module.functions.values():
        for op in func.body:
            if op.name not in DOTS:
                continue
            gathers = [v.defining_op for v in op.operands
                       if v.defining_op is not None and v.defining_op.name == "all_gather"
                       and len(v.uses) == 1]
            out.extend(g for g in gathers if g is not None)
            if gathers:
                continue
            result = op.results[0]
            if len(result.uses) != 1:
                continue
            user = result.uses[0].op
            if user.name == "reduce_scatter" and (
                result.mapping is None or not result.mapping.unreduced
            ):
                result.set_mapping(user.results[0].mapping)
                out.append(user)
    return out


def remove_all_gather_reduce_scatter(module: Module) -> None:
    for op in removable(module):
        op.results[0].replace_all_uses_with(op.operand(0))
        op.erase()


@register_pass("remove-all-gather-reduce-scatter-for-cmv1")
@dataclass(frozen=True)
class RemoveAllGatherReduceScatterForCMV1(Pass):
    """Drop the all_gathers feeding a dot and the reduce_scatter after one (for XLA's CMV1)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        remove_all_gather_reduce_scatter(module)


register_alias("sdy-remove-all-gather-reduce-scatter-for-cmv1",
               "remove-all-gather-reduce-scatter-for-cmv1")
