"""StableHLO + sdy MLIR text -> light records, in one LALR pass (grammar.lark).

    aliases, module = read(text, "model.mlir")   # ({"#loc3": "loc(...)"}, ModuleRec)

The parser's callbacks run during its reductions and build `records` directly, with no parse
tree: `_Reader` holds the callbacks of the module's structure (meshes, functions, regions,
types, attributes), and each op family in `ops/` registers those of its ops' pretty forms
(`import_table.read_rule`). Generic op names are checked here, so an op the native IR cannot
represent fails at its name: `file:line:col: error: unsupported op 'stablehlo.while' ...`. Every
syntax error is a located `ParseError` that says what was expected.
"""

from __future__ import annotations

import functools
import re
import threading
from importlib import resources
from typing import Any

import lark
from lark import TextSlice, Token
from lark.lexer import LexerState, LexerThread, LineCounter

import shardc.stablehlo.ops  # noqa: F401  (registers every op family's reader rules)
from shardc.ir.attributes import symbol_name
from shardc.ir.diagnostics import Location, ParseError
from shardc.ir.mesh import AxisRef
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.import_table import (
    GENERIC,
    READ_RULES,
    SyntaxIssue,
    unsupported_message,
)
from shardc.stablehlo.records import (
    ArgRec,
    AttrRec,
    DictRec,
    FuncRec,
    MeshRec,
    ModuleRec,
    OpRec,
    RegionRec,
    ResultsRec,
    first_of,
    generic_rec,
)


class _Unsupported(Exception):
    """Raised from a parser callback: an op name the importer cannot map."""

    def __init__(self, name: str, token: Token):
        super().__init__(name)
        self.name = name
        self.token = token


