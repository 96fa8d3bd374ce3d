"""Seeing the sharding: per-value text, Graphviz, a self-contained HTML page, device grids.

    print(explain_text(module, ctx.data.get("origins")))  # value, op, sharding, shapes, origin
    open("g.dot", "w").write(to_dot(module))  # nodes coloured by sharding
    open("g.html", "w").write(to_html(module))  # SVG graph + legend + value table
    print(visualize_sharding((16, 64), mapping))  # which devices hold which block

Colours: one per distinct sharding (the mapping's text), assigned in program order, so the same
module always gets the same picture; replicated values are grey and values with no sharding
white. Collectives are drawn with a thick red border and their bytes per device (passes/cost.py).
The HTML page has no scripts and no external resources: it renders offline.
"""

from __future__ import annotations

import colorsys
import html
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.printer import Namer
from shardc.ir.types import shard_bounds, shard_shape
from shardc.layout import layered_layout
from shardc.passes.cost import COLLECTIVES, collective_report

# ColorBrewer Set3 without its grey and red (grey is "replicated", red marks collectives).
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
    "#a6cee3",
    "#e5c494",
)
REPLICATED_COLOR = "#e4e4e4"
UNSHARDED_COLOR = "#ffffff"
COLLECTIVE_COLOR = "#c0392b"
NO_SHARDING = "(no sharding)"


# ----- shared facts about a module ------------------------------------------------------------


@dataclass
class Node:
    """One graph node: a function argument or an op (its first result names it)."""

    key: str  # unique within the module: "main/%x", "main/op12"
    name: str  # printed name ("%x", "%3") or the op name for ops without results
    op: str  # "arg" or the op name
    value: Value | None
    operation: Operation | None
    collective: dict[str, Any] | None = None  # its cost report entry


