"""Decoding MLIR attribute and type text that the grammar keeps as single tokens.

    dense<[1.0, 2.0]> : tensor<2xf32>               -> DenseElements((1.0, 2.0), (2,))
    #sdy.sharding<@mesh, [{"dp"}, {}]>              -> ShardingText(...).parse()
    [<@mesh, [{}]>, <mesh<["x"=2]>, [{"x"}]>]       -> split_top_level(...): the two shardings
    #stablehlo.gather<offset_dims = [1], ...>       -> {"offset_dims": (1,), ...}
    array<i64: 1, 0>                                -> (1, 0)

Floats are rounded to their element type as MLIR does (`round_to_dtype`), so the exporter prints
back what MLIR would. The attribute names shardc adds to carry StableHLO facts through the native
IR (`MESH_ATTRS_PREFIX`, `SDY_CONSTANT_MARKER`, `ARITH_CONSTANT_MARKER`, `REDUCER_ATTRS`) live
here, shared by importer and exporter.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

from shardc.ir.attributes import (  # noqa: F401 (MESH_ATTRS_PREFIX: imported from here)
    MESH_ATTRS_PREFIX,
    DenseElements,
    flatten_nested,
    hex_float_bits,
    unescape,
)
from shardc.ir.diagnostics import VerifyError
from shardc.ir.mapping import DimSharding
from shardc.ir.mesh import AxisRef
from shardc.ir.propagation_edges import split_array
from shardc.ir.types import COMPLEX_PARTS, DTYPES
from shardc.stablehlo.records import AttrRec

# Marks a native `constant` that was spelled `sdy.constant` (Shardy's unfoldable constant).
SDY_CONSTANT_MARKER = "sdy.constant"
# Marks a native `constant` that was spelled `arith.constant` (MLIR's builtin constant), printed
# back under that name; unlike `sdy.constant` it means nothing to the passes.
ARITH_CONSTANT_MARKER = "arith.constant"
# Keeps the discardable attributes of a reducer region's one op (reduce_window), printed back on it.
REDUCER_ATTRS = "shardc.reducer_attrs"


# ----- small decoders -------------------------------------------------------------------------

_TENSOR_RE = re.compile(r"tensor<((?:\d+x)*)([a-zA-Z_][\w]*(?:<\w+>)?)>")
TOKEN_TYPE = "!stablehlo.token"


@functools.lru_cache(maxsize=4096)
def tensor_type_text(text: str) -> tuple[tuple[int, ...], str] | str:
    """`tensor<8x16xf32>` -> ((8, 16), "f32"), `!stablehlo.token` -> ((), "token"); an error
    message string when not supported."""
    if text == TOKEN_TYPE:
        return (), "token"
    if text.startswith("tuple<"):
        return f"unsupported type '{text}' (shardc's IR has no tuple types)"
    m = _TENSOR_RE.fullmatch(text)
    if m is None:
        return f"unsupported type '{text}' (shardc needs static shapes and no encoding)"
    dims, dtype = m.groups()
    if dtype not in DTYPES:
        return f"unsupported element type '{dtype}' in '{text}'"
    return tuple(int(d) for d in dims.split("x")[:-1]), dtype


_FLOAT_FORMATS = {  # precision (with the implicit bit), min normal exponent, max exponent
    "f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127), "f64": (53, -1022, 1023),
}


def round_to_dtype(x: float, dtype: str) -> float:
    """The nearest `dtype` value to the float64 `x` (round half to even), as a Python float."""
    if dtype == "f64" or x == 0 or not math.isfinite(x):
        return x
    p, emin, emax = _FLOAT_FORMATS[dtype]
    e = math.frexp(abs(x))[1] - 1
    digits = p - max(emin - e, 0)
    scale = digits - 1 - e
    y = math.ldexp(round(math.ldexp(abs(x), scale)), -scale)
    if y >= math.ldexp(1.0, emax + 1):
        y = math.inf
    return math.copysign(y, x)


_DENSE_TOKEN = re.compile(
    r'\s*(?:(\[)|(\])|(,)|("(?:[^"\\]|\\.)*")|(\([^()]*\)|[^\s,\[\]]+))')


def _dense_scalar(text: str, dtype: str) -> Any:
    if dtype.startswith("complex<"):  # (real,imag), each of the part's type
        text = text.strip()
        if not (text.startswith("(") and text.endswith(")")):
            raise ValueError(text)
        real, imag = text[1:-1].split(",")
        part = COMPLEX_PARTS[dtype]
        return complex(_dense_scalar(real.strip(), part), _dense_scalar(imag.strip(), part))
    if dtype == "i1":
        if text in ("true", "false"):
            return text == "true"
        if text in ("0", "1"):
            return text == "1"
        raise ValueError(text)
    if dtype.startswith(("i", "ui")):
        return int(text, 0)
    if text.startswith(("0x", "0X")):
        return hex_float_bits(text, dtype)
    return round_to_dtype(float(text), dtype)


def parse_dense(text: str, dtype: str) -> DenseElements:
    """`dense<...>` for elements of `dtype`: splat, nested list or hex string."""
    body = text[len("dense<") : -1].strip()
    if body.startswith('"'):
        return DenseElements((), (), unescape(body))
    if not body.startswith("["):
        return DenseElements((_dense_scalar(body, dtype),))
    stack: list[list] = []
    root: list | None = None
    for m in _DENSE_TOKEN.finditer(body):
        if m.group(1):
            new: list = []
            if stack:
                stack[-1].append(new)
            else:
                root = new
            stack.append(new)
        elif m.group(2):
            stack.pop()
        elif m.group(5) or m.group(4):
            stack[-1].append(_dense_scalar(m.group(5) or m.group(4), dtype))
    shape, flat = flatten_nested(root if root is not None else [])
    return DenseElements(tuple(flat), shape)


# ----- shardings ------------------------------------------------------------------------------

_SHARDING_TOKEN = re.compile(
    r'\s*(?:(@[\w$.\-]+)|("(?:[^"\\]|\\.)*")|(p\d+)|(\d+)|([A-Za-z_]\w*)|(\S))'
)


def split_top_level(text: str) -> list[str]:
    """`[<@a, [{}]>, <mesh<["x"=2]>, [{"x"}]>]` -> its items, split at the commas outside any
    bracket or string (`ValueError` if `text` is not a list)."""
    try:
        return split_array(text)
    except VerifyError:
        raise ValueError(f"expected a list [...], got {text!r}") from None


class ShardingText:
    """Recursive descent over Shardy's `<@mesh, [{"x", ?}p1, {}], replicated={"y"}>`."""

    def __init__(self, text: str):
        self.toks = [m for m in _SHARDING_TOKEN.finditer(text)]
        self.i = 0
        self.text = text

    def peek(self) -> str:
        return self.toks[self.i].group(0).strip() if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> re.Match:
        if self.i >= len(self.toks):
            raise ValueError(f"unexpected end of sharding {self.text!r}")
        m = self.toks[self.i]
        if want is not None and m.group(0).strip() != want:
            raise ValueError(f"expected '{want}' in sharding {self.text!r}, got {m.group(0)!r}")
        self.i += 1
        return m

    def axis(self) -> AxisRef:
        m = self.take()
        if not m.group(2):
            raise ValueError(f"expected an axis name in sharding {self.text!r}")
        name = unescape(m.group(2))
        if self.peek() != ":":
            return AxisRef(name)
        self.take(":")
        self.take("(")
        pre = int(self.take().group(0))
        self.take(")")
        return AxisRef(name, pre, int(self.take().group(0)))

    def items(self, open_: str, close: str, item: Callable[[], Any]) -> list[Any]:
        """`open_ item, item, ... close`, each item read by `item()`."""
        self.take(open_)
        out = []
        while self.peek() != close:
            out.append(item())
            if self.peek() == ",":
                self.take(",")
        self.take(close)
        return out

    def axis_set(self) -> tuple[AxisRef, ...]:
        return tuple(self.items("{", "}", self.axis))

    def dim(self) -> DimSharding:
        self.take("{")
        axes: list[AxisRef] = []
        closed = True
        while self.peek() != "}":
            if self.peek() == "?":
                self.take("?")
                closed = False
            else:
                axes.append(self.axis())
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        prio = None
        if self.i < len(self.toks) and self.toks[self.i].group(3):
            prio = self.priority(self.take().group(3))
        return DimSharding(tuple(axes), closed, prio)

    @staticmethod
    def priority(word: str) -> int:
        """`p3` -> 3; Shardy reads a priority as an int64 written without leading zeros."""
        digits = word[1:]
        if len(digits) > 1 and digits.startswith("0"):
            raise ValueError(f"priorities with leading zeros are not allowed, got: {word}")
        if int(digits) >= 1 << 63:
            raise ValueError(f"expecting integer priority, got: {word}")
        return int(digits)

    def mesh_axis(self) -> tuple[str, int]:
        m = self.take()
        if not m.group(2):
            raise ValueError(f"expected an axis name in the mesh of {self.text!r}")
        self.take("=")
        return unescape(m.group(2)), int(self.take().group(0))

    def int_item(self) -> int:
        return int(self.take().group(0))

    def inline_mesh(self) -> InlineMesh:
        """`mesh<["x"=2, "y"=4], device_ids=[...]>` after the word `mesh`."""
        self.take("<")
        axes = self.items("[", "]", self.mesh_axis)
        ids = None
        if self.peek() == ",":
            self.take(",")
            self.take("device_ids")
            self.take("=")
            ids = self.items("[", "]", self.int_item)
        self.take(">")
        return InlineMesh(tuple(axes), None if ids is None else tuple(ids))

    def parse(self) -> tuple[str | InlineMesh, list[DimSharding], dict[str, Any]]:
        """(mesh name or inline mesh, dims, {"replicated": axes, "unreduced": axes,
        "unreduced_op": "max"})."""
        self.take("<")
        m = self.take()
        mesh: str | InlineMesh
        if m.group(1):
            mesh = m.group(1)[1:]
        elif m.group(0).strip() == "mesh":
            mesh = self.inline_mesh()
        else:
            raise ValueError(
                f"sharding {self.text!r} must name a mesh (`@mesh`, declared with sdy.mesh) "
                'or write one inline (`mesh<["x"=2]>`)'
            )
        self.take(",")
        dims = self.items("[", "]", self.dim)
        extras: dict[str, Any] = {}
        while self.peek() == ",":
            self.take(",")
            key = self.take().group(0).strip()
            if key not in ("replicated", "unreduced"):
                raise ValueError(f"unknown sharding field '{key}' in {self.text!r}")
            if key in extras:
                raise ValueError(f"'{key}=' written twice in {self.text!r} (once at most)")
            self.take("=")
            if key == "unreduced" and self.peek() != "{":
                extras["unreduced_op"] = self.take().group(0).strip()
            extras[key] = self.axis_set()
        self.take(">")
        if self.i != len(self.toks):
            raise ValueError(f"unexpected text after sharding {self.text!r}")
        return mesh, dims, extras