class _Reader(lark.Transformer):
    """Parser callbacks (run during LALR reductions). Pure: no per-parse state."""

    # ----- module, meshes, functions ---------------------------------------------------------

    def start(self, c):
        aliases = {str(a): str(b) for a, b in (x for x in c if isinstance(x, tuple))}
        module = first_of(c, ModuleRec)
        if module is None:
            module = ModuleRec(None, None, [x for x in c if isinstance(x, (MeshRec, FuncRec))])
        return aliases, module

    def loc_alias(self, c):
        return (c[0], c[1])

    def module(self, c):
        return ModuleRec(c[0], c[1], [x for x in c[2:] if isinstance(x, (MeshRec, FuncRec))])

    def mesh_decl(self, c):
        m = MeshRec()
        m.tok, m.name = c[0], c[1]
        value = c[2]
        m.dialect = value if isinstance(value, Token) else None
        m.axes, m.device_ids = ([], None) if m.dialect is not None else value
        m.attrs = c[3]
        return m

    def mesh_value(self, c):
        axes = [a for a in c if isinstance(a, tuple) and len(a) == 3]
        ids = c[-1] if isinstance(c[-1], list) else None
        return axes, ids

    def mesh_dialect_attr(self, c):
        return c[0]

    def mesh_axis(self, c):
        return (c[0], int(c[1]), c[0])

    def device_ids(self, c):
        return [int(t) for t in c if t is not None]

    def func(self, c):
        f = FuncRec()
        f.tok, f.visibility, f.name = c[0], c[1], c[2]
        f.args = [a for a in c[3:] if isinstance(a, ArgRec)]
        f.results = first_of(c, ResultsRec) or ResultsRec()
        f.attrs = first_of(c, DictRec)
        f.ops = [o for o in c if isinstance(o, OpRec)]
        f.loc = c[-1]
        return f

    def func_arg(self, c):
        return ArgRec(c[0], c[1], c[2], str(c[3]) if c[3] is not None else None)

    def single_result(self, c):
        return ResultsRec([(c[0], None)])

    def func_results(self, c):
        return ResultsRec([r for r in c if r is not None])

    def func_result(self, c):
        return (c[0], c[1])

    # ----- ops -------------------------------------------------------------------------------

    def op(self, c):
        results, rec, loc = c
        if results:
            rec.results = results
        rec.loc = loc
        return rec

    def op_results(self, c):
        return list(c)

    def result_def(self, c):
        return (c[0], int(c[1]) if c[1] is not None else 1)

    def operands(self, c):
        return list(c)

    def int_array(self, c):
        return tuple(int(t) for t in c if isinstance(t, Token) and t.type == "INT")

    def generic_name(self, c):
        tok = c[0]
        name = unescape(str(tok))
        if name not in GENERIC:
            raise _Unsupported(name, tok)
        return (name, tok)

    def generic_op(self, c):
        (name, tok), operands, props, regions, attrs, sig = c
        return generic_rec(name, tok, operands, props, regions, attrs, sig)

    def properties(self, c):
        return self.attr_dict(c)

    def regions(self, c):
        return list(c)

    def region_body(self, c):
        label = c[0]
        return RegionRec(label or [], [o for o in c[1:] if isinstance(o, OpRec)])

    def block_label(self, c):
        return [a for a in c[1:] if a is not None]

    def block_arg(self, c):
        return (c[0], c[1])

    # ----- axis lists (of sdy ops) ------------------------------------------------------------

    def axis_set(self, c):
        return tuple(a for a in c if a is not None)

    def axis_ref(self, c):
        name = unescape(str(c[0]))
        if c[1] is None:
            return AxisRef(name)
        return (name, int(c[1]), int(c[2]), c[0])

    # ----- types -----------------------------------------------------------------------------

    def sig_types(self, c):
        return ("plain", None, list(c))

    def sig_fn(self, c):
        res = c[1]
        return ("fn", c[0] or [], [res] if isinstance(res, Token) else (res or []))

    def sig_arrow(self, c):  # `T -> R`, and chlo's binary ops' `T, T -> R`
        res = c[-1]
        return ("fn", list(c[:-1]), [res] if isinstance(res, Token) else (res or []))

    def type_list(self, c):
        return list(c)

    # ----- attributes ------------------------------------------------------------------------

    def attr_dict(self, c):
        entries: dict[str, AttrRec | None] = {}
        tokens: dict[str, Token] = {}
        for item in c:
            if item is None:
                continue
            key, value, tok = item
            if key in entries:
                raise SyntaxIssue(f"attribute '{key}' is given twice", tok)
            entries[key] = value
            tokens[key] = tok
        return DictRec(entries, tokens)

    def attr_entry(self, c):
        tok = c[0]
        key = unescape(str(tok)) if tok.type == "STRING" else str(tok)
        return (key, c[1], tok)

    def attr_value(self, c):
        c = [x for x in c if x is not None]
        first, last = c[0], c[-1]
        start = first.start_pos if isinstance(first, Token) else first.start
        end = last.end_pos if isinstance(last, Token) else last.end
        if isinstance(first, Token):
            kind = first.type
            if kind == "INT":
                return AttrRec("int", int(first), start, end)
            if kind == "STRING":
                return AttrRec("str", unescape(str(first)), start, end)
            if kind == "BOOL":
                return AttrRec("bool", str(first) == "true", start, end)
            if kind == "SYMBOL":
                return AttrRec("symbol", symbol_name(str(first)), start, end)
            if kind == "LSQB":
                return AttrRec("list", [x for x in c if isinstance(x, AttrRec)], start, end)
            if kind == "LBRACE":
                entries = [(key, value, str(tok)) for key, value, tok in
                           (x for x in c if isinstance(x, tuple))]
                return AttrRec("dict", entries, start, end)
            if kind == "DIALECT_ATTR":
                return AttrRec("dialect", str(first), start, end)
            if kind == "DENSE":
                return AttrRec("dense", (first, c[2] if len(c) > 2 else None), start, end)
            if kind == "ARRAY":
                return AttrRec("array", str(first), start, end)
            return AttrRec(kind.lower(), str(first), start, end)
        return AttrRec("other", None, start, end)


_LOCK = threading.Lock()


def _reader() -> lark.Transformer:
    """`_Reader` with every op family's rules (`import_table.READ_RULES`) as its callbacks."""
    clash = set(READ_RULES) & set(vars(_Reader))
    assert not clash, f"op families redefine the reader's own rules {sorted(clash)}"
    rules = {name: staticmethod(fn) for name, fn in READ_RULES.items()}
    return type("_Reader", (_Reader,), rules)()


# The rules a parse may start at: a whole text, or one item of it (line_reader.py reads the
# rest of the text itself and hands the grammar the items it does not read).
STARTS = ("start", "op", "attr_dict", "mesh_decl")


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("shardc.stablehlo").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=True,
        transformer=_reader(),
        cache=True,
        start=list(STARTS),
    )


