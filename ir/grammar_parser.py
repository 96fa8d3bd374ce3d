"""Native text -> `Module` by the lark LALR grammar in grammar.lark: what `parse_module`
(parser.py) falls back to when the line reader (line_parser.py) does not take a text.

`parse_with_grammar(text, filename)` builds the module while parsing (no intermediate tree),
resolving value and mesh names as they appear (not verified). Every error is a
`ParseError`/`VerifyError`/`ShardingError` located at `file:line:col`.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import lark
from lark import Token

from shardc.ir.attributes import (
    AllToAllParam,
    DenseElements,
    Keyword,
    OpaqueAttr,
    Symbol,
    flatten_nested,
    symbol_name,
    unescape,
)
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location, ParseError, ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import coerce_attributes, get_op_def
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType

_DIMS = re.compile(r"(\d+x)*")


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("shardc.ir").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=True,
        propagate_positions=True,
    )


def _int(token: Token) -> int:
    return int(str(token))


class _Builder(lark.Transformer):
    """Builds the module bottom-up as the LALR parser reduces rules."""

    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename
        self.module = Module()
        self.func: Function | None = None
        self.scope: dict[str, Value] = {}

    def _call_userfunc(self, tree, new_children=None):
        # Any error raised while building a node without a location of its own points at
        # the start of that node's text.
        try:
            return super()._call_userfunc(tree, new_children)
        except lark.exceptions.VisitError as e:
            inner = e.orig_exc
            if isinstance(inner, ShardcError) and inner.loc is None and not tree.meta.empty:
                inner.loc = Location(self.filename, tree.meta.line, tree.meta.column)
            raise

    def loc_of(self, token: Token) -> Location:
        return Location(self.filename, token.line or 0, token.column or 0)

    # ----- meshes --------------------------------------------------------------------------

    def mesh_axis(self, c):
        return (unescape(c[0]), _int(c[1]), c[0])

    def device_ids(self, c):
        return tuple(_int(t) for t in c if t is not None)

    def mesh_body(self, c):
        axes = [a for a in c[:-1] if a is not None]
        return axes, c[-1]

    def mesh_decl(self, c):
        keyword, sym, (axes, ids), loc = c
        name = str(sym)[1:]
        where = self.loc_of(keyword)
        try:
            mesh = DeviceMesh(name, tuple((a, n) for a, n, _ in axes), ids)
        except ShardcError as e:
            raise e.with_location(where) from None
        self.module.add_mesh(mesh, where)
        return None

    def module_attrs(self, c):
        self.module.attributes.update(c[0][0])
        return None

    # ----- types and shardings ----------------------------------------------------------------

    def axis_ref(self, c):
        name = unescape(c[0])
        if c[1] is None:
            return AxisRef(name)
        return AxisRef(name, _int(c[1]), _int(c[2]))

    def axis_set(self, c):
        return tuple(a for a in c if a is not None)

    def dim_axes(self, c):
        if len(c) == 1 and isinstance(c[0], Token) and c[0].type == "OPEN":
            return ((), False)
        axes = tuple(a for a in c if isinstance(a, AxisRef))
        is_open = c[-1] is not None and isinstance(c[-1], Token)
        return (axes, not is_open)

    def dim(self, c):
        axes, closed = c[0] if c[0] is not None else ((), True)
        prio = int(str(c[1])[1:]) if c[1] is not None else None
        return DimSharding(axes, closed, prio)

    def replicated(self, c):
        return ("replicated", c[0])

    def unreduced(self, c):
        kind, axes = c
        if kind is None:
            return ("unreduced", axes)
        return ("unreduced", axes, self.unreduced_op([kind])[1])

    def inline_mesh(self, c):
        axes, ids = c[1]
        try:
            return DeviceMesh.inline_mesh(tuple((a, n) for a, n, _ in axes), ids)
        except ShardcError as e:
            raise e.with_location(self.loc_of(c[0])) from None

    def unreduced_op(self, c):
        try:
            return ("unreduced_op", ReduceOp.parse(str(c[0])))
        except ValueError:
            raise ParseError(
                f"unknown reduction '{c[0]}' (expected sum, max, min or prod)", self.loc_of(c[0])
            ) from None

    def memory_kind(self, c):
        return ("memory_kind", unescape(c[0]))

    def mapping(self, c):
        sym = c[0]
        if isinstance(sym, DeviceMesh):
            mesh, sym = sym, None  # errors are located at the mapping (`_call_userfunc`)
        else:
            name = str(sym)[1:]
            mesh = self.module.meshes.get(name)
            if mesh is None:
                raise ParseError(
                    f'unknown mesh @{name}; declare it first with `mesh @{name} = <["x"=2]>`',
                    self.loc_of(sym),
                )
        dims = [d for d in c[1:] if isinstance(d, DimSharding)]
        extras = {e[0]: e[1] for e in c[1:] if isinstance(e, tuple)}
        for e in c[1:]:
            if isinstance(e, tuple) and len(e) == 3:
                extras["unreduced_op"] = e[2]
        try:
            return NamedMapping(
                mesh,
                tuple(dims),
                extras.get("replicated", ()),
                extras.get("unreduced", ()),
                extras.get("unreduced_op", ReduceOp.SUM),
                extras.get("memory_kind"),
            )
        except ShardcError as e:
            if sym is None:
                raise
            raise e.with_location(self.loc_of(sym)) from None

    def type(self, c):
        shape_tok, mapping = c
        text = str(shape_tok)
        dims = _DIMS.match(text).group(0)  # the leading `8x16x`; the element type follows
        dtype = text[len(dims):]
        shape = tuple(int(p) for p in dims.split("x")[:-1])
        try:
            return DistributedTensorType(shape, dtype, mapping), shape_tok
        except ShardcError as e:
            raise e.with_location(self.loc_of(shape_tok)) from None

    # ----- attributes -----------------------------------------------------------------------

    def int_value(self, c):
        return _int(c[0])

    def float_value(self, c):
        return float(str(c[0]))

    def string_value(self, c):
        return unescape(c[0])

    def true_value(self, c):
        return True

    def false_value(self, c):
        return False

    def symbol_value(self, c):
        return Symbol(symbol_name(str(c[0])))

    def keyword_value(self, c):
        return Keyword(str(c[0]))

    def array_value(self, c):
        return tuple(v for v in c if v is not None) if c != [None] else ()

    def sub_axis(self, c):
        return AxisRef(unescape(c[0]), _int(c[1]), _int(c[2]))

    def mapping_value(self, c):
        return c[0]

    def a2a_param_value(self, c):
        return AllToAllParam(c[0], _int(c[1]), _int(c[3]))

    def rule_value(self, c):
        return OpaqueAttr(str(c[0]))

    def opaque_value(self, c):
        return OpaqueAttr(unescape(c[0]))

    def dense_scalar(self, c):
        tok = c[0]
        if tok.type == "INT":
            return int(str(tok))
        if tok.type == "HEX":
            return ("hex", str(tok))
        return float(str(tok))

    def dense_part(self, c):
        return float(str(c[0]))

    def dense_complex(self, c):
        return complex(c[0], c[1])

    def dense_true(self, c):
        return True

    def dense_false(self, c):
        return False

    def dense_list(self, c):
        return [v for v in c if v is not None] if c != [None] else []

    def dense_hex(self, c):
        return ("hexstr", unescape(c[0]))

    def dense_value(self, c):
        body = c[0]
        if isinstance(body, tuple) and body[0] == "hexstr":
            return DenseElements((), (), body[1])
        if isinstance(body, list):
            try:
                shape, flat = flatten_nested(body)
            except ValueError as e:
                raise ParseError(str(e)) from None
            if any(isinstance(v, tuple) for v in flat):
                raise ParseError("a hexadecimal element inside a dense list is not supported; "
                                 "write the list's elements in decimal (or the whole literal as "
                                 'a hex string, dense<"0x...">)')
            return DenseElements(tuple(flat), shape)
        if isinstance(body, tuple) and body[0] == "hex":
            # A splat written as raw bits: keep the bits; they decode with the result type.
            return DenseElements((), (), None, body[1])
        return DenseElements((body,))

    def attr_entry(self, c):
        return (str(c[0]), c[1], c[0])

    def attr_dict(self, c):
        entries = [e for e in c if e is not None]
        out: dict[str, Any] = {}
        for key, value, tok in entries:
            if key in out:
                raise ParseError(f"attribute '{key}' is given twice", self.loc_of(tok))
            out[key] = value
        return out, (entries[0][2] if entries else None)

    def loc(self, c):
        file = unescape(c[0])
        if c[1] is None:
            return Location(file, 0, 0)
        return Location(file, _int(c[1]), _int(c[2]))

    # ----- functions and ops ------------------------------------------------------------------

    def arg(self, c):
        name_tok, (ty, _), attrs, loc = c
        return name_tok, ty, (attrs[0] if attrs else {}), loc

    def result_type(self, c):
        (ty, _), attrs = c
        return ty, (attrs[0] if attrs else {})

    def single_result(self, c):
        return c[0][0], {}

    def results(self, c):
        return [r for r in c if r is not None]

    def func_attrs(self, c):
        return c[0][0]

    def func_header(self, c):
        keyword, private, sym, *rest = c
        func_attrs = rest[-1]
        results = rest[-2] if rest[-3] is not None else []
        args = [a for a in rest[:-3] if a is not None]
        name = symbol_name(str(sym))
        func = Function(
            name,
            [ty for _, ty, _, _ in args],
            [ty for ty, _ in results],
            visibility="private" if private is not None else "public",
            loc=self.loc_of(keyword),
        )
        func.arg_attrs = [attrs for _, _, attrs, _ in args]
        func.res_attrs = [attrs for _, attrs in results]
        func.attributes = func_attrs or {}
        self.scope = {}
        for (tok, _, _, _), value in zip(args, func.args):
            name_text = str(tok)[1:]
            if name_text in self.scope:
                raise ParseError(f"argument %{name_text} is declared twice", self.loc_of(tok))
            value.name_hint = name_text
            self.scope[name_text] = value
        if self.module.lookup_function(name) is not None:
            raise ParseError(f"function @{name} is defined twice", self.loc_of(sym))
        self.module.add_function(func)
        self.func = func
        return func

    def value_names(self, c):
        return list(c)

    def operands(self, c):
        return list(c)

    def op(self, c):
        names, name_tok, operand_toks, attrs, *rest = c
        loc = rest[-1]
        type_items = [t for t in rest[:-1] if t is not None]
        op_name = str(name_tok)
        first_tok = names[0] if names else name_tok
        where = self.loc_of(first_tok)
        if get_op_def(op_name) is None:
            raise ParseError(f"unknown op '{op_name}'", self.loc_of(name_tok))
        operands = []
        for tok in operand_toks or []:
            v = self.scope.get(str(tok)[1:])
            if v is None:
                raise ParseError(f"use of undefined value {tok}", self.loc_of(tok))
            operands.append(v)
        names = names or []
        if len(type_items) != len(names):
            raise ParseError(
                f"'{op_name}' defines {len(names)} value{'s' if len(names) != 1 else ''} but "
                f"lists {len(type_items)} result type{'s' if len(type_items) != 1 else ''}",
                where,
            )
        attr_values = attrs[0] if attrs else {}
        try:
            attr_values = coerce_attributes(op_name, attr_values)
        except ShardcError as e:
            raise e.with_location(self.loc_of(attrs[1]) if attrs and attrs[1] else where) from None
        operation = Operation(
            op_name,
            operands,
            [t for t, _ in type_items],
            attr_values,
            loc if loc is not None else where,
            loc_written=loc is not None,
        )
        for tok, value in zip(names, operation.results):
            text = str(tok)[1:]
            if text in self.scope:
                raise ParseError(f"value {tok} is defined twice", self.loc_of(tok))
            value.name_hint = text
            self.scope[text] = value
        assert self.func is not None
        self.func.body.append(operation)
        return None

    def func_def(self, c):
        func = c[0]
        loc = c[-1]
        if loc is not None:
            func.loc = loc
            func.loc_written = True
        self.func = None
        return None

    def start(self, c):
        return self.module


def _describe_expected(expected: set[str]) -> str:
    names = {
        "VALUE": "a value like %0",
        "OP_NAME": "an op name",
        "SYMBOL": "a symbol like @main",
        "SHAPE": "a shape like 8x16xf32",
        "STRING": "a string",
        "INT": "an integer",
        "RBRACE": "'}'",
        "LBRACE": "'{'",
        "RPAR": "')'",
        "LPAR": "'('",
        "COMMA": "','",
        "COLON": "':'",
        "EQUAL": "'='",
        "MORETHAN": "'>'",
        "LESSTHAN": "'<'",
        "RSQB": "']'",
        "LSQB": "'['",
        "ARROW": "'->'",
        "FUNC": "'func'",
        "MESH": "'mesh'",
    }
    shown = sorted(names.get(e, e.lower().replace("_", " ")) for e in expected)
    if len(shown) > 6:
        shown = shown[:6] + ["..."]
    return ", ".join(shown)


def parse_with_grammar(text: str, filename: str) -> Module:
    """The module in `text` by the grammar (not verified); every error is located."""
    builder = _Builder(filename)
    try:
        tree = _parser().parse(text)
        module = builder.transform(tree)
    except lark.exceptions.UnexpectedCharacters as e:
        loc = Location(filename, e.line, e.column)
        raise ParseError(
            f"unexpected character {text[e.pos_in_stream]!r}", loc, source=text
        ) from None
    except lark.exceptions.UnexpectedEOF as e:
        lines = text.splitlines() or [""]
        loc = Location(filename, len(lines), len(lines[-1]) + 1)
        raise ParseError(
            f"unexpected end of input; expected {_describe_expected(set(e.expected))}",
            loc,
            source=text,
        ) from None
    except lark.exceptions.UnexpectedToken as e:
        loc = Location(filename, e.line, e.column)
        if e.token.type == "$END":
            msg = f"unexpected end of input; expected {_describe_expected(set(e.expected))}"
        else:
            msg = f"unexpected '{e.token}'; expected {_describe_expected(set(e.expected))}"
        raise ParseError(msg, loc, source=text) from None
    except lark.exceptions.VisitError as e:
        inner = e.orig_exc
        if isinstance(inner, ShardcError):
            raise inner.with_location(None, text) from None
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", Location(filename, 1, 1), source=text) from None
    except ShardcError as e:
        raise e.with_location(None, text) from None
    return module
