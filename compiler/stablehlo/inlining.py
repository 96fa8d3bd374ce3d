"""Which private functions the exporter prints inline, as the regions of the ops that name them
(the importer outlined them: outlining.py).

    %0:2 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond}
        -> stablehlo.while(...) cond { <@main_while_cond's ops> } do { <@main_while_body's> }

A function that only ever serves as a region (no `call` or composite names it, not public) is
not printed on its own (`region_only_functions`).
"""

from __future__ import annotations

from shardc.ir.attributes import Symbol
from shardc.ir.core import Module, Operation

# Native ops whose regions are outlined functions, and the attributes that name them.
REGION_OPS = frozenset({"while", "case", "sort", "reduce", "reduce_window", "scatter",
                        "select_and_scatter", "manual_computation", "named_computation",
                        "xla.reduce_scatter", "xla.all_reduce"})
REGION_ATTRS = ("body", "cond", "branches", "comparator", "select")
# Attributes the printers of the region ops (and of `spmd.all_reduce`, whose reducer region is
# inline) write in their own syntax, never in the attribute dict.
# NOTE: one set for all of them: a discardable attribute named like another of these ops' own
# attributes is not printed either.
OWN_ATTRS = frozenset({"body", "cond", "branches", "comparator", "captures", "dimension",
                       "is_stable", "dimensions", "in_shardings", "out_shardings",
                       "manual_axes", "axes", "groups", "kind", "channel_handle",
                       "reducer_constraint", "reducer_attrs"})
OWN_ATTRS_OPS = REGION_OPS | {"spmd.all_reduce"}


def region_symbols(op: Operation) -> list[str]:
    """The functions `op` names as its regions."""
    if op.name not in REGION_OPS:
        return []
    out = []
    for key in REGION_ATTRS:
        value = op.attributes.get(key)
        if isinstance(value, Symbol):
            out.append(value.name)
        elif isinstance(value, tuple):
            out.extend(v.name for v in value if isinstance(v, Symbol))
    return out


def region_only_functions(module: Module) -> set[str]:
    """Private functions referenced only as regions of ops (never by `call`)."""
    as_region: set[str] = set()
    called: set[str] = set()
    for func in module.functions.values():
        for op in func.body:
            name = op.name
            if name in REGION_OPS:
                as_region.update(region_symbols(op))
            callee = op.attributes.get("callee") if name == "call" else None
            if isinstance(callee, Symbol):
                called.add(callee.name)
            if "decomposition" in op.attributes:
                decomposition = op.attributes["decomposition"]
                if isinstance(decomposition, Symbol):
                    called.add(decomposition.name)
    return {name for name in as_region - called
            if name in module.functions and module.functions[name].is_private}
