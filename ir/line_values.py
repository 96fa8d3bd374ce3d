"""Native text pieces read token by token: types, shardings, attribute values, locations.

The line reader (line_parser.py) matches the common op line with one regular expression and
hands the pieces inside it (a type, an attribute dictionary, a `loc(...)`) to `ValueReader`,
which reads each the way the grammar (grammar.lark, parser.py) reads it and caches what repeats
(a model's layers share a few types and dictionaries). Anything it does not know raises
`Unsupported`, and the caller falls back to the grammar.
"""

from __future__ import annotations

import re
from typing import Any

from shardc.ir.attributes import (
    AllToAllParam,
    DenseElements,
    Keyword,
    OpaqueAttr,
    Symbol,
    flatten_nested,
    unescape,
)
from shardc.ir.core import Module
from shardc.ir.diagnostics import Location
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType


class Unsupported(Exception):
    """The text is not in the one-item-per-line shape this reader knows, or is wrong."""


# The grammar's terminals (grammar.lark), as they are matched here; `W`, `STRING`, `WS`, `INT`
# and `STRING_RE` are the line reader's too.
W = r"[ \t\f\r]*"
STRING = r'"(?:[^"\\\n]|\\.)*"'
WS = re.compile(W)
TYPE_TEXT = r"tensor<[^<>]*(?:<[^<>]*>)?>"
_TYPE = re.compile(TYPE_TEXT)
_SIMPLE_DICT = re.compile(r'\{[^{}"]*\}')
_BRACES = re.compile(rf'{STRING}|[{{}}]')
_LOC = re.compile(rf"loc{W}\({W}({STRING})(?:{W}:{W}(-?\d+){W}:{W}(-?\d+))?{W}\)")
_SHAPE = re.compile(
    r"((?:\d+x)*)(bf16|f16|f32|f64|i1|i8|i16|i32|i64|ui8|ui16|ui32|ui64|complex<f32>|complex<f64>"
    r"|token)(?![\w])"
)
_SYMBOL = re.compile(r"@[A-Za-z_][\w$.]*")
STRING_RE = re.compile(STRING)
INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_SPECIAL_FLOAT = re.compile(r"-?inf|nan")
_WORD = re.compile(r"[A-Za-z_][\w]*")
_ATTR_NAME = re.compile(r"[A-Za-z_][\w.$]*")
_PRIORITY = re.compile(r"p\d+")
_RULE = re.compile(r"#sdy\.op_sharding_rule<\([^()]*\)->\([^()]*\)[^<>]*>")


