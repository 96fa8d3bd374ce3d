"""`to_html`: a self-contained page (no scripts, no external resources: it renders offline)
with a summary, a legend, an SVG graph per function, a value table and the collectives table:
each collective links to its node in the graph, with its explanation (collectives.py) and, when
given a `CollectivesReport` (collectives_report.py), its measured suggestions.

    open("g.html", "w").write(to_html(module, ctx.data.get("origins")))
    open("g.html", "w").write(to_html(report.base.module, origins, collectives=report))
"""

from __future__ import annotations

import html
from typing import Any

from shardc.explain.graph import (
    REPLICATED_COLOR,
    Node,
    collectives_by_function,
    fmt_bytes,
    function_edges,
    function_nodes,
    local_shape,
    node_label_lines,
    origin_text,
    shape_text,
    sharding_colors,
    sharding_key,
)
from shardc.explain.graph_layout import layered_layout
from shardc.ir.core import Function, Module

NODE_W, NODE_H, GAP_X, GAP_Y, MARGIN = 200, 38, 24, 30, 20
CHARS = 29  # characters of 11px monospace that fit in a node


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _fit(s: str) -> str:
    return s if len(s) <= CHARS else s[: CHARS - 1] + "\u2026"


def _node_title(n: Node, origins: Any) -> str:
    if n.value is None:
        return n.op
    v = n.value
    parts = [
        f"{n.name} = {n.op}" if n.op != "arg" else f"{n.name} (argument)",
        f"type: {v.type.text()}",
        f"sharding: {sharding_key(v)}",
        f"local shape: {shape_text(local_shape(v))}",
    ]
    origin = origin_text(v, origins)
    if origin:
        parts.append(f"origin: {origin}")
    if n.collective is not None:
        e = n.collective
        parts.append(
            f"{e['kind']} over {','.join(e['axes'])}: {e['bytes_per_device']} bytes/device "
            f"({e['ring_bytes_per_device']} ring), groups {e['groups']}"
        )
    return "\n".join(parts)


