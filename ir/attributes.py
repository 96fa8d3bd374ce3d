"""Typed attribute values that are not plain Python scalars.

An op's attributes are a dict of: `int`, `float`, `bool`, `str`, tuples of those (arrays),
`AxisRef` (inside axis lists), `Symbol` (`@f`), `Keyword` (`GT`, `add`), `DenseElements`
(`dense<...>`), `AllToAllParam` (`{"x"}: 0->1`) and `OpaqueAttr` (imported MLIR attributes
shardc keeps verbatim).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.types import element_bits, numpy_dtype


@dataclass(frozen=True, slots=True)
class Symbol:
    """A reference to a symbol: `@main` (`@"<lambda>"`, quoted, for a name that is not a bare
    identifier, as MLIR writes it)."""

    name: str

    def __str__(self) -> str:
        return symbol_text(self.name)


_BARE_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*")


def symbol_text(name: str) -> str:
    """`@name`, quoted when `name` is not a bare identifier: `@"<lambda>"`."""
    return "@" + name if _BARE_SYMBOL.fullmatch(name) else "@" + format_string(name)


def symbol_name(token: str) -> str:
    """`@name` or `@"<lambda>"` -> the name."""
    return unescape(token[1:]) if token.startswith('@"') else token[1:]


@dataclass(frozen=True, slots=True)
class Keyword:
    """A bare enum-like word: `GT`, `add`, `FORWARD`."""

    word: str

    def __str__(self) -> str:
        return self.word


@dataclass(frozen=True, slots=True)
class AllToAllParam:
    """One move of an all_to_all: `{"x", "y"}: 0->2` moves the minor-most axes `x, y` of dim 0
    to the minor-most end of dim 2."""

    axes: tuple[AxisRef, ...]
    src_dim: int
    tgt_dim: int

    def __post_init__(self) -> None:
        axes = tuple(AxisRef(a) if isinstance(a, str) else a for a in self.axes)
        object.__setattr__(self, "axes", axes)

    def __str__(self) -> str:
        return "{" + ", ".join(str(a) for a in self.axes) + f"}}: {self.src_dim}->{self.tgt_dim}"


@dataclass(frozen=True, slots=True)
class OpaqueAttr:
    """An attribute shardc does not interpret, kept as its MLIR text: `#opaque<"...">`."""

    text: str

    def __str__(self) -> str:
        if RULE_PATTERN.fullmatch(self.text):
            return self.text  # a sharding rule prints in Shardy's own notation
        return f"#opaque<{format_string(self.text)}>"


# Module attribute that keeps a mesh's trailing attribute dict (`{stablehlo.mesh = {...}}`)
# verbatim, keyed by mesh name: `shardc.mesh_attrs.<mesh>`. The StableHLO exporter writes it back.
MESH_ATTRS_PREFIX = "shardc.mesh_attrs."

# `#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>`
RULE_PATTERN = re.compile(r"#sdy\.op_sharding_rule<\([^()]*\)->\([^()]*\)[^<>]*>")


def format_string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def unescape(token: str) -> str:
    """A quoted MLIR string token -> its text (`\\n`, `\\t`, `\\"`, `\\\\`, `\\XX` hex escapes)."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "nt\"\\":
                out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}[nxt])
                i += 2
            elif i + 2 < len(body) and re.match(r"[0-9a-fA-F]{2}", body[i + 1 : i + 3]):
                out.append(chr(int(body[i + 1 : i + 3], 16)))
                i += 3
            else:
                out.append(nxt)
                i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def format_float(x: float) -> str:
    """Shortest text that reads back to the same float64."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    return text


@dataclass(frozen=True, slots=True, eq=False)
class DenseElements:
    """`dense<1.0>` (splat), `dense<[[1, 2], [3, 4]]>`, or `dense<"0x0000803F">` (raw bytes).

    `values` is a flat tuple of Python scalars (bool, int, float or complex: `(1.0,-2.0)`) in
    row-major order; `shape`
    is the nesting written (empty for a splat); `hex` keeps raw little-endian bytes verbatim.
    """

    values: tuple[Any, ...]
    shape: tuple[int, ...] = ()
    hex: str | None = None
    # A splat written as the element's bit pattern, MLIR style: `dense<0xFF800000>` (f32 -inf).
    bits: str | None = None

    @property
    def is_splat(self) -> bool:
        return self.hex is None and not self.shape and (len(self.values) == 1 or bool(self.bits))

    def to_numpy(self, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        np_dtype = numpy_dtype(dtype)
        if self.bits is not None:
            if dtype.startswith(("f", "bf")):
                return np.full(shape, hex_float_bits(self.bits, dtype), dtype=np_dtype)
            return np.full(shape, int(self.bits, 16), dtype=np.uint64).astype(np_dtype)
        if self.hex is not None:
            raw = bytes.fromhex(self.hex[2:])
            arr = np.frombuffer(raw, dtype=np_dtype if dtype != "i1" else np.bool_)
            if arr.size == 1:
                return np.full(shape, arr[0], dtype=np_dtype)
            return arr.reshape(shape).copy()
        values = self.values
        if dtype.startswith("i") and dtype != "i1":
            bits = element_bits(dtype)
            # MLIR's signless integers take [-2^(n-1), 2^n - 1]: the top half is the bit
            # pattern of a negative number (`dense<4294967295> : tensor<i32>` is -1)
            values = tuple(v - (1 << bits) if isinstance(v, int) and v >= 1 << (bits - 1) else v
                           for v in values)
        if self.is_splat:
            return np.full(shape, values[0], dtype=np_dtype)
        return np.array(values, dtype=np_dtype).reshape(shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseElements):
            return NotImplemented
        return (
            self.shape == other.shape
            and self.hex == other.hex
            and self.bits == other.bits
            and len(self.values) == len(other.values)
            and all(_same_scalar(a, b) for a, b in zip(self.values, other.values))
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.hex, len(self.values)))

    def text(self) -> str:
        if self.hex is not None:
            return f'dense<"{self.hex}">'
        if self.bits is not None:
            return f"dense<{self.bits}>"
        if self.is_splat:
            return f"dense<{format_scalar(self.values[0])}>"
        return f"dense<{_nested_text(self.values, self.shape)}>"

    def __str__(self) -> str:
        return self.text()


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, complex) and isinstance(b, complex):
        return _same_scalar(a.real, b.real) and _same_scalar(a.imag, b.imag)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def format_scalar(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, complex):  # MLIR's (real,imag)
        return f"({format_float(x.real)},{format_float(x.imag)})"
    return format_float(x)


def _nested_text(values: tuple[Any, ...], shape: tuple[int, ...]) -> str:
    if not shape:
        return format_scalar(values[0])
    if len(shape) == 1:
        return "[" + ", ".join(format_scalar(v) for v in values) + "]"
    step = len(values) // shape[0] if shape[0] else 0
    parts = [_nested_text(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
    return "[" + ", ".join(parts) + "]"


def flatten_nested(nested: list) -> tuple[tuple[int, ...], list]:
    """`[[1, 2], [3, 4]]` -> `((2, 2), [1, 2, 3, 4])`; ValueError if rows differ in length."""
    if not isinstance(nested, list):
        return (), [nested]
    if not nested:
        return (0,), []
    shapes, flat = set(), []
    for item in nested:
        s, f = flatten_nested(item)
        shapes.add(s)
        flat.extend(f)
    if len(shapes) != 1:
        raise ValueError("dense literal is ragged: every row must have the same length")
    return (len(nested), *shapes.pop()), flat


def dense_from_numpy(array: np.ndarray) -> DenseElements:
    """A `DenseElements` holding `array` (splat when every element is equal)."""
    flat = array.reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return DenseElements((flat[0].item(),))
    if array.dtype.kind == "f":
        values = tuple(float(v) for v in flat)
    elif array.dtype.kind == "c":
        values = tuple(complex(v) for v in flat)
    elif array.dtype.kind == "b":
        values = tuple(bool(v) for v in flat)
    else:
        values = tuple(int(v) for v in flat)
    return DenseElements(values, tuple(array.shape))


def hex_float_bits(text: str, dtype: str) -> float:
    """MLIR writes special floats as raw bits: `0xFF800000` is f32 -inf."""
    bits = int(text, 16)
    if dtype == "f64":
        return struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    if dtype in ("f16",):
        return float(np.frombuffer(bits.to_bytes(2, "little"), dtype=np.float16)[0])
    if dtype == "bf16":
        return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
    return struct.unpack("<f", bits.to_bytes(4, "little"))[0]


def format_attr_value(value: Any) -> str:
    """The native text of an attribute value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if isinstance(
        value, (AxisRef, Symbol, Keyword, OpaqueAttr, DenseElements, NamedMapping, AllToAllParam)
    ):
        return str(value)
    raise TypeError(f"cannot print attribute value {value!r}")
