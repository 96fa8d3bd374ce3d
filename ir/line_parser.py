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

import re
from typing import Any

from shardc.ir.attributes import unescape
from shardc.ir.collector import long_lived
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location, ShardcError
from shardc.ir.line_values import (
    INT,
    STRING,
    STRING_RE,
    TYPE_TEXT,
    WS,
    Text,
    Unsupported,
    ValueReader,
    W,
    dict_end,
)
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import coerce_attributes, get_op_def
from shardc.ir.types import DistributedTensorType

_VALUE = r"%[A-Za-z0-9_$.]+"
_OP_HEAD = re.compile(rf"{W}(?:({_VALUE}(?:{W},{W}{_VALUE})*){W}={W})?([A-Za-z_][\w.]*)")
_OPERANDS = re.compile(rf"{W}({_VALUE}(?:{W},{W}{_VALUE})*)")
_NAME_SPLIT = re.compile(rf"{W},{W}")
_TYPE_FIND = re.compile(TYPE_TEXT)
_CODE = re.compile(rf'(?:[^"/\n]|{STRING}|/(?!/))*')  # up to a comment, strings skipped
_MESH_HEAD = re.compile(rf"{W}mesh{W}(@[A-Za-z_][\w$.]*){W}={W}")
_FUNC_HEAD = re.compile(rf"{W}func(?:{W}(private))?{W}(@[A-Za-z_][\w$.]*){W}\(")
_ARG = re.compile(rf"{W}({_VALUE}){W}:{W}")
# The common op line in one match: names, op name, operands, a dict without nested braces or
# strings, result types; anything else goes the long way (`_Reader._long_op`).
_OP_LINE = re.compile(
    rf"{W}(?:({_VALUE}(?:{W},{W}{_VALUE})*){W}={W})?([A-Za-z_][\w.]*)"
    rf"(?:{W}({_VALUE}(?:{W},{W}{_VALUE})*))?"
    rf'(?:{W}(\{{[^{{}}"]*\}}))?'
    rf"(?:{W}:{W}({TYPE_TEXT}(?:{W},{W}{TYPE_TEXT})*))?{W}$"
)


class _Reader(ValueReader):
    def __init__(self, filename: str):
        super().__init__(Module())
        self.filename = filename
        self.op_attrs: dict[tuple[str, str], dict[str, Any]] = {}

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
                    self._func_end(func, Text(line, line.index("}") + 1))
                    func = None
                else:
                    self._op(line, lineno, func, scope)
            elif stripped.startswith("func"):
                func, scope = self._func_header(line, lineno)
            elif stripped.startswith("mesh"):
                self._mesh(line, lineno)
            elif stripped.startswith("module_attributes"):
                t = Text(line, line.index("module_attributes") + len("module_attributes"))
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
        t = Text(line, m.end())
        t.expect("<")
        t.expect("[")
        axes: list[tuple[str, int]] = []
        if t.peek() != "]":
            while True:
                name = unescape(t.match(STRING_RE))
                t.expect("=")
                axes.append((name, int(t.match(INT))))
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
        t = Text(line, m.end())
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

    def _func_end(self, func: Function, t: Text) -> None:
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
                parsed = self._dict(Text(dict_text))
                attrs = self.op_attrs[key] = coerce_attributes(op_name, parsed)
        types: list[DistributedTensorType] = []
        if types_text:
            cache = self.types
            for text in _TYPE_FIND.findall(types_text):
                ty = cache.get(text)
                types.append(ty if ty is not None else self._type(Text(text)))
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
        pos = WS.match(line, pos).end()  # type: ignore[union-attr]
        attrs: dict[str, Any] = {}
        if line.startswith("{", pos):
            end = dict_end(line, pos)
            key = (op_name, line[pos:end])
            attrs = self.op_attrs.get(key)  # type: ignore[assignment]
            if attrs is None:
                attrs = self.op_attrs[key] = coerce_attributes(
                    op_name, self._dict(Text(line, pos))
                )
            pos = WS.match(line, end).end()  # type: ignore[union-attr]
        types: list[DistributedTensorType] = []
        if line.startswith(":", pos):
            t = Text(line, pos + 1)
            while True:
                types.append(self._type(t))
                if not t.eat(","):
                    break
            pos = t.pos
        t = Text(line, pos)
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

def read_lines(text: str, filename: str) -> Module:
    """The module in `text` (not verified), or `Unsupported` when the grammar must read it."""
    # The module is one large graph of long-lived objects (ir/collector.py).
    with long_lived():
        try:
            return _Reader(filename).read(text)
        except (ShardcError, ValueError, KeyError, IndexError, RecursionError) as e:
            raise Unsupported(str(e)) from None

