"""StableHLO + sdy MLIR text -> light records, in one LALR pass (grammar.lark).

    aliases, module = read(text, "model.mlir")   # ({"#loc3": "loc(...)"}, ModuleRec)

The `_Reader` callbacks run during the parser's reductions and build `records` directly, with no
parse tree. Op names are checked here, so an op the native IR cannot represent fails at its name:
`file:line:col: error: unsupported op 'stablehlo.while' ...`. Every syntax error is a located
`ParseError` that says what was expected.
"""

from __future__ import annotations

import functools
import re
import threading
from importlib import resources
from typing import Any

import lark
from lark import Token

from shardc.ir.diagnostics import Location, ParseError
from shardc.ir.mesh import AxisRef
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.ops import GENERIC_NOT_SUPPORTED, SUPPORTED_OPS, unsupported_message
from shardc.stablehlo.records import (
    ArgRec,
    AttrRec,
    DictRec,
    FuncRec,
    MeshRec,
    ModuleRec,
    OpRec,
    PairRec,
    RegionRec,
    ResultsRec,
)


class _Unsupported(Exception):
    """Raised from a parser callback: an op name the importer cannot map."""

    def __init__(self, name: str, token: Token):
        super().__init__(name)
        self.name = name
        self.token = token


class _SyntaxIssue(Exception):
    """Raised from a parser callback: a malformed construct at `token`."""

    def __init__(self, message: str, token: Token):
        super().__init__(message)
        self.message = message
        self.token = token



def _ints(c: list) -> tuple[int, ...]:
    return tuple(int(t) for t in c if isinstance(t, Token) and t.type == "INT")


def _values(c: list) -> list[Token]:
    return [t for t in c if isinstance(t, Token) and t.type == "VALUE"]


def _pick(c: list, cls: type) -> Any:
    for x in c:
        if isinstance(x, cls):
            return x
    return None