def fmt_bytes(n: int) -> str:
    """`2048` -> `2.0 KiB`."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def shape_text(shape: Iterable[int]) -> str:
    dims = list(shape)
    return "x".join(map(str, dims)) if dims else "scalar"


def sharding_key(v: Value | None) -> str:
    m = v.mapping if v is not None else None
    return NO_SHARDING if m is None else m.text()


def compact(m: NamedMapping | None) -> str:
    """`[{"dp"}, {}, {"tp", "x":(1)2, ?}]` -> `[dp, -, tp*x:(1)2?]` (for small labels)."""
    if m is None:
        return "open"
    dims = []
    for d in m.dims:
        text = "*".join(str(a).replace('"', "") for a in d.axes) or "-"
        dims.append(text + ("?" if d.is_open else ""))
    out = "[" + ", ".join(dims) + "]"
    if m.unreduced:
        out += " sum(" + ",".join(str(a).replace('"', "") for a in m.unreduced) + ")"
    return out


def local_shape(v: Value) -> tuple[int, ...]:
    return shard_shape(v.type.shape, v.mapping)


def _origin(v: Value, origins: Any) -> str:
    if origins is not None:
        text = origins.describe(v)
        if text:
            return text
    owner = v.defining_op
    attr = owner.attributes.get("shardc.origin") if owner is not None else None
    if attr is None and v.is_argument:
        func = v.owner
        assert isinstance(func, Function)
        attr = func.arg_attrs[v.index].get("shardc.origin")
    return str(attr) if isinstance(attr, str) else ""


def function_nodes(func: Function, collectives: dict[str, dict[str, Any]]) -> list[Node]:
    """Arguments, then every op in program order."""
    name = Namer(func)
    nodes = [Node(f"{func.name}/{name(a)}", name(a), "arg", a, None) for a in func.args]
    for i, op in enumerate(func.body):
        v = op.results[0] if op.results else None
        label = name(v) if v is not None else op.name
        nodes.append(
            Node(f"{func.name}/op{i}", label, op.name, v, op, collectives.get(label))
            if op.name in COLLECTIVES
            else Node(f"{func.name}/op{i}", label, op.name, v, op)
        )
    return nodes


def function_edges(func: Function, nodes: list[Node]) -> list[tuple[str, str, int]]:
    """(source key, user key, operand index): one per use."""
    key_of: dict[int, str] = {}
    for n in nodes:
        if n.operation is not None:
            for r in n.operation.results:
                key_of[id(r)] = n.key
        elif n.value is not None:
            key_of[id(n.value)] = n.key
    edges = []
    for n in nodes:
        if n.operation is None:
            continue
        for i, v in enumerate(n.operation.operands):
            if id(v) in key_of:
                edges.append((key_of[id(v)], n.key, i))
    return edges


def _collectives_by_function(module: Module) -> tuple[dict[str, dict[str, dict]], dict]:
    report = collective_report(module)
    by_func: dict[str, dict[str, dict]] = {}
    for e in report["collectives"]:
        by_func.setdefault(e["function"], {})[e["value"]] = e
    return by_func, report


def sharding_colors(module: Module) -> dict[str, str]:
    """Sharding text -> fill colour, in order of first appearance (arguments, then ops)."""
    colors: dict[str, str] = {NO_SHARDING: UNSHARDED_COLOR}
    extra = 0
    for func in module.functions.values():
        values: list[Value] = list(func.args)
        for op in func.body:
            values.extend(op.results)
        for v in values:
            key = sharding_key(v)
            if key in colors:
                continue
            m = v.mapping
            if m is not None and m.is_fully_replicated:
                colors[key] = REPLICATED_COLOR
                continue
            used = sum(1 for c in colors.values() if c not in (UNSHARDED_COLOR, REPLICATED_COLOR))
            if used < len(PALETTE):
                colors[key] = PALETTE[used]
            else:  # golden-ratio hues, pastel
                hue = (0.13 + 0.618034 * extra) % 1.0
                r, g, b = colorsys.hls_to_rgb(hue, 0.82, 0.6)
                colors[key] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
                extra += 1
    return colors


# ----- text ------------------------------------------------------------------------------------


def explain_text(module: Module, origins: Any = None) -> str:
    """Per value: name, op, global type, sharding, local (per-device, padded) shape and origin.

    `origins` is propagation's `OriginTracker` (`ctx.data["origins"]`); without it the
    `shardc.origin` attributes written by `propagate --explain` are used when present.
    """
    by_func, report = _collectives_by_function(module)
    lines: list[str] = []
    for m in module.meshes.values():
        lines.append(f"mesh {m}")
    for func in module.functions.values():
        lines.append("")
        lines.append(f"func @{func.name}")
        rows = [("value", "op", "type", "sharding", "local shape", "origin")]
        for n in function_nodes(func, by_func.get(func.name, {})):
            if n.value is None:
                continue
            v = n.value
            origin = _origin(v, origins)
            if n.collective is not None:
                e = n.collective
                bytes_text = f"{fmt_bytes(e['bytes_per_device'])}/device over {','.join(e['axes'])}"
                origin = bytes_text + (f"; {origin}" if origin else "")
            rows.append(
                (
                    n.name,
                    n.op,
                    f"{shape_text(v.type.shape)}x{v.type.dtype}" if v.type.shape else v.type.dtype,
                    sharding_key(v),
                    shape_text(local_shape(v)),
                    origin,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            cells = [c.ljust(w) for c, w in zip(r[:5], widths)]
            lines.append(("  " + "  ".join(cells) + "  " + r[5]).rstrip())
    lines.append("")
    count = len(report["collectives"])
    lines.append(
        f"collectives: {count}, {fmt_bytes(report['total_comm_bytes'])} per device"
        + "".join(
            f"; {k} x{v['count']} {fmt_bytes(v['bytes'])}" for k, v in report["by_kind"].items()
        )
    )
    lines.append(f"peak memory: {fmt_bytes(report['peak_memory_bytes_per_device'])} per device")
    return "\n".join(lines) + "\n"


# ----- Graphviz --------------------------------------------------------------------------------


def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def node_label_lines(n: Node) -> tuple[str, str]:
    """Two short lines: `%q = dot_general`, then local shape and sharding (or the bytes)."""
    first = n.name if n.op == "arg" else (f"{n.name} = {n.op}" if n.value is not None else n.op)
    if n.collective is not None:
        e = n.collective
        return first, f"{fmt_bytes(e['bytes_per_device'])} over {','.join(e['axes'])}"
    if n.value is None:
        return first, ""
    return first, f"{shape_text(local_shape(n.value))} {compact(n.value.mapping)}"


def to_dot(module: Module) -> str:
    """Graphviz text: one node per argument and op, one edge per use, fill colour by sharding,
    collectives with a red border and their bytes per device; a legend cluster."""
    by_func, _ = _collectives_by_function(module)
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


# ----- HTML ------------------------------------------------------------------------------------

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
    origin = _origin(v, origins)
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
        out.append(f'<g class="{cls}"><title>{_e(_node_title(n, origins))}</title>')
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


def to_html(module: Module, origins: Any = None, title: str = "shardc: sharded program") -> str:
    """A self-contained page: summary, legend, an SVG graph per function (nodes coloured by
    sharding, collectives outlined in red with their bytes, hover titles) and a value table."""
    by_func, report = _collectives_by_function(module)
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
            f"<td>{_e(moved)}</td><td>{_e(_origin(v, origins))}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


# ----- device grids ----------------------------------------------------------------------------


def _ids_text(ids: list[int]) -> str:
    """`[0, 1, 2, 3, 6]` -> `0-3,6` (runs of three or more are ranges)."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(f"{ids[i]}-{ids[j]}" if j - i >= 2 else ",".join(map(str, ids[i : j + 1])))
        i = j + 1
    return ",".join(out)


