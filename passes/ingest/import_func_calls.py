"""`import-func-calls` (Shardy's `sdy-import-func-calls`): every `call` becomes a
`named_computation` running a copy of the callee's body; the callees go.

    %0 = call %x {callee = @relu}      ->   %0 = named_computation %x {body = @main_relu,
                                                                      name = "relu"}

The computation is named after the callee (its `sdy.original_func_name` if it is a copy made by
`flatten-call-graph`); its `in_shardings` are the callee's argument shardings and its
`out_shardings` the call's result shardings (the callee's result shardings are ignored, as in
Shardy: `propagate-sharding-from-func-to-call` copies them onto calls without any first). Once
any entry of either list has a sharding, the others are fully open on the same mesh. The call's
other attributes move to the named computation. Functions are visited callees first, so a
callee's own calls are already named computations when it is copied.

With `add-data-flow-edges-on-named-computations=true` (the default, as in Shardy) every body
argument and result gets an explicit `data_flow_edge` (sdy-add-data-flow-edges).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import Symbol
from shardc.ir.core import Module, Operation
from shardc.ir.ops.data_flow import sync_body_results
from shardc.ir.symbols import (
    SymbolTable,
    callee_name,
    clone_with_regions,
    region_symbols,
    remove_function,
)
from shardc.ir.types import DistributedTensorType
from shardc.passes.ingest.call_graph import checked_call_graph, open_filled, original_name
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

EXECUTION_THREAD = "execution_thread"


def import_call(module: Module, call: Operation, regions: SymbolTable) -> Operation:
    """Replace `call` with a named computation running a copy of its callee."""
    callee = module.functions[callee_name(call) or ""]
    caller = call.function
    assert caller is not None
    name = original_name(callee)
    body = clone_with_regions(module, callee, f"{caller.name}_{name}", regions)
    body.visibility, body.visibility_written = "private", True
    body.attributes = {}
    body.arg_attrs = [{} for _ in body.args]
    body.res_attrs = [{} for _ in body.result_types]
    regions.insert(body)
    ins = open_filled([a.mapping for a in body.args], [a.type.rank for a in body.args])
    for arg, m in zip(body.args, ins or []):
        arg.set_mapping(m)
    outs = open_filled([r.mapping for r in call.results], [r.type.rank for r in call.results])
    types = [
        DistributedTensorType(r.type.shape, r.type.dtype, outs[j] if outs else None)
        for j, r in enumerate(call.results)
    ]
    attrs = {k: v for k, v in call.attributes.items() if k != "callee"}
    attrs.update(name=name, body=Symbol(body.name))
    thread = callee.attributes.get(EXECUTION_THREAD)
    if thread is not None:
        attrs[EXECUTION_THREAD] = thread
    named = call.replace_with(
        Operation.at(call, "named_computation", call.operands, types, attrs)
    )
    sync_body_results(named, body)
    return named


def _remove_with_regions(module: Module, name: str) -> None:
    """Drop `@name` and the region functions only its ops run (recursively)."""
    func = module.functions.get(name)
    if func is None:
        return
    regions = [r for op in func.body for r in region_symbols(op)]
    remove_function(module, name)
    for r in regions:
        _remove_with_regions(module, r)


def import_func_calls(module: Module, add_data_flow_edges: bool = False) -> list[Operation]:
    """Every call of `module` becomes a named computation; returns them (callers' order)."""
    # The post order and each function's calls: the loop replaces the calls of a function
    # when it reaches it (its callees' calls before), and adds bodies, copies made of callees.
    order, calls_of = checked_call_graph(module)
    before = {id(op) for op in module.walk() if op.name == "named_computation"}
    regions = SymbolTable(module)
    callees: set[str] = set()
    made: list[Operation] = []
    for func in order:
        for call in calls_of[func.name]:
            name = callee_name(call)
            if name is None or name not in module.functions:
                continue
            callees.add(name)
            made.append(import_call(module, call, regions))
    for name in callees:
        _remove_with_regions(module, name)
    # the ones made in a callee that was then copied are gone: take the copies
    made = [
        op for op in module.walk() if op.name == "named_computation" and id(op) not in before
    ]
    if add_data_flow_edges:
        from shardc.passes.ingest.add_data_flow_edges import add_named_computation_edges

        for op in made:
            add_named_computation_edges(module, op)
    return made


@register_pass("import-func-calls")
@dataclass(frozen=True)
class ImportFuncCalls(Pass):
    """Turn every call into a named computation running a copy of the callee (Shardy's
    `sdy-import-func-calls`)."""

    add_data_flow_edges_on_named_computations: bool = True

    def run(self, module: Module, ctx: PassContext) -> None:
        import_func_calls(module, self.add_data_flow_edges_on_named_computations)


register_alias("sdy-import-func-calls", "import-func-calls")
