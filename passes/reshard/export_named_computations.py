"""`export-named-computations` (Shardy's `sdy-export-named-computations`): every
`named_computation` becomes a `call` of a private function holding its body.

    %0 = named_computation %x {body = @main_relu, name = "relu"}  ->  %0 = call %x {callee = @relu}

Named computations are visited innermost first, functions in module order; each body becomes a
function named after its computation (uniqued as MLIR's symbol table does: `relu`, `relu_0`,
...), appended to the module and marked `sdy.original_func_name = "relu"` for
`unflatten-call-graph`. Its arguments keep the `in_shardings`; its results carry none (the call's
results keep the `out_shardings`; `propagate-to-func-results` fills the function's in). Explicit
`data_flow_edge`s of the computation are sunk first.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import Symbol
from shardc.ir.core import Module, Operation
from shardc.ir.ops.data_flow import EDGE, NAMED
from shardc.ir.symbols import SymbolTable
from shardc.ir.types import TensorType
from shardc.passes.ingest.call_graph import (
    ORIGINAL_NAME,
    arg_shardings,
    open_filled,
    ops_in,
    region_functions,
)
from shardc.passes.ingest.import_func_calls import EXECUTION_THREAD
from shardc.passes.ingest.sink_data_flow_edges import sink_edge
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def _post_order(module: Module) -> list[Operation]:
    """The named computations, a nested one before the one holding it."""
    regions = region_functions(module)
    out: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        seen.add(id(op))
        body = module.lookup_function(op.attributes["body"].name)
        if body is not None:
            for inner in ops_in(module, body):
                if inner.name == NAMED and id(inner) not in seen:
                    visit(inner)
        out.append(op)

    for func in list(module.functions.values()):
        if func.name in regions:
            continue
        for op in ops_in(module, func):
            if op.name == NAMED and id(op) not in seen:
                visit(op)
    return out


def export_named_computation(module: Module, op: Operation, table: SymbolTable) -> Operation:
    body = module.functions.pop(op.attributes["body"].name)
    for value in [*body.args, *op.results]:
        for use in list(value.uses):
            if use.op.name == EDGE:
                sink_edge(use.op)
    # Shardy's in/out shardings are one attribute each: once an entry has a sharding, the others
    # are fully open (a scalar's is `[]`).
    for arg, m in zip(body.args, arg_shardings(body) or ()):
        arg.set_mapping(m)
    outs = open_filled([r.mapping for r in op.results], [r.type.rank for r in op.results])
    for r, m in zip(op.results, outs or ()):
        r.set_mapping(m)
    name = op.attributes["name"]
    body.name = name
    body.visibility, body.visibility_written = "private", True
    body.attributes = {ORIGINAL_NAME: name}
    thread = op.attributes.get(EXECUTION_THREAD)
    if thread is not None:
        body.attributes[EXECUTION_THREAD] = thread
    body.result_types = [TensorType(t.shape, t.dtype) for t in body.result_types]
    table.insert(body)
    attrs = {k: v for k, v in op.attributes.items()
             if k not in ("name", "body", EXECUTION_THREAD)}
    attrs["callee"] = Symbol(body.name)
    types = [r.type for r in op.results]
    return op.replace_with(Operation.at(op, "call", op.operands, types, attrs))


def export_named_computations(module: Module) -> list[Operation]:
    """Every named computation becomes a call; returns the calls."""
    table = SymbolTable(module)
    return [export_named_computation(module, op, table) for op in _post_order(module)]


@register_pass("export-named-computations")
@dataclass(frozen=True)
class ExportNamedComputations(Pass):
    """Turn every named computation into a call of a function holding its body."""

    def run(self, module: Module, ctx: PassContext) -> None:
        export_named_computations(module)


register_alias("sdy-export-named-computations", "export-named-computations")
