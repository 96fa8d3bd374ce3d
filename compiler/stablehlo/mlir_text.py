"""The small pieces of MLIR syntax every StableHLO printer writes: types, integer lists, strings,
symbols and attribute dictionaries.

    tensor<8x16xf32>     (%arg0: ...) -> tensor<8xf32>     [1, 0]     "a\\0Ab"
    {mhlo.frontend_attributes = {...}, sdy.sharding = #sdy.sharding_per_value<[...]>}
"""

from __future__ import annotations

import re
from typing import Any

from shardc.ir.attributes import Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import TensorType
from shardc.stablehlo.literals import format_float


class ExportError(ShardcError):
    """The module holds something StableHLO + sdy text cannot express."""


_TENSOR_TEXTS: dict[tuple[tuple[int, ...], str], str] = {}  # a program's few distinct types


def tensor_text(t: TensorType) -> str:
    """`tensor<8x16xf32>` (no encoding: shardings are attributes in MLIR); `!stablehlo.token`."""
    key = (t.shape, t.dtype)
    text = _TENSOR_TEXTS.get(key)
    if text is None:
        if t.dtype == "token":
            text = "!stablehlo.token"
        else:
            text = "tensor<" + "".join(f"{d}x" for d in t.shape) + t.dtype + ">"
        if len(_TENSOR_TEXTS) < 1 << 16:
            _TENSOR_TEXTS[key] = text
    return text


def results_text(op: Operation) -> str:
    """`tensor<..>` for one result, `(tensor<..>, tensor<..>)` for several."""
    results = op.results
    if len(results) == 1:
        return tensor_text(results[0].type)
    return "(" + ", ".join([tensor_text(r.type) for r in results]) + ")"  # `()`: no results


def functional_type(op: Operation) -> str:
    """`(operand types) -> result type(s)`."""
    return ("(" + ", ".join([tensor_text(v.type) for v in op.operands]) + ") -> "
            + results_text(op))


_INT_LISTS: dict[tuple, str] = {}  # a program's few distinct dims/permutations/...


def int_list(values: Any) -> str:
    """`[1, 0]`."""
    try:
        text = _INT_LISTS.get(values)
        cacheable = True
    except TypeError:  # (a list, or numbers that do not hash)
        text, cacheable = None, False
    if text is None:
        text = "[" + ", ".join([str(int(v)) for v in values]) + "]"
        if cacheable and len(_INT_LISTS) < 1 << 16:
            _INT_LISTS[values] = text
    return text


def string_text(s: str) -> str:
    """A string literal as MLIR prints it: `"a\\0Ab"`."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\0A")
        elif ch == "\t":
            out.append("\\09")
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def symbol_text(name: str) -> str:
    """`@name`, quoted when `name` is not a bare identifier."""
    return "@" + name if re.fullmatch(r"[A-Za-z_][\w$.\-]*", name) else "@" + attr_text(name)


def inline_sharding(op: Operation) -> str:
    """The `<@mesh, [...]>` an sdy op writes inline: its result's sharding."""
    mapping = op.results[0].mapping
    if mapping is None:
        raise ExportError(f"'{op.name}' result needs a sharding to print as sdy", op.loc)
    return mapping.text()


def attr_text(value: Any) -> str:
    """An attribute value in MLIR syntax (opaque imported attributes verbatim)."""
    if isinstance(value, OpaqueAttr):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{format_float(value, 'f64')} : f64"
    if isinstance(value, str):
        return string_text(value)
    if isinstance(value, Symbol):
        return f"@{value.name}"
    if isinstance(value, Keyword):
        return string_text(value.word)
    if isinstance(value, tuple):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    if isinstance(value, NamedMapping):
        return f"#sdy.sharding{value.text()}"
    raise ExportError(f"cannot export attribute value {value!r} as MLIR")


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z_][\w.$\-]*", key) else string_text(key)


def attr_dict(attrs: dict[str, Any]) -> str:
    """`{a = 1 : i64, b}` with keys sorted as MLIR's DictionaryAttr keeps them ('' if empty)."""
    if not attrs:
        return ""
    parts = []
    for key in sorted(attrs):
        value = attrs[key]
        if isinstance(value, OpaqueAttr) and value.text == "unit":
            parts.append(_key(key))
        else:
            parts.append(f"{_key(key)} = {attr_text(value)}")
    return "{" + ", ".join(parts) + "}"
