"""`Module` -> native text. Canonical text round-trips exactly: `print(parse(t)) == t`.

Names: a value keeps the name it was written with (`%x`, `%arg0`) unless that name is purely
numeric; numeric and unnamed values are numbered `%0, %1, ...` in order of definition, MLIR
style, so inserting an op renumbers what follows but never renames a user's value.
"""

from __future__ import annotations

from typing import Any

from shardc.ir.attributes import (
    MESH_ATTRS_PREFIX,
    format_attr_value,
    format_string,
    symbol_text,
)
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location


def _loc_text(loc: Location) -> str:
    if loc.line == 0 and loc.col == 0:
        return f"loc({format_string(loc.file)})"
    return f"loc({format_string(loc.file)}:{loc.line}:{loc.col})"


def format_attr_dict(attrs: dict[str, Any]) -> str:
    if not attrs:
        return ""
    return "{" + ", ".join(f"{k} = {format_attr_value(v)}" for k, v in attrs.items()) + "}"


class Namer:
    """Deterministic SSA names for one function."""

    def __init__(self, func: Function):
        self.names: dict[int, str] = {}
        taken: set[str] = set()
        values: list[Value] = list(func.args)
        for op in func.body:
            values.extend(op.results)
        for v in values:
            hint = v.name_hint
            if hint and not hint.isdigit() and hint not in taken:
                self.names[id(v)] = hint
                taken.add(hint)
        counter = 0
        for v in values:
            if id(v) in self.names:
                continue
            while str(counter) in taken:
                counter += 1
            self.names[id(v)] = str(counter)
            taken.add(str(counter))
            counter += 1

    def __call__(self, v: Value) -> str:
        name = self.names.get(id(v))
        if name is None:
            return "%<<UNKNOWN>>"
        return "%" + name


class Texts:
    """The texts of attribute values and types, each made once: a model's layers share a few.
    Keyed by identity, so it lives no longer than the printing of one module (whose ops keep
    the values alive)."""

    def __init__(self) -> None:
        self.values: dict[int, str] = {}
        self.types: dict[int, str] = {}

    def attr_dict(self, attrs: dict[str, Any]) -> str:
        parts = []
        values = self.values
        for k, v in attrs.items():
            text = values.get(id(v))
            if text is None:
                text = values[id(v)] = format_attr_value(v)
            parts.append(f"{k} = {text}")
        return "{" + ", ".join(parts) + "}"

    def type(self, t: Any) -> str:
        text = self.types.get(id(t))
        if text is None:
            text = self.types[id(t)] = t.text()
        return text


def print_op(op: Operation, name: Namer, texts: Texts | None = None) -> str:
    texts = texts or Texts()
    parts = []
    if op.results:
        parts.append(", ".join(name(r) for r in op.results) + " = ")
    parts.append(op.name)
    if op.operands:
        parts.append(" " + ", ".join(name(v) for v in op.operands))
    if op.attributes:
        parts.append(" " + texts.attr_dict(op.attributes))
    if op.results:
        parts.append(" : " + ", ".join(texts.type(r.type) for r in op.results))
    if op.loc_written and op.loc is not None:
        parts.append(" " + _loc_text(op.loc))
    return "".join(parts)


def print_function(func: Function) -> str:
    name = Namer(func)
    args = []
    for v, attrs in zip(func.args, func.arg_attrs):
        text = f"{name(v)}: {v.type.text()}"
        if attrs:
            text += " " + format_attr_dict(attrs)
        args.append(text)
    header = (
        "func " + ("private " if func.is_private else "") + symbol_text(func.name)
        + "(" + ", ".join(args) + ")"
    )
    results = []
    for t, attrs in zip(func.result_types, func.res_attrs):
        results.append(t.text() + (" " + format_attr_dict(attrs) if attrs else ""))
    if len(results) == 1 and not func.res_attrs[0]:
        header += f" -> {results[0]}"
    elif results:
        header += " -> (" + ", ".join(results) + ")"
    if func.attributes:
        header += " attributes " + format_attr_dict(func.attributes)
    lines = [header + " {"]
    texts = Texts()
    for op in func.body:
        lines.append("  " + print_op(op, name, texts))
    tail = "}"
    if func.loc_written and func.loc is not None:
        tail += " " + _loc_text(func.loc)
    lines.append(tail)
    return "\n".join(lines)


def print_module(module: Module) -> str:
    """The canonical native text of a module (ends with a newline)."""
    blocks: list[str] = []
    # a mesh's StableHLO attribute dict is StableHLO spelling: only its exporter prints it
    attrs = {k: v for k, v in module.attributes.items() if not k.startswith(MESH_ATTRS_PREFIX)}
    if attrs:
        blocks.append("module_attributes " + format_attr_dict(attrs))
    if module.meshes:
        blocks.append("\n".join(f"mesh @{m.name} = {m.text()}" for m in module.meshes.values()))
    for func in module.functions.values():
        blocks.append(print_function(func))
    return "\n\n".join(blocks) + "\n"