def function_svg(func: Function, nodes: list[Node], colors: dict[str, str], origins: Any) -> str:
    """The SVG drawing of one function: nodes in layers top to bottom, one path per use."""
    if not nodes:
        return ""
    edges = function_edges(func, nodes)
    lay = layered_layout(
        [n.key for n in nodes], [(s, d) for s, d, _ in edges], {n.key: NODE_W for n in nodes}
    )
    width = int(lay.width + 2 * MARGIN)
    height = lay.depth * (NODE_H + GAP_Y) - GAP_Y + 2 * MARGIN

    def top(li: int) -> float:
        return MARGIN + li * (NODE_H + GAP_Y)

    def left(key: str) -> float:
        return MARGIN + lay.x[key] - NODE_W / 2

    out = [
        f'<svg class="graph" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#777"/></marker></defs>',
    ]
    for src, dst, i in edges:
        points = [(MARGIN + lay.x[src], top(lay.layer[src]) + NODE_H)]
        for x, li in lay.route(src, dst):
            points += [(MARGIN + x, top(li)), (MARGIN + x, top(li) + NODE_H)]
        points.append((MARGIN + lay.x[dst], top(lay.layer[dst]) - 1))
        d = f"M{points[0][0]:.1f},{points[0][1]:.1f}"
        for j, ((x1, y1), (x2, y2)) in enumerate(zip(points, points[1:])):
            if j % 2 == 1:  # straight down through a dummy slot
                d += f" L{x2:.1f},{y2:.1f}"
            else:
                bend = (y2 - y1) / 2
                d += f" C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"
        out.append(
            f'<path class="edge" d="{d}" marker-end="url(#arrow)">'
            f"<title>{_e(src.split('/', 1)[1])} \u2192 operand {i}</title></path>"
        )
    for n in nodes:
        x, y = left(n.key), top(lay.layer[n.key])
        fill = colors[sharding_key(n.value)]
        cls = "node collective" if n.collective is not None else "node"
        rx = 16 if n.op == "arg" else 5
        line1, line2 = node_label_lines(n)
        out.append(f'<g class="{cls}" id="{node_anchor(n.key)}">'
                   f"<title>{_e(_node_title(n, origins))}</title>")
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="{rx}" '
            f'fill="{fill}"/>'
        )
        out.append(f'<text x="{x + 8:.1f}" y="{y + 15:.1f}" class="l1">{_e(_fit(line1))}</text>')
        if line2:
            cls2 = "l2 bytes" if n.collective is not None else "l2"
            out.append(
                f'<text x="{x + 8:.1f}" y="{y + 30:.1f}" class="{cls2}">{_e(_fit(line2))}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 4px 0; } h2 { font-size: 16px; margin: 22px 0 8px 0; }
.summary { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; }
.card b { display: block; font-size: 17px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; font: 12px monospace; }
.legend span.sw { display: inline-block; width: 14px; height: 14px; border: 1px solid #888;
                  vertical-align: middle; margin-right: 5px; border-radius: 3px; }
.legend .coll { border: 3px solid #c0392b; background: #fff; }
.scroll { overflow: auto; background: #fff; border: 1px solid #ddd; border-radius: 6px; }
svg.graph text { font: 11px monospace; fill: #222; }
svg.graph text.l2 { fill: #444; } svg.graph text.bytes { fill: #c0392b; font-weight: bold; }
svg.graph rect { stroke: #666; stroke-width: 1; }
svg.graph g.collective rect { stroke: #c0392b; stroke-width: 3.5; }
svg.graph g.node:hover rect { stroke: #000; stroke-width: 2.5; }
svg.graph path.edge { fill: none; stroke: #999; stroke-width: 1.1; opacity: 0.75; }
table { border-collapse: collapse; font: 12px monospace; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } tr.collective td { color: #c0392b; font-weight: bold; }
td.sw { width: 12px; }
"""


def node_anchor(key: str) -> str:
    """The HTML id of a graph node (`main/op12` -> `n-main-op12`)."""
    return "n-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in key)


def to_html(module: Module, origins: Any = None, title: str = "shardc: sharded program",
            collectives: Any = None) -> str:
    """A self-contained page: summary, legend, an SVG graph per function (nodes coloured by
    sharding, collectives outlined in red with their bytes, hover titles), a value table and
    the collectives table (`collectives`: a `CollectivesReport` with suggestions; without it
    the collectives are explained from `origins`)."""
    by_func, report = collectives_by_function(module)
    colors = sharding_colors(module)
    counts: dict[str, int] = {}
    for func in module.functions.values():
        for n in function_nodes(func, {}):
            if n.value is not None:
                counts[sharding_key(n.value)] = counts.get(sharding_key(n.value), 0) + 1
    meshes = ", ".join(str(m) for m in module.meshes.values()) or "no mesh"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"/>',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1><div>{_e(meshes)}</div>",
        '<div class="summary">',
        _card("collectives", str(len(report["collectives"]))),
        _card("communication / device", fmt_bytes(report["total_comm_bytes"])),
        _card("ring model / device", fmt_bytes(report["total_ring_bytes"])),
        _card("peak memory / device", fmt_bytes(report["peak_memory_bytes_per_device"])),
    ]
    parts += [
        _card(kind, f"{v['count']} \u00d7, {fmt_bytes(v['bytes'])}")
        for kind, v in report["by_kind"].items()
    ]
    parts.append('</div><h2>Legend</h2><div class="legend">')
    legend: dict[str, tuple[str, int]] = {}  # colour -> (label, values); one grey entry
    for key, color in colors.items():
        if key in counts:
            label = "fully replicated" if color == REPLICATED_COLOR else key
            legend[color] = (label, legend.get(color, (label, 0))[1] + counts[key])
    for color, (label, count) in legend.items():
        parts.append(
            f'<div><span class="sw" style="background:{color}"></span>{_e(label)} ({count})</div>'
        )
    parts.append('<div><span class="sw coll"></span>collective (red: bytes per device)</div></div>')
    for func in module.functions.values():
        nodes = function_nodes(func, by_func.get(func.name, {}))
        parts.append(f"<h2>@{_e(func.name)}</h2>")
        parts.append(f'<div class="scroll">{function_svg(func, nodes, colors, origins)}</div>')
        parts.append(_value_table(nodes, colors, origins))
    parts.append(collectives_table(module, origins, collectives))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _card(label: str, value: str) -> str:
    return f'<div class="card">{_e(label)}<b>{_e(value)}</b></div>'


def _value_table(nodes: list[Node], colors: dict[str, str], origins: Any) -> str:
    rows = [
        "<h2>Values</h2><table><tr><th></th><th>value</th><th>op</th><th>type</th>"
        "<th>sharding</th><th>local shape</th><th>bytes / device</th><th>origin</th></tr>"
    ]
    for n in nodes:
        if n.value is None:
            continue
        v = n.value
        color = colors[sharding_key(v)]
        moved = fmt_bytes(n.collective["bytes_per_device"]) if n.collective else ""
        cls = ' class="collective"' if n.collective else ""
        rows.append(
            f'<tr{cls} title="{_e(_node_title(n, origins))}">'
            f'<td class="sw" style="background:{color}"></td><td>{_e(n.name)}</td>'
            f"<td>{_e(n.op)}</td><td>{_e(v.type.tensor.text())}</td>"
            f"<td>{_e(sharding_key(v))}</td><td>{_e(shape_text(local_shape(v)))}</td>"
            f"<td>{_e(moved)}</td><td>{_e(origin_text(v, origins))}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def collectives_table(module: Module, origins: Any, report: Any = None) -> str:
    """One row per collective: kind, axes, bytes, source line, the op it serves, a link to its
    node, its explanation and its suggestions (folded)."""
    from shardc.explain.collectives import collective_text, explain_collectives

    explanations = report.explanations if report is not None else explain_collectives(
        module, origins)
    suggestions = report.suggestions if report is not None else []
    keys: dict[int, str] = {}
    for func in module.functions.values():
        for n in function_nodes(func, {}):
            if n.operation is not None:
                keys[id(n.operation)] = n.key
    rows = [
        "<h2>Collectives</h2><table><tr><th>collective</th><th>kind</th><th>axes</th>"
        "<th>bytes / device</th><th>source line</th><th>serves</th><th>why</th></tr>"
    ]
    for i, e in enumerate(explanations):
        key = keys.get(id(e.op)) if e.op is not None else None
        name = (f'<a href="#{node_anchor(key)}">{_e(e.value)}</a>' if key else _e(e.value))
        detail = _e(collective_text(e))
        found = suggestions[i] if i < len(suggestions) else []
        if found:
            detail += "\n\n" + "\n".join(_e("suggest: " + s.text()) for s in found)
        count = f" \u00b7 {len(found)} suggestion(s)" if found else ""
        rows.append(
            f'<tr class="collective" id="c-{i}"><td>{name}</td><td>{_e(e.kind)}</td>'
            f"<td>{_e(','.join(e.axes))}</td><td>{_e(fmt_bytes(e.bytes_per_device))}</td>"
            f"<td>{_e(e.loc)}</td><td>{_e(e.serves)} \u2192 {_e(e.consumer)} "
            f"(operand {e.operand})</td><td><details><summary>{_e(e.reason)}{count}</summary>"
            f"<pre>{detail}</pre></details></td></tr>"
        )
    if not explanations:
        rows.append('<tr><td colspan="7">no collectives: every op computes on local '
                    "data</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)
