"""The order the driver first visits ops in (Shardy's walk of the module)."""

from __future__ import annotations

from shardc.ir.core import Function, Module
from shardc.ir.ops import attr
from shardc.ir.ops.control import region_functions
from shardc.passes.propagation.manual_edges import ManualEdges
from shardc.passes.propagation.regions import REGION_OPS, Regions


def walk_order(
    module: Module,
    erased: set[int] | frozenset[int] = frozenset(),
    regions: Regions | None = None,
    manual: ManualEdges | None = None,
) -> list:
    """Ops top-down (but `erased` ones), a callee's body right after its first call (as if
    inlined there, which is the order Shardy visits a call's named computation in); uncalled
    functions last. A `while`/`case` is its region functions' ops (first reference) then its
    data-flow edges (`regions`), as Shardy visits the regions then the `sdy.data_flow_edge`s;
    a manual_computation stands for its edges around its body (`manual`)."""
    out: list = []
    seen: set[str] = set()

    def visit_once(func: Function) -> None:
        if func.name not in seen:
            visit(func)

    def visit(func: Function) -> None:
        seen.add(func.name)
        for op in func.body:
            if id(op) in erased:
                continue
            if op.name in REGION_OPS and regions is not None:
                for name in region_functions(op):
                    callee = module.lookup_function(name)
                    if callee is not None and callee.name not in seen:
                        visit(callee)
                out.extend(regions.edges.get(id(op), ()))
                continue
            if manual is not None and op.name == "manual_computation":
                manual.walk(op, visit_once, out)
                continue
            out.append(op)
            if op.name == "call":
                callee = module.lookup_function(attr(op, "callee").name)
                if callee is not None and callee.name not in seen:
                    visit(callee)

    for func in module.functions.values():
        if not func.is_private and func.name not in seen:
            visit(func)
    for func in module.functions.values():
        if func.name not in seen:
            visit(func)
    return out