class _Reader(lark.Transformer):
    """Parser callbacks (run during LALR reductions). Pure: no per-parse state."""

    # ----- module, meshes, functions ---------------------------------------------------------

    def start(self, c):
        aliases = {str(a): str(b) for a, b in (x for x in c if isinstance(x, tuple))}
        module = _pick(c, ModuleRec)
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
        f.results = _pick(c, ResultsRec) or ResultsRec()
        f.attrs = _pick(c, DictRec)
        f.ops = [o for o in c if isinstance(o, OpRec)]
        f.loc = c[-1]
        return f

    def func_arg(self, c):
        return ArgRec(c[0], c[1], c[2])

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
        return _ints(c)

    def simple_op(self, c):
        return OpRec("simple", c[0], c[1] or [], {}, c[2], c[3])

    def constant_op(self, c):
        attrs = c[1] if c[1] is not None else c[3]
        if c[1] is not None and c[3] is not None:
            raise _SyntaxIssue("constant has two attribute dictionaries", c[0])
        return OpRec("constant", c[0], [], {"dense": c[2]}, attrs, ("plain", None, [c[4]]))

    def iota_op(self, c):
        return OpRec("iota", c[0], [], {"dim": int(c[1])}, c[2], c[3])

    def dims_op(self, c):
        return OpRec("dims", c[0], [c[1]], {"dims": c[2]}, c[3], c[4])

    def concat_op(self, c):
        dim = [t for t in c if isinstance(t, Token) and t.type == "INT"][0]
        return OpRec("concatenate", c[0], _values(c), {"dim": int(dim)}, c[-2], c[-1])

    def dot_batching(self, c):
        return ("batching", c[0], c[1])

    def dot_precision(self, c):
        return ("precision", tuple(str(t) for t in c if t is not None))

    def dot_op(self, c):
        extra: dict[str, Any] = {"batching": ((), ()), "contracting": (c[4], c[5])}
        if c[3] is not None:
            extra["batching"] = (c[3][1], c[3][2])
        if c[6] is not None:
            extra["precision"] = c[6][1]
        return OpRec("dot_general", c[0], [c[1], c[2]], extra, c[7], c[8])

    def reduce_input(self, c):
        return PairRec(c[0], c[1])

    def reducer_args(self, c):
        return (c[0], c[1])

    def reducer(self, c):
        # `reducer(%acc0, %x0) (%acc1, %x1) {...}` prints pairs; the block's arguments are
        # (acc0, acc1, ..., x0, x1, ...).
        region = c[-1]
        pairs = c[:-1]
        region.args = [p[0] for p in pairs] + [p[1] for p in pairs]
        return region

    def reduce_op(self, c):
        inputs = [x for x in c if isinstance(x, PairRec)]
        applies = c[len(inputs) + 1]
        dims, attrs, sig, region = c[len(inputs) + 2:]
        operands = [p.first for p in inputs] + [p.second for p in inputs]
        rec = OpRec("reduce", c[0], operands, {"dims": dims, "applies": applies,
                                              "num_inputs": len(inputs)}, attrs, sig)
        if region is not None:
            rec.regions = [region]
        return rec

    def compare_op(self, c):
        extra = {"direction": c[1], "type": c[4]}
        return OpRec("compare", c[0], [c[2], c[3]], extra, c[5], c[6])

    def slice_range(self, c):
        return [int(c[0]), int(c[1]), int(c[2]) if c[2] is not None else 1]

    def slice_op(self, c):
        ranges = [r for r in c if isinstance(r, list)]
        return OpRec("slice", c[0], [c[1]], {"ranges": ranges}, c[-2], c[-1])

    def pad_op(self, c):
        extra = {"low": c[3], "high": c[4], "interior": c[5]}
        return OpRec("pad", c[0], [c[1], c[2]], extra, c[6], c[7])

    def call_op(self, c):
        return OpRec("call", c[0], c[2] or [], {"callee": c[1]}, c[3], c[4])

    def return_op(self, c):
        sig = ("plain", None, c[3]) if c[3] is not None else None
        return OpRec("return", c[0], c[1] or [], {}, c[2], sig)

    def generic_name(self, c):
        tok = c[0]
        name = unescape(str(tok))
        if name not in SUPPORTED_OPS or name in GENERIC_NOT_SUPPORTED:
            raise _Unsupported(name, tok)
        return (name, tok)

    def generic_op(self, c):
        (name, tok), operands, props, regions, attrs, sig = c
        rec = OpRec("generic", tok, operands or [], {"props": props}, attrs, sig, name=name)
        rec.regions = regions or []
        return rec

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

    # ----- ops with regions ------------------------------------------------------------------

    def while_arg(self, c):
        return (c[0], c[1])

    def while_op(self, c):
        pairs = [x for x in c if isinstance(x, tuple)]
        types, attrs, cond, body = c[-4:]
        if types is not None and len(types) != len(pairs):
            raise _SyntaxIssue(f"while lists {len(types)} types for {len(pairs)} operands", c[0])
        types = types or []
        for region in (cond, body):
            if region.args:
                raise _SyntaxIssue("the pretty while names its block arguments in '(...)'",
                                   c[0])
            region.args = [(name, ty) for (name, _), ty in zip(pairs, types)]
        rec = OpRec("while", c[0], [v for _, v in pairs], {}, attrs, ("plain", None, types))
        rec.regions = [cond, body]
        return rec

    def sharding_list(self, c):
        return [t for t in c if t is not None]

    def manual_op(self, c):
        tok, operands, in_sh, out_sh, axes = c[:5]
        body, attrs, sig = c[-3:]
        if body.args:
            raise _SyntaxIssue("the body's arguments are listed before its '{'", tok)
        body.args = [a for a in c[5:-3] if a is not None]
        extra = {"in": in_sh, "out": out_sh, "axes": axes}
        rec = OpRec("manual", tok, operands or [], extra, attrs, sig)
        rec.regions = [body]
        return rec
    # ----- ops without regions that only some programs use (ops_extra.py converts them) -------

    def dynamic_slice_op(self, c):
        sizes = _pick(c, tuple)
        return OpRec("dynamic_slice", c[0], _values(c), {"sizes": sizes}, c[-2], c[-1])

    def conv_op(self, c):
        extra = {"dims": c[3], "window": c[4] or []}
        return OpRec("convolution", c[0], [c[1], c[2]], extra, c[5], c[6])

    def conv_dims(self, c):
        return tuple(c)

    def conv_layout(self, c):
        return tuple(x for x in c if x is not None)

    def conv_dim(self, c):
        tok = c[0]
        return int(tok) if tok.type == "INT" else str(tok)

    def conv_window(self, c):
        return [x for x in c if x is not None]

    def window_entry(self, c):
        return (str(c[0]), c[1], c[0])

    def window_value(self, c):
        return c[0]

    def window_pairs(self, c):
        return tuple(c)

    def window_bools(self, c):
        return tuple(str(t) == "true" for t in c)

    def custom_call_op(self, c):
        return OpRec("custom_call", c[0], c[2] or [], {"target": c[1]}, c[3], c[4])

    def composite_op(self, c):
        return OpRec("composite", c[0], c[2] or [], {"name": c[1]}, c[3], c[4])

    def top_k_op(self, c):
        return OpRec("top_k", c[0], [c[1]], {"k": int(c[2])}, c[3], c[4])

    # ----- sdy ops ---------------------------------------------------------------------------

    def sdy_sharding_op(self, c):
        return OpRec("sdy_sharding", c[0], [c[1]], {"sharding": c[2]}, c[3],
                     ("plain", None, [c[4]]))

    def sdy_group_op(self, c):
        return OpRec("sdy_group", c[0], [c[1]], {"group_id": int(c[2])}, c[3], None)

    def sdy_barrier_op(self, c):
        return OpRec("sdy_barrier", c[0], [c[1]], {"direction": c[2]}, c[3],
                     ("plain", None, [c[4]]))

    def sdy_dims_collective(self, c):
        per_dim = [x for x in c if isinstance(x, tuple)]
        value, sharding, attrs, ty = c[-4:]
        return OpRec("sdy_collective", c[0], [value], {"per_dim": per_dim, "sharding": sharding},
                     attrs, ("plain", None, [ty]))

    def sdy_all_to_all(self, c):
        params = [x for x in c if isinstance(x, list)]
        value, sharding, attrs, ty = c[-4:]
        return OpRec("sdy_collective", c[0], [value], {"params": params, "sharding": sharding},
                     attrs, ("plain", None, [ty]))

    def a2a_param(self, c):
        return [c[0], int(c[1]), int(c[2])]

    def sdy_all_reduce(self, c):
        return OpRec("sdy_collective", c[0], [c[2]], {"axes": c[1], "sharding": c[3]}, c[4],
                     ("plain", None, [c[5]]))

    def sdy_permute(self, c):
        return OpRec("sdy_collective", c[0], [c[1]], {"sharding": c[2]}, c[3],
                     ("plain", None, [c[4]]))

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

    def sig_arrow(self, c):
        res = c[1]
        return ("fn", [c[0]], [res] if isinstance(res, Token) else (res or []))

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
                raise _SyntaxIssue(f"attribute '{key}' is given twice", tok)
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
                return AttrRec("symbol", str(first)[1:], start, end)
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


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("shardc.stablehlo").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=True,
        transformer=_Reader(),
        cache=True,
    )


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
            return parser.parse(text)
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
    except (_Unsupported, _SyntaxIssue, lark.exceptions.VisitError) as e:
        inner = e.orig_exc if isinstance(e, lark.exceptions.VisitError) else e
        if isinstance(inner, _Unsupported):
            tok = inner.token
            raise ParseError(unsupported_message(inner.name),
                             Location(filename, tok.line, tok.column), source=text) from None
        if isinstance(inner, _SyntaxIssue):
            tok = inner.token
            raise ParseError(inner.message, Location(filename, tok.line, tok.column),
                             source=text) from None
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", Location(filename, 1, 1), source=text) from None