class InlineMesh(tuple):
    """(axes, device_ids) of a mesh written inside a sharding."""

    def __new__(cls, axes: tuple[tuple[str, int], ...], device_ids: tuple[int, ...] | None):
        return super().__new__(cls, (axes, device_ids))


# ----- #stablehlo attributes and properties ---------------------------------------------------


def props_ints(attr: AttrRec | None) -> tuple[int, ...] | None:
    if attr is None:
        return None
    if attr.kind == "array":
        body = attr.value[attr.value.index(":") + 1 : -1] if ":" in attr.value else ""
        return tuple(int(x) for x in body.split(",") if x.strip())
    if attr.kind == "list":
        return tuple(int(x.value) for x in attr.value)
    raise ValueError("expected an integer array")


def dialect_fields(text: str) -> dict[str, Any]:
    """`#stablehlo.gather<offset_dims = [2], index_vector_dim = 2>` -> {name: ints or int}."""
    out: dict[str, Any] = {}
    for key, arr, num in re.findall(r"(\w+)\s*=\s*(?:\[([^\]]*)\]|(-?\d+))", text):
        if num:
            out[key] = int(num)
        else:
            out[key] = tuple(int(x) for x in arr.split(",") if x.strip())
    return out


def enum_word(attr: AttrRec | None) -> str | None:
    """`#stablehlo<comparison_direction GT>` -> "GT"."""
    if attr is None:
        return None
    m = re.fullmatch(r"#\w+<\w+\s+(\w+)>", attr.value or "")
    if m is None:
        raise ValueError(f"expected an enum attribute, got {attr.value!r}")
    return m.group(1)
