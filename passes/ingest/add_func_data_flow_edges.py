"""`add-func-data-flow-edges` (Shardy's `sdy-add-func-data-flow-edges`): an explicit
`func_data_flow_edge` op for every argument of every function but the main one, and for every
result of every call, holding the sharding of its owner.

    func.func private @f(%arg0: tensor<8xf32> {sdy.sharding = <@m, [{"x"}]>}) {
      %0 = stablehlo.negate %arg0
 -> func.func private @f(%arg0: tensor<8xf32> {sdy.sharding = <@m, [{"x"}]>}) {
      %0 = sdy.func_data_flow_edge %arg0 {sdy.sharding = <@m, [{"x"}]>}
      %1 = stablehlo.negate %0

    %1 = call @f(%0)            ->   %1 = call @f(%0)
    %2 = stablehlo.abs %1            %2 = sdy.func_data_flow_edge %1
                                     %3 = stablehlo.abs %2

The edges follow `add-data-flow-edges`' (`passes/ingest/add_data_flow_edges.py`): an argument's
edges open the function, a call's follow it, in order; every other use goes through the edge. Tokens
get none. The main function is `@main`, or the only function (region bodies of while, case,
named and manual computations are not functions here, as in Shardy).
`sink-func-data-flow-edges` takes them out again.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.control import region_functions
from shardc.ir.ops.data_flow import FUNC_EDGE
from shardc.passes.ingest.add_data_flow_edges import add_body_edges, add_result_edges
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def region_bodies(module: Module) -> set[str]:
    """The functions that hold an op's region (while/case regions, named and manual
    computation bodies): Shardy's ops keep them inside, not as functions."""
    names: set[str] = set()
    for func in module.functions.values():
        for op in func.body:
            names.update(region_functions(op))
            body = op.attributes.get("body") if op.name in (
                "named_computation", "manual_computation") else None
            if body is not None:
                names.add(body.name)
    return names


def main_function(module: Module, bodies: set[str]) -> Function:
    """Shardy's `getMainFuncOrDie(useSingleFunc=true)`."""
    funcs = [f for f in module.functions.values() if f.name not in bodies]
    if len(funcs) == 1:
        return funcs[0]
    main = module.functions.get("main")
    if main is None:
        raise PassError("sdy-add-func-data-flow-edges needs a function named @main (or a single "
                        "function)")
    return main


def add_func_data_flow_edges(module: Module) -> None:
    bodies = region_bodies(module)
    main = main_function(module, bodies)
    for func in list(module.functions.values()):
        if func is not main and func.name not in bodies:
            add_body_edges(func, FUNC_EDGE)
    for func in list(module.functions.values()):
        for op in list(func.body):
            if op.name == "call":
                add_result_edges(op, FUNC_EDGE)


@register_pass("add-func-data-flow-edges")
@dataclass(frozen=True)
class AddFuncDataFlowEdges(Pass):
    """Make every function argument's (main's aside) and call result's edge an explicit op."""

    def run(self, module: Module, ctx: PassContext) -> None:
        add_func_data_flow_edges(module)


register_alias("sdy-add-func-data-flow-edges", "add-func-data-flow-edges")
