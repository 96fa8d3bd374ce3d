"""The order the driver first visits ops in (Shardy's top-down walk of the module)."""

from __future__ import annotations

from shardc.ir.core import Function, Module
from shardc.ir.ops.control import region_functions
from shardc.ir.ops.data_flow import EDGE
from shardc.passes.propagation.data_flow import REGION_OPS, Regions
from shardc.passes.propagation.manual_edges import ManualEdges


def walk_order(
    module: Module,
    erased: set[int] | frozenset[int] = frozenset(),
    regions: Regions | None = None,
    manual: ManualEdges | None = None,
) -> list:
    """Ops top-down (but `erased` ones), functions in module order, with each op's regions and
    bodies where the op stands, as Shardy's walk finds them inline:

    - a `while`/`case` is its region functions' ops (first reference) then its data-flow edges;
    - an `optimization_barrier` is its edges;
    - a `named_computation` is its argument edges, its body, its result edges;
    - a manual_computation is its argument edges, its body, its result edges (`manual`);
    - a `data_flow_edge` op stands for an edge already listed at its owner (an edge op without
      an owner of a data-flow op has nothing to propagate).

    A `call` is an ordinary op: Shardy's propagation does not enter its callee (its pipeline
    first turns every call into a named computation: `sdy-import-func-calls`)."""
    out: list = []
    seen: set[str] = set()
    bodies: set[str] = set(regions.functions) if regions is not None else set()
    if manual is not None:
        bodies.update(manual.bodies)

    def visit_once(func: Function) -> None:
        if func.name not in seen:
            visit(func)

    def visit(func: Function) -> None:
        seen.add(func.name)
        for op in func.body:
            if id(op) in erased or op.name == EDGE:
                continue
            if regions is not None and id(op) in regions.edges:
                if op.name in REGION_OPS:
                    for name in region_functions(op):
                        callee = module.lookup_function(name)
                        if callee is not None:
                            visit_once(callee)
                    out.extend(regions.edges[id(op)])
                elif op.name == "named_computation":
                    out.extend(regions.arg_edges(op))
                    body = module.lookup_function(op.attributes["body"].name)
                    if body is not None:
                        visit_once(body)
                    out.extend(regions.result_edges(op))
                else:
                    out.extend(regions.edges[id(op)])
                continue
            if manual is not None and op.name == "manual_computation":
                manual.walk(op, visit_once, out)
                continue
            out.append(op)

    for func in module.functions.values():
        if func.name not in seen and func.name not in bodies:
            visit(func)
    for func in module.functions.values():
        if func.name not in seen:
            visit(func)
    return out