def read_item(rule: str, text: str, begin: int, end: int, line: int, line_start: int) -> Any:
    """The record of the `rule` (one of `STARTS`) that `text[begin:end]` spells, its tokens
    located in the whole `text` (`line`: the line number at `begin`, which starts a line at
    `line_start`). Raises lark's exceptions: the caller falls back to `read`, whose errors
    are the located ones."""
    frontend = _parser().parser
    counter = LineCounter("\n")
    counter.char_pos, counter.line, counter.line_start_pos = begin, line, line_start
    counter.column = begin - line_start + 1
    state = LexerState(TextSlice(text, begin, end), counter)
    with _LOCK:
        return frontend.parser.parse(LexerThread(frontend.lexer, state), rule)


# ----- syntax errors --------------------------------------------------------------------------

_OP_NAME_AT = re.compile(r'"?([A-Za-z_][\w]*(?:\.[\w]+)+)"?')


def _word_start(text: str, pos: int) -> int:
    """Where the dotted word ending at `pos` starts."""
    start = pos
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
        start -= 1
    return start


def _word_at(text: str, pos: int) -> str | None:
    m = _OP_NAME_AT.match(text, _word_start(text, pos))
    return m.group(1) if m else None


def _syntax_error(text: str, filename: str, pos: int, line: int, col: int, msg: str):
    name = _word_at(text, pos)
    loc = Location(filename, line, col)
    if name is not None and "." in name and name.split(".")[0] in (
        "stablehlo", "chlo", "sdy", "mhlo", "func", "tensor", "arith", "shape", "math", "scf",
    ):
        col -= pos - _word_start(text, pos)
        return ParseError(unsupported_message(name), Location(filename, line, col), source=text)
    return ParseError(msg, loc, source=text)


_FRIENDLY = {
    "VALUE": "a value like %0", "TENSOR_TYPE": "a type like tensor<8xf32>", "RBRACE": "'}'",
    "LBRACE": "'{'", "RPAR": "')'", "LPAR": "'('", "COMMA": "','", "COLON": "':'",
    "EQUAL": "'='", "RSQB": "']'", "LSQB": "'['", "SYMBOL": "a symbol like @main",
    "STRING": "a string", "INT": "an integer", "SIMPLE_OP": "an op name",
}


def _describe(expected: set[str]) -> str:
    words = sorted({_FRIENDLY.get(e, e.lower().replace("_", " ")) for e in expected
                    if not e.startswith("__")})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def _end_of_input(text: str, filename: str, expected: set[str]) -> ParseError:
    lines = text.splitlines() or [""]
    return ParseError(
        f"unexpected end of input; expected {_describe(set(expected))}",
        Location(filename, len(lines), len(lines[-1]) + 1), source=text,
    )


def read(text: str, filename: str) -> tuple[dict[str, str], ModuleRec]:
    """Parse `text` into (its `#loc` aliases, the module record); errors are located."""
    parser = _parser()
    try:
        with _LOCK:
            return parser.parse(text, start="start")
    except lark.exceptions.UnexpectedCharacters as e:
        raise _syntax_error(
            text, filename, e.pos_in_stream, e.line, e.column,
            f"unexpected character {text[e.pos_in_stream]!r}",
        ) from None
    except lark.exceptions.UnexpectedToken as e:
        if e.token.type == "$END":
            raise _end_of_input(text, filename, e.expected) from None
        raise _syntax_error(
            text, filename, e.token.start_pos or 0, e.line, e.column,
            f"unexpected '{e.token}'; expected {_describe(set(e.expected))}",
        ) from None
    except lark.exceptions.UnexpectedEOF as e:
        raise _end_of_input(text, filename, e.expected) from None
    except (_Unsupported, SyntaxIssue, lark.exceptions.VisitError) as e:
        inner = e.orig_exc if isinstance(e, lark.exceptions.VisitError) else e
        if isinstance(inner, _Unsupported):
            tok = inner.token
            raise ParseError(unsupported_message(inner.name),
                             Location(filename, tok.line, tok.column), source=text) from None
        if isinstance(inner, SyntaxIssue):
            tok = inner.token
            raise ParseError(inner.message, Location(filename, tok.line, tok.column),
                             source=text) from None
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", Location(filename, 1, 1), source=text) from None
