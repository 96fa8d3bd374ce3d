"""The exporter's op table, which each op-family module (`ops/`) fills in as it is imported.

    @prints("concatenate")                  # one line: the text after `%0 = `
    def _concatenate(p, op, n, args): return f"stablehlo.concatenate {args}, dim = ..."

    @prints_lines("while")                  # several lines, the op's regions inlined
    def _while(p, op, n, indent): return [f"{indent}{n.group(op)}stablehlo.while(...", ...]

A one-line printer gets the `Printer` (attribute dicts, locations), the op, the `Names` of its
scope and its operands' names joined (`%arg0, %1`); the table adds the indent, the result names
and the location. A native op no family names prints by the default printer
(`prints_by_default`; element-wise ops: `stablehlo.<name> %a, %b : type`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LinesPrinter = Callable[..., list[str]]  # (Printer, Operation, Names, indent) -> lines

# Native op name -> the printer of its lines.
PRINTERS: dict[str, LinesPrinter] = {}
# Native op name -> the names MLIR gives its results (ops with an OpAsmOpInterface).
RESULT_NAMES: dict[str, tuple[str, ...]] = {}
_DEFAULT = "*"


def _one_line(fn: Callable[..., str]) -> LinesPrinter:
    def lines(p: Any, op: Any, n: Any, indent: str) -> list[str]:
        head = n.group(op)
        text = indent + head + fn(p, op, n, ", ".join(map(n, op.operands)))
        return [text + p.loc(op.loc, op.loc_written) if p.debug_info else text]

    return lines


def _register(names: tuple[str, ...], printer: LinesPrinter) -> None:
    for name in names:
        assert name not in PRINTERS, f"{name} has two printers"
        PRINTERS[name] = printer


def prints(*names: str, result_names: tuple[str, ...] | None = None) -> Callable:
    """Register the one-line printer `fn(p, op, n, args) -> text` of the native ops `names`."""

    def decorate(fn: Callable[..., str]) -> Callable[..., str]:
        _register(names, _one_line(fn))
        if result_names is not None:
            RESULT_NAMES.update(dict.fromkeys(names, result_names))
        return fn

    return decorate


def prints_lines(*names: str) -> Callable:
    """Register the printer `fn(p, op, n, indent) -> lines` of the native ops `names`."""

    def decorate(fn: LinesPrinter) -> LinesPrinter:
        _register(names, fn)
        return fn

    return decorate


def prints_by_default(fn: Callable[..., str]) -> Callable[..., str]:
    """Register the one-line printer of every native op no family names."""
    _register((_DEFAULT,), _one_line(fn))
    return fn


def printer_of(name: str) -> LinesPrinter:
    return PRINTERS.get(name) or PRINTERS[_DEFAULT]
