"""Native text -> `Module`, one line at a time: the fast path of `parse_module`.

The printer writes one item per line (a mesh, a function header, an op, a closing brace):

    mesh @mesh = <["dp"=2, "tp"=4]>
    func @main(%x: tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>) -> tensor<8x16xf32> {
      %0 = tanh %x : tensor<8x16xf32>
      return %0
    }

`read_lines(text, filename)` reads text of that shape with a few regular expressions per line,
and reads each distinct type and attribute dictionary once (a model's layers repeat the same
few). It builds exactly what the grammar's builder (parser.py) builds, and checks nothing the
grammar would not: on anything else -- an item split over lines, a construct it does not
know, or any error -- it raises `Unsupported`, and `parse_module` parses the whole text with
the grammar, which then reports the error (so errors read as they always did).
"""

from __future__ import annotations

import gc
import re
from typing import Any

from shardc.ir.attributes import (
    DenseElements,
    Keyword,
    OpaqueAttr,
    Symbol,
    flatten_nested,
    unescape,
)
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location, ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import coerce_attributes, get_op_def
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType


class Unsupported(Exception):
    """The text is not in the one-item-per-line shape this reader knows, or is wrong."""


# The grammar's terminals (grammar.lark), as they are matched here.
_W = r"[ \t\f\r]*"
_VALUE = r"%[A-Za-z0-9_$.]+"
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_WS = re.compile(_W)
_OP_HEAD = re.compile(rf"{_W}(?:({_VALUE}(?:{_W},{_W}{_VALUE})*){_W}={_W})?([A-Za-z_][\w.]*)")
_OPERANDS = re.compile(rf"{_W}({_VALUE}(?:{_W},{_W}{_VALUE})*)")
_NAME_SPLIT = re.compile(rf"{_W},{_W}")
_TYPE_TEXT = re.compile(r"tensor<[^<>]*(?:<[^<>]*>)?>")
_TYPE_FIND = _TYPE_TEXT
_SIMPLE_DICT = re.compile(r'\{[^{}"]*\}')
_BRACES = re.compile(rf'{_STRING}|[{{}}]')
_CODE = re.compile(rf'(?:[^"/\n]|{_STRING}|/(?!/))*')  # up to a comment, strings skipped
_LOC = re.compile(rf"loc{_W}\({_W}({_STRING})(?:{_W}:{_W}(-?\d+){_W}:{_W}(-?\d+))?{_W}\)")
_SHAPE = re.compile(r"((?:\d+x)*)(bf16|f16|f32|f64|i1|i8|i16|i32|i64|ui8|ui16|ui32|ui64)(?![\w])")
_SYMBOL = re.compile(r"@[A-Za-z_][\w$.]*")
_STRING_RE = re.compile(_STRING)
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_SPECIAL_FLOAT = re.compile(r"-?inf|nan")
_WORD = re.compile(r"[A-Za-z_][\w]*")
_ATTR_NAME = re.compile(r"[A-Za-z_][\w.$]*")
_PRIORITY = re.compile(r"p\d+")
_RULE = re.compile(r"#sdy\.op_sharding_rule<\([^()]*\)->\([^()]*\)[^<>]*>")
_MESH_HEAD = re.compile(rf"{_W}mesh{_W}(@[A-Za-z_][\w$.]*){_W}={_W}")
_FUNC_HEAD = re.compile(rf"{_W}func(?:{_W}(private))?{_W}(@[A-Za-z_][\w$.]*){_W}\(")
_ARG = re.compile(rf"{_W}({_VALUE}){_W}:{_W}")
_TYPE_T = r"tensor<[^<>]*(?:<[^<>]*>)?>"
# The common op line in one match: names, op name, operands, a dict without nested braces or
# strings, result types; anything else goes the long way (`_Reader._op`).
_OP_LINE = re.compile(
    rf"{_W}(?:({_VALUE}(?:{_W},{_W}{_VALUE})*){_W}={_W})?([A-Za-z_][\w.]*)"
    rf"(?:{_W}({_VALUE}(?:{_W},{_W}{_VALUE})*))?"
    rf'(?:{_W}(\{{[^{{}}"]*\}}))?'
    rf"(?:{_W}:{_W}({_TYPE_T}(?:{_W},{_W}{_TYPE_T})*))?{_W}$"
)


