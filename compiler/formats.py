"""Input/output formats: the native IR and StableHLO + sdy MLIR text, detected from the text."""

from __future__ import annotations

import re

from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.propagation.rules import registry as _rules  # noqa: F401 - registers the rule verifier

_SDY_MARKERS = re.compile(r"^[ \t]*(module\b|func\.func\b|sdy\.mesh\b)|\bstablehlo\.|\bsdy\.", re.M)
# Native text starts its top-level items with `mesh @`, `func @`/`func private @`.
_NATIVE_MARKERS = re.compile(r"^(mesh @|func (private )?@|module_attributes )", re.M)
_COMMENT = re.compile(r"//[^\n]*")


def detect(text: str, explicit: str | None = None) -> str:
    """`native` or `sdy`: an explicit choice wins; otherwise StableHLO/sdy markers decide."""
    if explicit is not None:
        return explicit
    code = _COMMENT.sub("", text)
    if _NATIVE_MARKERS.search(code):
        return "native"
    return "sdy" if _SDY_MARKERS.search(code) else "native"


def parse(text: str, filename: str, fmt: str, limits: Limits = DEFAULT_LIMITS) -> Module:
    if fmt == "native":
        return parse_module(text, filename, limits=limits)
    from shardc.stablehlo import import_stablehlo

    return import_stablehlo(text, filename, limits=limits)


def emit(module: Module, fmt: str) -> str:
    if fmt == "native":
        return print_module(module)
    if fmt == "sdy":
        from shardc.stablehlo import export_stablehlo

        return export_stablehlo(module)
    raise ShardcError(f"unknown output format '{fmt}' (expected native or sdy)")
