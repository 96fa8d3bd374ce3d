"""The importer's op tables, which each op-family module (`ops/`) fills in as it is imported.

    @read_rule("dims_op")                   # grammar.lark rule -> the record it builds
    def dims_op(c): return OpRec("dims", c[0], [c[1]], {"dims": c[2]}, c[3], c[4])

    @pretty_form("dims")                    # that record form -> the native op
    def _dims(fb, rec, operands): return "transpose", {"permutation": ...}, results, None

    @generic("stablehlo.transpose")         # "stablehlo.transpose"(%0) <{...}> : ... -> native
    def _transpose(fb, rec, operands, props, results): ...

A converter returns a `Conversion`: (native op name, attributes, the result type tokens, the
results' mappings or None). A pretty-form converter takes (FunctionBuilder, OpRec, operands); a
generic one also takes the op's `<{...}>` properties and the result types of its signature,
which `convert_generic` has already checked. An op name imports in the generic form exactly when
it has a `generic` converter (the reader checks `GENERIC` at the name); a pretty form imports
when grammar.lark has its rule. Raising `ValueError` in a converter reports
`'<op>' op: <message>` at the op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shardc.stablehlo.records import AttrRec, OpRec

if TYPE_CHECKING:
    from lark import Token  # (or the line reader's: tokens.py)

Conversion = tuple[str, dict[str, Any], "list[Token]", list | None]
FormConverter = Callable[..., Conversion]  # (FunctionBuilder, OpRec, operands)
GenericConverter = Callable[..., Conversion]  # (FunctionBuilder, OpRec, operands, Props, results)

# Grammar rule name -> the reader callback building its record (run during the LALR parse).
READ_RULES: dict[str, Callable[[list], Any]] = {}
# `OpRec.form` -> the converter of records of that form.
FORMS: dict[str, FormConverter] = {}
# Op name -> the converter of its generic form.
GENERIC: dict[str, GenericConverter] = {}

_WHY_UNSUPPORTED = {
    "stablehlo.if": "stablehlo.if does not import (JAX emits stablehlo.case)",
}


def _register(table: dict[str, Any], keys: tuple[str, ...]) -> Callable:
    def decorate(fn: Callable) -> Callable:
        for key in keys:
            assert key not in table, f"{key} is registered twice"
            table[key] = fn
        return fn

    return decorate


def read_rule(*rules: str) -> Callable:
    """Register the reader callback of grammar rules (`fn(children) -> record or value`)."""
    return _register(READ_RULES, rules)


def pretty_form(*forms: str) -> Callable:
    """Register the converter of the records the reader builds with `OpRec.form` in `forms`."""
    return _register(FORMS, forms)


def generic(*names: str) -> Callable:
    """Register the converter of the generic form of the ops `names`."""
    return _register(GENERIC, names)


class SyntaxIssue(Exception):
    """Raised from a reader callback: a malformed construct at `token` (a located ParseError)."""

    def __init__(self, message: str, token: Token):
        super().__init__(message)
        self.message = message
        self.token = token


def unsupported_message(name: str) -> str:
    why = _WHY_UNSUPPORTED.get(name, "shardc's IR has no equivalent")
    return (
        f"unsupported op '{name}': {why}; see docs/interop.md for the ops that import "
        "(rewrite or remove it before importing)"
    )


class Props(dict):
    """The generic form's `<{key = value}>` properties: key -> `AttrRec` (None when unit).

    A property may also be written in the op's attribute dictionary (`"stablehlo.gather"(...)
    {dimension_numbers = ...}`, as MLIR accepts for inherent attributes): a key not among the
    properties is then taken from there (and so not kept as a discardable attribute)."""

    def __init__(self, entries: dict[str, AttrRec | None], rec: OpRec | None = None):
        super().__init__(entries)
        self.rec = rec

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key in self:
            return self[key]
        if self.rec is not None and self.rec.attrs is not None and key in self.rec.attrs.entries:
            self[key] = take_attr(self.rec, key)
            return self[key]
        return default

    def need(self, key: str) -> AttrRec:
        value = self.get(key)
        if value is None:
            raise ValueError(f"needs property '{key}'")
        return value


@pretty_form("generic")
def convert_generic(fb: Any, rec: OpRec, operands: list) -> Conversion:
    """The generic form `"stablehlo.x"(...) <{props}> ({regions}) : (...) -> ...`."""
    props = Props(rec.extra["props"].entries if rec.extra["props"] else {}, rec)
    results = fb.results_of(rec, operands)
    converter = GENERIC.get(rec.name)
    if converter is None:
        raise ValueError("the generic form of this op does not import; use its pretty form")
    return converter(fb, rec, operands, props, results)


def plain(fb: Any, rec: OpRec, operands: list, props: Props, results: list) -> Conversion:
    """A generic op that is the native op of its short name, with no attributes."""
    return rec.name.partition(".")[2], {}, results, None


def take_attr(rec: OpRec, key: str) -> AttrRec | None:
    """Remove `key` from the op's attribute dict and return its value (None if absent), for an
    attribute that is part of the op rather than kept verbatim."""
    if rec.attrs is None or key not in rec.attrs.entries:
        return None
    rec.attrs.tokens.pop(key, None)
    return rec.attrs.entries.pop(key)