@dataclass
class Block:
    """One block of a tensor: its shard index per dim, its global [start, stop) per dim, and
    the sorted ids of the devices that hold it."""

    index: tuple[int, ...]
    bounds: tuple[tuple[int, int], ...]
    devices: list[int]


def block_owners(shape: tuple[int, ...], mapping: NamedMapping | None) -> list[Block]:
    """Every block of `shape` under `mapping`, in shard-index order."""
    if mapping is None:
        return [Block(tuple(0 for _ in shape), tuple((0, n) for n in shape), [0])]
    mesh = mapping.mesh
    blocks: dict[tuple[int, ...], Block] = {}
    for p in range(mesh.num_devices):
        index = tuple(
            mapping.shard_index(d, p) if mapping.num_shards(d) > 1 else 0 for d in range(len(shape))
        )
        block = blocks.setdefault(index, Block(index, shard_bounds(shape, mapping, p), []))
        block.devices.append(mesh.device_id(p))
    for b in blocks.values():
        b.devices.sort()
    return [blocks[k] for k in sorted(blocks)]


def visualize_sharding(shape: tuple[int, ...] | list[int], mapping: NamedMapping | None) -> str:
    """A picture of which devices hold which block (jax.debug.visualize_sharding's style).

    1-D tensors are one row of blocks, 2-D a grid (rows: dim 0); each block lists the ids of
    the devices holding it (`0-3` is 0,1,2,3). Higher ranks get a per-dim description.
    """
    shape = tuple(shape)
    head = f"tensor<{shape_text(shape)}> " + (
        "(no sharding: every device holds all of it)"
        if mapping is None
        else f"on @{mapping.mesh.name} {mapping.mesh.text()}: {mapping.text()}"
    )
    lines = [head]
    blocks = block_owners(shape, mapping)
    if len(shape) in (1, 2) and mapping is not None:
        lines += _grid(shape, blocks)
    for d, n in enumerate(shape):
        if mapping is None or mapping.num_shards(d) == 1:
            lines.append(f"dim {d} ({n}): whole on every device")
            continue
        k = mapping.num_shards(d)
        axes = ", ".join(str(a) for a in mapping.dims[d].axes)
        ranges = dict(sorted((b.index[d], b.bounds[d]) for b in blocks))
        lines.append(
            f"dim {d} ({n}): split {k} ways over {axes}: "
            + " ".join(f"[{a}:{b}]" for a, b in ranges.values())
        )
    if len(shape) > 2 and mapping is not None and len(blocks) <= 16:
        for b in blocks:
            where = ", ".join(f"{lo}:{hi}" for lo, hi in b.bounds)
            who = ("devices " if len(b.devices) > 1 else "device ") + _ids_text(b.devices)
            lines.append(f"  {who}: [{where}]")
    if mapping is not None and mapping.unreduced:
        lines.append(
            "unreduced over "
            + ", ".join(str(a) for a in mapping.unreduced)
            + ": devices along it hold partial sums of the same block"
        )
    return "\n".join(lines) + "\n"


def _grid(shape: tuple[int, ...], blocks: list[Block]) -> list[str]:
    """Box-drawing grid: 1-D is one row of blocks; 2-D has dim 0 down and dim 1 across."""
    if len(shape) == 1:
        cell = {(0, b.index[0]): _ids_text(b.devices) for b in blocks}
    else:
        cell = {(b.index[0], b.index[1]): _ids_text(b.devices) for b in blocks}
    rows = sorted({r for r, _ in cell})
    cols = sorted({c for _, c in cell})
    w = max(7, max(len(t) for t in cell.values()) + 4)
    pad = 1 if len(rows) <= 4 else 0  # blank lines above and below a label

    def border(left: str, mid: str, right: str) -> str:
        return left + mid.join("\u2500" * w for _ in cols) + right

    out = [border("\u250c", "\u252c", "\u2510")]
    for i, r in enumerate(rows):
        blank = "\u2502" + "\u2502".join(" " * w for _ in cols) + "\u2502"
        label = "\u2502" + "\u2502".join(cell.get((r, c), "").center(w) for c in cols) + "\u2502"
        out += [blank] * pad + [label] + [blank] * pad
        if i + 1 < len(rows):
            out.append(border("\u251c", "\u253c", "\u2524"))
    out.append(border("\u2514", "\u2534", "\u2518"))
    return out
