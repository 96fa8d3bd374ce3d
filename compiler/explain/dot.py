"""`to_dot`: the program as Graphviz text, nodes coloured by sharding.

    open("g.dot", "w").write(to_dot(module))
"""

from __future__ import annotations

from shardc.explain.graph import (
    COLLECTIVE_COLOR,
    collectives_by_function,
    function_edges,
    function_nodes,
    node_label_lines,
    sharding_colors,
    sharding_key,
)
from shardc.ir.core import Module


def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(module: Module) -> str:
    """Graphviz text: one node per argument and op, one edge per use, fill colour by sharding,
    collectives with a red border and their bytes per device; a legend cluster."""
    by_func, _ = collectives_by_function(module)
    colors = sharding_colors(module)
    out = [
        "digraph shardc {",
        '  rankdir=TB; node [shape=box, style="rounded,filled", fontname="Helvetica", '
        "fontsize=10];",
    ]
    for func in module.functions.values():
        nodes = function_nodes(func, by_func.get(func.name, {}))
        out.append(f"  subgraph {_dot_str('cluster_' + func.name)} {{")
        out.append(f"    label={_dot_str('@' + func.name)};")
        for n in nodes:
            label = "\n".join(x for x in node_label_lines(n) if x)
            attrs = [
                f"label={_dot_str(label)}",
                f"fillcolor={_dot_str(colors[sharding_key(n.value)])}",
            ]
            if n.collective is not None:
                attrs += [f'color="{COLLECTIVE_COLOR}"', "penwidth=3"]
            if n.op == "arg":
                attrs.append("shape=ellipse")
            out.append(f"    {_dot_str(n.key)} [{', '.join(attrs)}];")
        for src, dst, i in function_edges(func, nodes):
            out.append(f"    {_dot_str(src)} -> {_dot_str(dst)} [label={_dot_str(str(i))}];")
        out.append("  }")
    out.append(f"  subgraph cluster_legend {{ label={_dot_str('sharding')};")
    for i, (key, color) in enumerate(colors.items()):
        out.append(f"    legend{i} [label={_dot_str(key)}, fillcolor={_dot_str(color)}];")
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"
