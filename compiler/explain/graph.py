"""The program as a drawable graph, shared by every view (text, Graphviz, HTML).

    nodes = function_nodes(func, collectives)        # arguments, then ops in program order
    edges = function_edges(func, nodes)              # (source key, user key, operand index)
    colors = sharding_colors(module)                 # sharding text -> fill colour

Colours: one per distinct sharding (the mapping's text), assigned in program order, so the same
module always gets the same picture; replicated values are grey and values with no sharding
white. Collectives are drawn with a thick red border and their bytes per device
(passes/analysis/cost.py).
"""

from __future__ import annotations

import colorsys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.printer import Namer
from shardc.ir.types import shard_shape
from shardc.passes.analysis.cost import COLLECTIVES, collective_report

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


def origin_text(v: Value, origins: Any) -> str:
    """Why `v` has its sharding: from `origins` (propagation's `OriginTracker`), else the
    `shardc.origin` attribute `propagate --explain` wrote, else empty."""
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


def collectives_by_function(module: Module) -> tuple[dict[str, dict[str, dict]], dict]:
    """(function -> value name -> its cost report entry, the whole cost report)."""
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


def node_label_lines(n: Node) -> tuple[str, str]:
    """Two short lines: `%q = dot_general`, then local shape and sharding (or the bytes)."""
    first = n.name if n.op == "arg" else (f"{n.name} = {n.op}" if n.value is not None else n.op)
    if n.collective is not None:
        e = n.collective
        return first, f"{fmt_bytes(e['bytes_per_device'])} over {','.join(e['axes'])}"
    if n.value is None:
        return first, ""
    return first, f"{shape_text(local_shape(n.value))} {compact(n.value.mapping)}"