class _Text:
    """A cursor over one piece of text, for the few constructs read token by token."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str, pos: int = 0):
        self.text = text
        self.pos = pos

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

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


class _Reader:
    def __init__(self, filename: str):
        self.filename = filename
        self.module = Module()
        self.types: dict[str, DistributedTensorType] = {}
        self.op_attrs: dict[tuple[str, str], dict[str, Any]] = {}
        self.dicts: dict[str, dict[str, Any]] = {}

    # ----- lines --------------------------------------------------------------------------

    def read(self, text: str) -> Module:
        func: Function | None = None
        scope: dict[str, Value] = {}
        for index, line in enumerate(text.split("\n")):
            if "//" in line:
                end = _CODE.match(line).end()  # type: ignore[union-attr]
                if line.startswith("//", end):
                    line = line[:end]
                elif end != len(line):
                    raise Unsupported("unterminated string")
            stripped = line.strip(" \t\f\r")
            if not stripped:
                continue
            lineno = index + 1
            if func is not None:
                if stripped[0] == "}":
                    self._func_end(func, _Text(line, line.index("}") + 1))
                    func = None
                else:
                    self._op(line, lineno, func, scope)
            elif stripped.startswith("func"):
                func, scope = self._func_header(line, lineno)
            elif stripped.startswith("mesh"):
                self._mesh(line, lineno)
            elif stripped.startswith("module_attributes"):
                t = _Text(line, line.index("module_attributes") + len("module_attributes"))
                self.module.attributes.update(self._dict(t))
                if not t.at_end():
                    raise Unsupported("module_attributes")
            else:
                raise Unsupported(stripped)
        if func is not None:
            raise Unsupported("unclosed function")
        return self.module

    def _mesh(self, line: str, lineno: int) -> None:
        m = _MESH_HEAD.match(line)
        if m is None:
            raise Unsupported("mesh")
        t = _Text(line, m.end())
        t.expect("<")
        t.expect("[")
        axes: list[tuple[str, int]] = []
        if t.peek() != "]":
            while True:
                name = unescape(t.match(_STRING_RE))
                t.expect("=")
                axes.append((name, int(t.match(_INT))))
                if not t.eat(","):
                    break
        t.expect("]")
        ids = None
        if t.eat(","):
            t.expect("device_ids")
            t.expect("=")
            ids = tuple(self._ints(t))
        t.expect(">")
        if t.peek() == "l":
            self._loc(t)
        if not t.at_end():
            raise Unsupported("mesh")
        where = Location(self.filename, lineno, line.index("mesh") + 1)
        self.module.add_mesh(DeviceMesh(m.group(1)[1:], tuple(axes), ids), where)

    def _func_header(self, line: str, lineno: int) -> tuple[Function, dict[str, Value]]:
        m = _FUNC_HEAD.match(line)
        if m is None:
            raise Unsupported("func")
        t = _Text(line, m.end())
        names: list[str] = []
        arg_types: list[DistributedTensorType] = []
        arg_attrs: list[dict[str, Any]] = []
        if t.peek() != ")":
            while True:
                a = _ARG.match(line, t.pos)
                if a is None:
                    raise Unsupported("argument")
                names.append(a.group(1)[1:])
                t.pos = a.end()
                arg_types.append(self._type(t))
                arg_attrs.append(dict(self._plain_dict(t)) if t.peek() == "{" else {})
                if t.peek() == "l":
                    self._loc(t)
                if not t.eat(","):
                    break
        t.expect(")")
        result_types: list[DistributedTensorType] = []
        res_attrs: list[dict[str, Any]] = []
        if t.eat("->"):
            if t.eat("("):
                if t.peek() != ")":
                    while True:
                        result_types.append(self._type(t))
                        res_attrs.append(dict(self._plain_dict(t)) if t.peek() == "{" else {})
                        if not t.eat(","):
                            break
                t.expect(")")
            else:
                result_types.append(self._type(t))
                res_attrs.append({})
        attributes: dict[str, Any] = {}
        if t.peek() == "a":
            t.expect("attributes")
            attributes = dict(self._plain_dict(t))
        t.expect("{")
        if not t.at_end():
            raise Unsupported("ops on the header line")
        name = m.group(2)[1:]
        func = Function(
            name,
            arg_types,
            result_types,
            visibility="private" if m.group(1) else "public",
            loc=Location(self.filename, lineno, line.index("func") + 1),
        )
        func.arg_attrs = arg_attrs
        func.res_attrs = res_attrs
        func.attributes = attributes
        scope: dict[str, Value] = {}
        for arg_name, value in zip(names, func.args):
            if arg_name in scope:
                raise Unsupported("argument declared twice")
            value.name_hint = arg_name
            scope[arg_name] = value
        if self.module.lookup_function(name) is not None:
            raise Unsupported("function defined twice")
        self.module.add_function(func)
        return func, scope

    def _func_end(self, func: Function, t: _Text) -> None:
        if t.peek() == "l":
            func.loc = self._loc(t)
            func.loc_written = True
        if not t.at_end():
            raise Unsupported("}")

    def _op(self, line: str, lineno: int, func: Function, scope: dict[str, Value]) -> None:
        m = _OP_LINE.match(line)
        if m is None:
            return self._long_op(line, lineno, func, scope)
        names_text, op_name, operands_text, dict_text, types_text = m.groups()
        if get_op_def(op_name) is None:
            raise Unsupported("unknown op")
        operands: list[Value] = []
        if operands_text:
            for name in _NAME_SPLIT.split(operands_text):
                v = scope.get(name[1:])
                if v is None:
                    raise Unsupported("undefined value")
                operands.append(v)
        attrs: dict[str, Any] = {}
        if dict_text:
            key = (op_name, dict_text)
            attrs = self.op_attrs.get(key)  # type: ignore[assignment]
            if attrs is None:
                parsed = self._dict(_Text(dict_text))
                attrs = self.op_attrs[key] = coerce_attributes(op_name, parsed)
        types: list[DistributedTensorType] = []
        if types_text:
            cache = self.types
            for text in _TYPE_FIND.findall(types_text):
                ty = cache.get(text)
                types.append(ty if ty is not None else self._type(_Text(text)))
        names = _NAME_SPLIT.split(names_text) if names_text else []
        if len(types) != len(names):
            raise Unsupported("result count")
        op = Operation(
            op_name,
            operands,
            types,
            attrs,
            Location(self.filename, lineno, m.start(1 if names else 2) + 1),
        )
        for name, value in zip(names, op.results):
            text = name[1:]
            if text in scope:
                raise Unsupported("value defined twice")
            value.name_hint = text
            scope[text] = value
        func.body.append(op)
        return None

    def _long_op(self, line: str, lineno: int, func: Function, scope: dict[str, Value]) -> None:
        m = _OP_HEAD.match(line)
        if m is None:
            raise Unsupported("op")
        names_text, op_name = m.group(1), m.group(2)
        if get_op_def(op_name) is None:
            raise Unsupported("unknown op")
        pos = m.end()
        operands: list[Value] = []
        o = _OPERANDS.match(line, pos)
        if o is not None:
            for name in _NAME_SPLIT.split(o.group(1)):
                v = scope.get(name[1:])
                if v is None:
                    raise Unsupported("undefined value")
                operands.append(v)
            pos = o.end()
        pos = _WS.match(line, pos).end()  # type: ignore[union-attr]
        attrs: dict[str, Any] = {}
        if line.startswith("{", pos):
            end = _dict_end(line, pos)
            key = (op_name, line[pos:end])
            attrs = self.op_attrs.get(key)  # type: ignore[assignment]
            if attrs is None:
                attrs = self.op_attrs[key] = coerce_attributes(
                    op_name, self._dict(_Text(line, pos))
                )
            pos = _WS.match(line, end).end()  # type: ignore[union-attr]
        types: list[DistributedTensorType] = []
        if line.startswith(":", pos):
            t = _Text(line, pos + 1)
            while True:
                types.append(self._type(t))
                if not t.eat(","):
                    break
            pos = t.pos
        t = _Text(line, pos)
        loc = self._loc(t) if t.peek() == "l" else None
        if not t.at_end():
            raise Unsupported("op")
        names = _NAME_SPLIT.split(names_text) if names_text else []
        if len(types) != len(names):
            raise Unsupported("result count")
        where = Location(self.filename, lineno, m.start(1 if names else 2) + 1)
        op = Operation(
            op_name,
            operands,
            types,
            attrs,
            loc if loc is not None else where,
            loc_written=loc is not None,
        )
        for name, value in zip(names, op.results):
            text = name[1:]
            if text in scope:
                raise Unsupported("value defined twice")
            value.name_hint = text
            scope[text] = value
        func.body.append(op)

    # ----- types and shardings -------------------------------------------------------------

    def _type(self, t: _Text) -> DistributedTensorType:
        t.ws()
        m = _TYPE_TEXT.match(t.text, t.pos)
        if m is None:
            raise Unsupported("type")
        text = m.group(0)
        t.pos = m.end()
        ty = self.types.get(text)
        if ty is None:
            inner = _Text(text, len("tensor<"))
            s = _SHAPE.match(inner.text, _WS.match(text, inner.pos).end())  # type: ignore[union-attr]
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

    def _mapping(self, t: _Text) -> NamedMapping:
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
            if key in ("replicated", "unreduced"):
                extras[key] = self._axis_set(t)
            elif key == "unreduced_op":
                extras[key] = ReduceOp.parse(t.word())
            elif key == "memory_kind":
                extras[key] = unescape(t.match(_STRING_RE))
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

    def _dim(self, t: _Text) -> DimSharding:
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

    def _axis_ref(self, t: _Text) -> AxisRef:
        name = unescape(t.match(_STRING_RE))
        if t.eat(":"):
            t.expect("(")
            pre = int(t.match(_INT))
            t.expect(")")
            return AxisRef(name, pre, int(t.match(_INT)))
        return AxisRef(name)

    def _axis_set(self, t: _Text) -> tuple[AxisRef, ...]:
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

    def _plain_dict(self, t: _Text) -> dict[str, Any]:
        """An attribute dict of an argument, result or function (not coerced), read once."""
        t.ws()
        end = _dict_end(t.text, t.pos)
        text = t.text[t.pos : end]
        out = self.dicts.get(text)
        if out is None:
            out = self.dicts[text] = self._dict(_Text(text))
        t.pos = end
        return out

    def _dict(self, t: _Text) -> dict[str, Any]:
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

    def _value(self, t: _Text) -> Any:
        c = t.peek()
        if c == '"':
            s = t.match(_STRING_RE)
            if t.eat(":"):
                t.expect("(")
                pre = int(t.match(_INT))
                t.expect(")")
                return AxisRef(unescape(s), pre, int(t.match(_INT)))
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
        if c == "@":
            return Symbol(t.match(_SYMBOL)[1:])
        if c == "#":
            if t.text.startswith("#opaque", t.pos):
                t.pos += len("#opaque")
                t.expect("<")
                text = unescape(t.match(_STRING_RE))
                t.expect(">")
                return OpaqueAttr(text)
            return OpaqueAttr(t.match(_RULE))
        if c == "-" or c.isdigit():
            m = _FLOAT.match(t.text, t.pos)
            if m is not None:
                t.pos = m.end()
                return float(m.group(0))
            return int(t.match(_INT))
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

    def _dense_body(self, t: _Text) -> DenseElements:
        c = t.peek()
        if c == '"':
            return DenseElements((), (), unescape(t.match(_STRING_RE)))
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

    def _dense_list(self, t: _Text) -> list[Any]:
        t.expect("[")
        out: list[Any] = []
        if t.peek() != "]":
            while True:
                out.append(self._dense_list(t) if t.peek() == "[" else self._dense_scalar(t))
                if not t.eat(","):
                    break
        t.expect("]")
        return out

    def _dense_scalar(self, t: _Text) -> Any:
        t.ws()
        text, pos = t.text, t.pos
        for pattern, convert in ((_SPECIAL_FLOAT, float), (_FLOAT, float), (_INT, int)):
            m = pattern.match(text, pos)
            if m is not None:
                t.pos = m.end()
                return convert(m.group(0))
        word = t.word()
        if word in ("true", "false"):
            return word == "true"
        raise Unsupported("dense element")

    # ----- locations and small pieces ------------------------------------------------------

    def _loc(self, t: _Text) -> Location:
        t.ws()
        m = _LOC.match(t.text, t.pos)
        if m is None:
            raise Unsupported("loc")
        t.pos = m.end()
        file = unescape(m.group(1))
        if m.group(2) is None:
            return Location(file, 0, 0)
        return Location(file, int(m.group(2)), int(m.group(3)))

    def _ints(self, t: _Text) -> list[int]:
        t.expect("[")
        out: list[int] = []
        if t.peek() != "]":
            while True:
                out.append(int(t.match(_INT)))
                if not t.eat(","):
                    break
        t.expect("]")
        return out


def _dict_end(text: str, pos: int) -> int:
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


def read_lines(text: str, filename: str) -> Module:
    """The module in `text` (not verified), or `Unsupported` when the grammar must read it."""
    # The module is one large graph of long-lived objects: collections while it is being built
    # would find nothing (the same reason propagate.py gives).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Reader(filename).read(text)
    except (ShardcError, ValueError, KeyError, IndexError, RecursionError) as e:
        raise Unsupported(str(e)) from None
    finally:
        if collecting:
            gc.enable()