class Text:
    """A cursor over one piece of text, for the few constructs read token by token."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str, pos: int = 0):
        self.text = text
        self.pos = pos

    def ws(self) -> None:
        self.pos = WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def peek(self) -> str:
        self.ws()
        return self.text[self.pos : self.pos + 1]

    def eat(self, s: str) -> bool:
        self.ws()
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.eat(s):
            raise Unsupported(s)

    def match(self, pattern: re.Pattern[str]) -> str:
        self.ws()
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise Unsupported(pattern.pattern)
        self.pos = m.end()
        return m.group(0)

    def word(self) -> str:
        return self.match(_WORD)

    def at_end(self) -> bool:
        self.ws()
        return self.pos == len(self.text)


class ValueReader:
    """Reads the pieces of one module's text; types and dictionaries are read once."""

    def __init__(self, module: Module):
        self.module = module
        self.types: dict[str, DistributedTensorType] = {}
        self.dicts: dict[str, dict[str, Any]] = {}

    # ----- types and shardings -------------------------------------------------------------

    def _type(self, t: Text) -> DistributedTensorType:
        t.ws()
        m = _TYPE.match(t.text, t.pos)
        if m is None:
            raise Unsupported("type")
        text = m.group(0)
        t.pos = m.end()
        ty = self.types.get(text)
        if ty is None:
            inner = Text(text, len("tensor<"))
            s = _SHAPE.match(inner.text, WS.match(text, inner.pos).end())  # type: ignore[union-attr]
            if s is None:
                raise Unsupported("shape")
            inner.pos = s.end()
            shape = tuple(int(p) for p in s.group(1).split("x")[:-1])
            mapping = self._mapping(inner) if inner.eat(",") else None
            inner.expect(">")
            if not inner.at_end():
                raise Unsupported("type")
            ty = self.types[text] = DistributedTensorType(shape, s.group(2), mapping)
        return ty

    def _mapping(self, t: Text) -> NamedMapping:
        t.expect("<")
        mesh = self.module.meshes.get(t.match(_SYMBOL)[1:])
        if mesh is None:
            raise Unsupported("unknown mesh")
        t.expect(",")
        t.expect("[")
        dims: list[DimSharding] = []
        if t.peek() != "]":
            while True:
                dims.append(self._dim(t))
                if not t.eat(","):
                    break
        t.expect("]")
        extras: dict[str, Any] = {}
        while t.eat(","):
            key = t.word()
            t.expect("=")
            if key == "unreduced" and t.peek() != "{":  # `unreduced=max{"x"}`
                extras["unreduced_op"] = self._reduce_op(t.word())
                extras[key] = self._axis_set(t)
            elif key in ("replicated", "unreduced"):
                extras[key] = self._axis_set(t)
            elif key == "unreduced_op":
                extras[key] = self._reduce_op(t.word())
            elif key == "memory_kind":
                extras[key] = unescape(t.match(STRING_RE))
            else:
                raise Unsupported(key)
        t.expect(">")
        return NamedMapping(
            mesh,
            tuple(dims),
            extras.get("replicated", ()),
            extras.get("unreduced", ()),
            extras.get("unreduced_op", ReduceOp.SUM),
            extras.get("memory_kind"),
        )

    @staticmethod
    def _reduce_op(word: str) -> ReduceOp:
        try:
            return ReduceOp.parse(word)
        except ValueError:
            raise Unsupported("reduction kind") from None  # the grammar reports it

    def _dim(self, t: Text) -> DimSharding:
        t.expect("{")
        axes: list[AxisRef] = []
        closed = True
        if t.eat("?"):
            closed = False
        elif t.peek() != "}":
            while True:
                axes.append(self._axis_ref(t))
                if not t.eat(","):
                    break
                if t.eat("?"):
                    closed = False
                    break
        t.expect("}")
        prio = None
        if t.text.startswith("p", t.pos):  # no space before a priority (one token in lark)
            prio = int(t.match(_PRIORITY)[1:])
        return DimSharding(tuple(axes), closed, prio)

    def _axis_ref(self, t: Text) -> AxisRef:
        name = unescape(t.match(STRING_RE))
        if t.eat(":"):
            t.expect("(")
            pre = int(t.match(INT))
            t.expect(")")
            return AxisRef(name, pre, int(t.match(INT)))
        return AxisRef(name)

    def _axis_set(self, t: Text) -> tuple[AxisRef, ...]:
        t.expect("{")
        out: list[AxisRef] = []
        if t.peek() != "}":
            while True:
                out.append(self._axis_ref(t))
                if not t.eat(","):
                    break
        t.expect("}")
        return tuple(out)

    # ----- attributes ----------------------------------------------------------------------

    def _plain_dict(self, t: Text) -> dict[str, Any]:
        """An attribute dict of an argument, result or function (not coerced), read once."""
        t.ws()
        end = dict_end(t.text, t.pos)
        text = t.text[t.pos : end]
        out = self.dicts.get(text)
        if out is None:
            out = self.dicts[text] = self._dict(Text(text))
        t.pos = end
        return out

    def _dict(self, t: Text) -> dict[str, Any]:
        t.expect("{")
        out: dict[str, Any] = {}
        if t.peek() != "}":
            while True:
                key = t.match(_ATTR_NAME)
                t.expect("=")
                if key in out:
                    raise Unsupported("attribute given twice")
                out[key] = self._value(t)
                if not t.eat(","):
                    break
        t.expect("}")
        return out

    def _value(self, t: Text) -> Any:
        c = t.peek()
        if c == '"':
            s = t.match(STRING_RE)
            if t.eat(":"):
                t.expect("(")
                pre = int(t.match(INT))
                t.expect(")")
                return AxisRef(unescape(s), pre, int(t.match(INT)))
            return unescape(s)
        if c == "[":
            t.pos += 1
            items: list[Any] = []
            if t.peek() != "]":
                while True:
                    items.append(self._value(t))
                    if not t.eat(","):
                        break
            t.expect("]")
            return tuple(items)
        if c == "<":
            return self._mapping(t)
        if c == "{":  # an all_to_all move: `{"x"}: 0->1`
            axes = self._axis_set(t)
            t.expect(":")
            src = int(t.match(INT))
            t.expect("->")
            return AllToAllParam(axes, src, int(t.match(INT)))
        if c == "@":
            return Symbol(t.match(_SYMBOL)[1:])
        if c == "#":
            if t.text.startswith("#opaque", t.pos):
                t.pos += len("#opaque")
                t.expect("<")
                text = unescape(t.match(STRING_RE))
                t.expect(">")
                return OpaqueAttr(text)
            return OpaqueAttr(t.match(_RULE))
        if c == "-" or c.isdigit():
            m = _FLOAT.match(t.text, t.pos)
            if m is not None:
                t.pos = m.end()
                return float(m.group(0))
            return int(t.match(INT))
        word = t.word()
        if word == "true":
            return True
        if word == "false":
            return False
        if word == "dense":
            t.expect("<")
            body = self._dense_body(t)
            t.expect(">")
            return body
        return Keyword(word)

    def _dense_body(self, t: Text) -> DenseElements:
        c = t.peek()
        if c == '"':
            return DenseElements((), (), unescape(t.match(STRING_RE)))
        if c == "[":
            try:
                shape, flat = flatten_nested(self._dense_list(t))
            except ValueError:
                raise Unsupported("ragged dense") from None
            return DenseElements(tuple(flat), shape)
        m = _HEX.match(t.text, t.pos)
        if m is not None:
            t.pos = m.end()
            return DenseElements((), (), None, m.group(0))
        return DenseElements((self._dense_scalar(t),))

    def _dense_list(self, t: Text) -> list[Any]:
        t.expect("[")
        out: list[Any] = []
        if t.peek() != "]":
            while True:
                out.append(self._dense_list(t) if t.peek() == "[" else self._dense_scalar(t))
                if not t.eat(","):
                    break
        t.expect("]")
        return out

    def _dense_scalar(self, t: Text) -> Any:
        t.ws()
        if t.peek() == "(":  # a complex element, (real,imag)
            t.expect("(")
            real = self._dense_scalar(t)
            t.expect(",")
            imag = self._dense_scalar(t)
            t.expect(")")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in (real, imag)):
                raise Unsupported("complex dense element")
            return complex(real, imag)
        text, pos = t.text, t.pos
        for pattern, convert in ((_SPECIAL_FLOAT, float), (_FLOAT, float), (INT, int)):
            m = pattern.match(text, pos)
            if m is not None:
                t.pos = m.end()
                return convert(m.group(0))
        word = t.word()
        if word in ("true", "false"):
            return word == "true"
        raise Unsupported("dense element")

    # ----- locations and small pieces ------------------------------------------------------

    def _loc(self, t: Text) -> Location:
        t.ws()
        m = _LOC.match(t.text, t.pos)
        if m is None:
            raise Unsupported("loc")
        t.pos = m.end()
        file = unescape(m.group(1))
        if m.group(2) is None:
            return Location(file, 0, 0)
        return Location(file, int(m.group(2)), int(m.group(3)))

    def _ints(self, t: Text) -> list[int]:
        t.expect("[")
        out: list[int] = []
        if t.peek() != "]":
            while True:
                out.append(int(t.match(INT)))
                if not t.eat(","):
                    break
        t.expect("]")
        return out



def dict_end(text: str, pos: int) -> int:
    """The end of the `{...}` starting at `pos` (nested braces and strings skipped)."""
    m = _SIMPLE_DICT.match(text, pos)
    if m is not None:
        return m.end()
    depth = 0
    for tok in _BRACES.finditer(text, pos):
        c = tok.group(0)
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return tok.end()
    raise Unsupported("unclosed {")
