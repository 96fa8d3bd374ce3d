"""StableHLO + Shardy (sdy) MLIR text -> `ir.core.Module`.

    module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
      sdy.mesh @mesh = <["dp"=2, "tp"=4]>
      func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, ...>})
          -> tensor<16x32xf32> {
        %0 = stablehlo.tanh %arg0 : tensor<16x32xf32>
        return %0 : tensor<16x32xf32>
      }
    }

`import_stablehlo(text, filename)` parses with the LALR grammar in grammar.lark (its callbacks
build light records while parsing, no tree), then builds the module and verifies it. Shardings
(`sdy.sharding`, `#sdy.sharding_per_value`, the inline sharding of sdy ops) become the values'
`DistributedTensorType` mappings; attributes shardc does not interpret are kept verbatim as
`OpaqueAttr` so the exporter writes them back. Every error is a located `ShardcError`; an op the
native IR cannot represent is `file:line:col: error: unsupported op 'stablehlo.while' ...`.
What imports and what is normalised: docs/interop.md.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from importlib import resources
from typing import Any

import lark
from lark import Token

from ir.attributes import DenseElements, Keyword, OpaqueAttr, Symbol, hex_float_bits
from ir.core import Function, Module, Operation, Value
from ir.diagnostics import Location, ParseError, ShardcError
from ir.mapping import DimSharding, NamedMapping
from ir.mesh import AxisRef, DeviceMesh
from ir.types import DTYPES, DistributedTensorType

MAX_INPUT_BYTES = 256 * 1024 * 1024

# Module attribute that keeps a mesh's trailing attribute dict (`{stablehlo.mesh = {...}}`)
# verbatim, keyed by mesh name: `shardc.mesh_attrs.<mesh>`. The exporter writes it back.
MESH_ATTRS_PREFIX = "shardc.mesh_attrs."
# Marks a native `constant` that was spelled `sdy.constant` (Shardy's unfoldable constant).
SDY_CONSTANT_MARKER = "sdy.constant"

UNARY = {
    "abs", "cbrt", "ceil", "convert", "cosine", "exponential", "exponential_minus_one", "floor",
    "is_finite", "log", "log_plus_one", "logistic", "negate", "not", "reshape",
    "round_nearest_afz", "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh",
}
BINARY = {
    "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "subtract", "xor",
}
CHLO = {"erf", "square", "tan"}
REDUCER_KINDS = {"add", "maximum", "minimum", "multiply", "and", "or"}

# Op names the importer maps to a native op (pretty and generic forms).
SUPPORTED_OPS: frozenset[str] = frozenset(
    {f"stablehlo.{n}" for n in UNARY | BINARY | {"select", "clamp"}}
    | {f"chlo.{n}" for n in CHLO}
    | {f"stablehlo.{n}" for n in (
        "constant", "iota", "broadcast_in_dim", "transpose", "reverse", "concatenate",
        "dot_general", "reduce", "compare", "slice", "pad", "gather", "scatter", "return",
    )}
    | {"func.call", "call", "func.return", "return", "sdy.return", "sdy.constant", "sdy.mesh",
       "sdy.sharding_constraint", "sdy.reshard", "sdy.sharding_group", "sdy.propagation_barrier",
       "sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute",
       "sdy.all_reduce", "sdy.reduce_scatter", "func.func"}
)
# Generic-form spellings accepted in addition to the pretty ones.
_GENERIC_NOT_SUPPORTED = {"sdy.all_gather", "sdy.all_slice", "sdy.all_to_all",
                          "sdy.collective_permute", "sdy.all_reduce", "sdy.reduce_scatter",
                          "sdy.sharding_group", "sdy.propagation_barrier", "sdy.mesh",
                          "func.func", "sdy.return"}

_WHY_UNSUPPORTED = {
    "stablehlo.while": "loops (lax.scan, lax.fori_loop, lax.while_loop) have regions",
    "stablehlo.case": "conditionals (lax.cond, lax.switch) have regions",
    "stablehlo.if": "conditionals have regions",
    "sdy.manual_computation": "shard_map regions are not representable",
    "sdy.named_computation": "named computations have regions",
}


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


def unsupported_message(name: str) -> str:
    why = _WHY_UNSUPPORTED.get(name, "shardc's IR has no equivalent")
    return (
        f"unsupported op '{name}': {why}; see docs/interop.md for the ops that import "
        "(rewrite or remove it before importing)"
    )


# ----- parse records --------------------------------------------------------------------------


class _Attr:
    """A parsed attribute value: its kind, a decoded value and its source span."""

    __slots__ = ("kind", "value", "start", "end")

    def __init__(self, kind: str, value: Any, start: int, end: int):
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end


class _Dict:
    """A parsed `{key = value, ...}`: values are `_Attr` (None for a unit attribute)."""

    __slots__ = ("entries", "tokens")

    def __init__(self, entries: dict[str, _Attr | None], tokens: dict[str, Token]):
        self.entries = entries
        self.tokens = tokens


class _Region:
    __slots__ = ("args", "ops")

    def __init__(self, args: list[tuple[Token, Token]], ops: list[_Op]):
        self.args = args
        self.ops = ops


class _Op:
    __slots__ = ("form", "name", "tok", "results", "operands", "extra", "attrs", "sig",
                 "regions", "loc")

    def __init__(self, form: str, tok: Token, operands: list[Token], extra: dict[str, Any],
                 attrs: _Dict | None, sig: tuple | None, name: str | None = None):
        self.form = form
        self.name = name if name is not None else str(tok)
        self.tok = tok
        self.results: list[tuple[Token, int]] = []
        self.operands = operands
        self.extra = extra
        self.attrs = attrs
        self.sig = sig
        self.regions: list[_Region] = []
        self.loc: Token | None = None


class _Pair:
    __slots__ = ("first", "second")

    def __init__(self, first: Any, second: Any):
        self.first = first
        self.second = second


class _Arg:
    __slots__ = ("tok", "type", "attrs")

    def __init__(self, tok: Token, type_tok: Token, attrs: _Dict | None):
        self.tok = tok
        self.type = type_tok
        self.attrs = attrs


class _Results(list):
    """Function results: `(type token, attrs)` pairs."""


class _Func:
    __slots__ = ("tok", "visibility", "name", "args", "results", "attrs", "ops", "loc")


class _Mesh:
    __slots__ = ("tok", "name", "axes", "device_ids", "dialect", "attrs")


class _ModuleRec:
    __slots__ = ("name", "attrs", "items")

    def __init__(self, name: Token | None, attrs: _Dict | None, items: list):
        self.name = name
        self.attrs = attrs
        self.items = items


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
        module = _pick(c, _ModuleRec)
        if module is None:
            module = _ModuleRec(None, None, [x for x in c if isinstance(x, (_Mesh, _Func))])
        return aliases, module

    def loc_alias(self, c):
        return (c[0], c[1])

    def module(self, c):
        return _ModuleRec(c[0], c[1], [x for x in c[2:] if isinstance(x, (_Mesh, _Func))])

    def mesh_decl(self, c):
        m = _Mesh()
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
        f = _Func()
        f.tok, f.visibility, f.name = c[0], c[1], c[2]
        f.args = [a for a in c[3:] if isinstance(a, _Arg)]
        f.results = _pick(c, _Results) or _Results()
        f.attrs = _pick(c, _Dict)
        f.ops = [o for o in c if isinstance(o, _Op)]
        f.loc = c[-1]
        return f

    def func_arg(self, c):
        return _Arg(c[0], c[1], c[2])

    def single_result(self, c):
        return _Results([(c[0], None)])

    def func_results(self, c):
        return _Results([r for r in c if r is not None])

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
        return _Op("simple", c[0], c[1] or [], {}, c[2], c[3])

    def constant_op(self, c):
        attrs = c[1] if c[1] is not None else c[3]
        if c[1] is not None and c[3] is not None:
            raise _SyntaxIssue("constant has two attribute dictionaries", c[0])
        return _Op("constant", c[0], [], {"dense": c[2]}, attrs, ("plain", None, [c[4]]))

    def iota_op(self, c):
        return _Op("iota", c[0], [], {"dim": int(c[1])}, c[2], c[3])

    def dims_op(self, c):
        return _Op("dims", c[0], [c[1]], {"dims": c[2]}, c[3], c[4])

    def concat_op(self, c):
        dim = [t for t in c if isinstance(t, Token) and t.type == "INT"][0]
        return _Op("concatenate", c[0], _values(c), {"dim": int(dim)}, c[-2], c[-1])

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
        return _Op("dot_general", c[0], [c[1], c[2]], extra, c[7], c[8])

    def reduce_input(self, c):
        return _Pair(c[0], c[1])

    def reducer_args(self, c):
        return (c[0], c[1])

    def reducer(self, c):
        region = c[-1]
        region.args = [a for pair in c[:-1] for a in pair]
        return region

    def reduce_op(self, c):
        inputs = [x for x in c if isinstance(x, _Pair)]
        applies = c[len(inputs) + 1]
        dims, attrs, sig, region = c[len(inputs) + 2:]
        operands = [p.first for p in inputs] + [p.second for p in inputs]
        rec = _Op("reduce", c[0], operands, {"dims": dims, "applies": applies,
                                            "num_inputs": len(inputs)}, attrs, sig)
        if region is not None:
            rec.regions = [region]
        return rec

    def compare_op(self, c):
        extra = {"direction": c[1], "type": c[4]}
        return _Op("compare", c[0], [c[2], c[3]], extra, c[5], c[6])

    def slice_range(self, c):
        return [int(c[0]), int(c[1]), int(c[2]) if c[2] is not None else 1]

    def slice_op(self, c):
        ranges = [r for r in c if isinstance(r, list)]
        return _Op("slice", c[0], [c[1]], {"ranges": ranges}, c[-2], c[-1])

    def pad_op(self, c):
        extra = {"low": c[3], "high": c[4], "interior": c[5]}
        return _Op("pad", c[0], [c[1], c[2]], extra, c[6], c[7])

    def call_op(self, c):
        return _Op("call", c[0], c[2] or [], {"callee": c[1]}, c[3], c[4])

    def return_op(self, c):
        sig = ("plain", None, c[3]) if c[3] is not None else None
        return _Op("return", c[0], c[1] or [], {}, c[2], sig)

    def generic_name(self, c):
        tok = c[0]
        name = _unescape(str(tok))
        if name not in SUPPORTED_OPS or name in _GENERIC_NOT_SUPPORTED:
            raise _Unsupported(name, tok)
        return (name, tok)

    def generic_op(self, c):
        (name, tok), operands, props, regions, attrs, sig = c
        rec = _Op("generic", tok, operands or [], {"props": props}, attrs, sig, name=name)
        rec.regions = regions or []
        return rec

    def properties(self, c):
        return self.attr_dict(c)

    def regions(self, c):
        return list(c)

    def region_body(self, c):
        label = c[0]
        return _Region(label or [], [o for o in c[1:] if isinstance(o, _Op)])

    def block_label(self, c):
        return [a for a in c[1:] if a is not None]

    def block_arg(self, c):
        return (c[0], c[1])

    # ----- sdy ops ---------------------------------------------------------------------------

    def sdy_sharding_op(self, c):
        return _Op("sdy_sharding", c[0], [c[1]], {"sharding": c[2]}, c[3], ("plain", None, [c[4]]))

    def sdy_group_op(self, c):
        return _Op("sdy_group", c[0], [c[1]], {"group_id": int(c[2])}, c[3], None)

    def sdy_barrier_op(self, c):
        return _Op("sdy_barrier", c[0], [c[1]], {"direction": c[2]}, c[3],
                   ("plain", None, [c[4]]))

    def sdy_dims_collective(self, c):
        per_dim = [x for x in c if isinstance(x, tuple)]
        value, sharding, attrs, ty = c[-4:]
        return _Op("sdy_collective", c[0], [value], {"per_dim": per_dim, "sharding": sharding},
                   attrs, ("plain", None, [ty]))

    def sdy_all_to_all(self, c):
        params = [x for x in c if isinstance(x, list)]
        value, sharding, attrs, ty = c[-4:]
        return _Op("sdy_collective", c[0], [value], {"params": params, "sharding": sharding},
                   attrs, ("plain", None, [ty]))

    def a2a_param(self, c):
        return [c[0], int(c[1]), int(c[2])]

    def sdy_all_reduce(self, c):
        return _Op("sdy_collective", c[0], [c[2]], {"axes": c[1], "sharding": c[3]}, c[4],
                   ("plain", None, [c[5]]))

    def sdy_permute(self, c):
        return _Op("sdy_collective", c[0], [c[1]], {"sharding": c[2]}, c[3],
                   ("plain", None, [c[4]]))

    def axis_set(self, c):
        return tuple(a for a in c if a is not None)

    def axis_ref(self, c):
        name = _unescape(str(c[0]))
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
        entries: dict[str, _Attr | None] = {}
        tokens: dict[str, Token] = {}
        for item in c:
            if item is None:
                continue
            key, value, tok = item
            if key in entries:
                raise _SyntaxIssue(f"attribute '{key}' is given twice", tok)
            entries[key] = value
            tokens[key] = tok
        return _Dict(entries, tokens)

    def attr_entry(self, c):
        tok = c[0]
        key = _unescape(str(tok)) if tok.type == "STRING" else str(tok)
        return (key, c[1], tok)

    def attr_value(self, c):
        c = [x for x in c if x is not None]
        first, last = c[0], c[-1]
        start = first.start_pos if isinstance(first, Token) else first.start
        end = last.end_pos if isinstance(last, Token) else last.end
        if isinstance(first, Token):
            kind = first.type
            if kind == "INT":
                return _Attr("int", int(first), start, end)
            if kind == "STRING":
                return _Attr("str", _unescape(str(first)), start, end)
            if kind == "BOOL":
                return _Attr("bool", str(first) == "true", start, end)
            if kind == "SYMBOL":
                return _Attr("symbol", str(first)[1:], start, end)
            if kind == "LSQB":
                return _Attr("list", [x for x in c if isinstance(x, _Attr)], start, end)
            if kind == "LBRACE":
                return _Attr("dict", None, start, end)
            if kind == "DIALECT_ATTR":
                return _Attr("dialect", str(first), start, end)
            if kind == "DENSE":
                return _Attr("dense", (first, c[2] if len(c) > 2 else None), start, end)
            if kind == "ARRAY":
                return _Attr("array", str(first), start, end)
            return _Attr(kind.lower(), str(first), start, end)
        return _Attr("other", None, start, end)


def _unescape(token: str) -> str:
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


_LOCK = threading.Lock()


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("compiler.stablehlo").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=True,
        transformer=_Reader(),
        cache=True,
    )


# ----- small decoders -------------------------------------------------------------------------

_TENSOR_RE = re.compile(r"tensor<((?:\d+x)*)([a-zA-Z_][\w]*)>")


@functools.lru_cache(maxsize=4096)
def _tensor_type_text(text: str) -> tuple[tuple[int, ...], str] | str:
    """`tensor<8x16xf32>` -> ((8, 16), "f32"); an error message string when not supported."""
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


_DENSE_TOKEN = re.compile(r'\s*(?:(\[)|(\])|(,)|("(?:[^"\\]|\\.)*")|([^\s,\[\]]+))')


def _dense_scalar(text: str, dtype: str) -> Any:
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
        return DenseElements((), (), _unescape(body))
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
    shape, flat = _flatten(root if root is not None else [])
    return DenseElements(tuple(flat), shape)


def _flatten(nested: list) -> tuple[tuple[int, ...], list]:
    if not isinstance(nested, list):
        return (), [nested]
    if not nested:
        return (0,), []
    shapes, flat = set(), []
    for item in nested:
        s, f = _flatten(item)
        shapes.add(s)
        flat.extend(f)
    if len(shapes) != 1:
        raise ValueError("dense literal is ragged")
    return (len(nested), *shapes.pop()), flat


# ----- shardings ------------------------------------------------------------------------------

_SHARDING_TOKEN = re.compile(
    r'\s*(?:(@[\w$.\-]+)|("(?:[^"\\]|\\.)*")|(p\d+)|(\d+)|([A-Za-z_]\w*)|(\S))'
)
_SHARDING_BODY = re.compile(r'<@(?:[^<>"]|"(?:[^"\\]|\\.)*")*>')


class _ShardingText:
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
        name = _unescape(m.group(2))
        if self.peek() != ":":
            return AxisRef(name)
        self.take(":")
        self.take("(")
        pre = int(self.take().group(0))
        self.take(")")
        return AxisRef(name, pre, int(self.take().group(0)))

    def axis_set(self) -> tuple[AxisRef, ...]:
        self.take("{")
        out = []
        while self.peek() != "}":
            out.append(self.axis())
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return tuple(out)

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
            prio = int(self.take().group(3)[1:])
        return DimSharding(tuple(axes), closed, prio)

    def parse(self) -> tuple[str, list[DimSharding], dict[str, tuple[AxisRef, ...]]]:
        self.take("<")
        m = self.take()
        if not m.group(1):
            raise ValueError(
                f"sharding {self.text!r} must name a mesh declared with sdy.mesh "
                "(inline meshes are not supported)"
            )
        mesh = m.group(1)[1:]
        self.take(",")
        self.take("[")
        dims = []
        while self.peek() != "]":
            dims.append(self.dim())
            if self.peek() == ",":
                self.take(",")
        self.take("]")
        extras: dict[str, tuple[AxisRef, ...]] = {}
        while self.peek() == ",":
            self.take(",")
            key = self.take().group(0).strip()
            if key not in ("replicated", "unreduced"):
                raise ValueError(f"unknown sharding field '{key}' in {self.text!r}")
            self.take("=")
            extras[key] = self.axis_set()
        self.take(">")
        if self.i != len(self.toks):
            raise ValueError(f"unexpected text after sharding {self.text!r}")
        return mesh, dims, extras


# ----- locations ------------------------------------------------------------------------------


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside quotes and brackets."""
    out, depth, quote, start, i = [], 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    out.append(text[start:])
    return out


_FILE_LOC = re.compile(r'("(?:[^"\\]|\\.)*"):(\d+):(\d+)')


class _Locations:
    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.cache: dict[str, Location | None] = {}

    def resolve(self, loc_text: str, depth: int = 0) -> Location | None:
        """`loc(...)` (or its body) -> the file:line:col it points at, if any."""
        body = loc_text.strip()
        if body.startswith("loc(") and body.endswith(")"):
            body = body[4:-1].strip()
        if body in self.cache:
            return self.cache[body]
        result = None
        if depth < 64:
            result = self._resolve_body(body, depth)
        self.cache[body] = result
        return result

    def _resolve_body(self, body: str, depth: int) -> Location | None:
        if body.startswith("#loc"):
            target = self.aliases.get(body)
            return self.resolve(target, depth + 1) if target else None
        if body.startswith("callsite(") and body.endswith(")"):
            parts = _split_top(body[len("callsite(") : -1], " at ")
            for part in parts:
                found = self.resolve(part, depth + 1)
                if found is not None:
                    return found
            return None
        if body.startswith("fused"):
            start = body.find("[")
            if start >= 0 and body.endswith("]"):
                for part in _split_top(body[start + 1 : -1], ","):
                    found = self.resolve(part, depth + 1)
                    if found is not None:
                        return found
            return None
        m = _FILE_LOC.match(body)
        if m is not None:
            return Location(_unescape(m.group(1)), int(m.group(2)), int(m.group(3)))
        if body.startswith('"'):
            end = re.match(r'"(?:[^"\\]|\\.)*"', body)
            rest = body[end.end() :].strip() if end else ""
            if rest.startswith("(") and rest.endswith(")"):
                return self.resolve(rest[1:-1], depth + 1)
        return None


# ----- the builder ----------------------------------------------------------------------------


class _Builder:
    def __init__(self, text: str, filename: str, aliases: dict[str, str]):
        self.text = text
        self.filename = filename
        self.locs = _Locations(aliases)
        self.module = Module()
        self.sharding_cache: dict[str, NamedMapping] = {}

    # ----- helpers -------------------------------------------------------------------------

    def where(self, tok: Token) -> Location:
        return Location(self.filename, tok.line or 0, tok.column or 0)

    def fail(self, message: str, tok: Token, cls: type[ShardcError] = ParseError) -> ShardcError:
        return cls(message, self.where(tok), source=self.text)

    def opaque(self, attr: _Attr | None) -> OpaqueAttr:
        if attr is None:
            return OpaqueAttr("unit")
        return OpaqueAttr(self.text[attr.start : attr.end])

    def tensor(self, tok: Token, mapping: NamedMapping | None = None) -> DistributedTensorType:
        parsed = _tensor_type_text(str(tok))
        if isinstance(parsed, str):
            raise self.fail(parsed, tok)
        try:
            return DistributedTensorType(parsed[0], parsed[1], mapping)
        except ShardcError as e:
            raise self.fail(e.message, tok, type(e)) from None

    def mapping(self, text: str, tok: Token) -> NamedMapping:
        """`<@mesh, [...]>` (optionally `#sdy.sharding` in front) -> NamedMapping."""
        if text.startswith("#sdy.sharding<"):
            text = text[len("#sdy.sharding") :]
        cached = self.sharding_cache.get(text)
        if cached is not None:
            return cached
        try:
            mesh_name, dims, extras = _ShardingText(text).parse()
        except ValueError as e:
            raise self.fail(f"malformed sharding: {e}", tok) from None
        mesh = self.module.meshes.get(mesh_name)
        if mesh is None:
            raise self.fail(
                f"unknown mesh @{mesh_name}; declare it first with `sdy.mesh @{mesh_name} = "
                '<["x"=2]>`', tok
            )
        try:
            mapping = NamedMapping(mesh, tuple(dims), extras.get("replicated", ()),
                                   extras.get("unreduced", ()))
        except ShardcError as e:
            raise self.fail(e.message, tok, type(e)) from None
        self.sharding_cache[text] = mapping
        return mapping

    def per_value(self, attr: _Attr, tok: Token, count: int) -> list[NamedMapping]:
        text = attr.value if attr.kind == "dialect" else ""
        if not text.startswith("#sdy.sharding_per_value<"):
            raise self.fail("'sdy.sharding' on an op must be a #sdy.sharding_per_value<[...]>", tok)
        bodies = _SHARDING_BODY.findall(text[len("#sdy.sharding_per_value<") :])
        if len(bodies) != count:
            raise self.fail(
                f"#sdy.sharding_per_value has {len(bodies)} shardings for {count} results", tok
            )
        return [self.mapping(b, tok) for b in bodies]

    def split_attrs(
        self, attrs: _Dict | None, reserved: set[str] = frozenset()
    ) -> tuple[_Attr | None, dict[str, Any]]:
        """(the `sdy.sharding` attr, every other attr kept verbatim)."""
        if attrs is None:
            return None, {}
        sharding = None
        kept: dict[str, Any] = {}
        for key, value in attrs.entries.items():
            if key == "sdy.sharding":
                sharding = value
            elif key in reserved:
                raise self.fail(
                    f"attribute '{key}' clashes with the op's own attribute of that name",
                    attrs.tokens[key],
                )
            else:
                kept[key] = self.opaque(value)
        return sharding, kept

    # ----- module ----------------------------------------------------------------------------

    def build(self, rec: _ModuleRec) -> Module:
        module = self.module
        if rec.name is not None:
            module.attributes["sym_name"] = str(rec.name)[1:]
        if rec.attrs is not None:
            for key, value in rec.attrs.entries.items():
                module.attributes[key] = self.opaque(value)
        funcs: list[tuple[_Func, Function]] = []
        for item in rec.items:
            if isinstance(item, _Mesh):
                self.add_mesh(item)
            else:
                funcs.append((item, self.declare_function(item)))
        for frec, func in funcs:
            _FunctionBuilder(self, func).build(frec)
        return module

    def add_mesh(self, m: _Mesh) -> None:
        name = str(m.name)[1:]
        if m.dialect is not None:
            raise self.fail(
                f"unsupported mesh {m.dialect}: shardc meshes are written "
                f'`sdy.mesh @{name} = <["x"=2, ...]>` (maximal and inline meshes do not import)',
                m.name,
            )
        try:
            mesh = DeviceMesh(name, tuple((_unescape(str(t)), n) for t, n, _ in m.axes),
                              tuple(m.device_ids) if m.device_ids is not None else None)
            self.module.add_mesh(mesh, self.where(m.tok))
        except ShardcError as e:
            raise self.fail(e.message, m.name, type(e)) from None
        if m.attrs is not None and m.attrs.entries:
            text = "{" + ", ".join(
                key if v is None else f"{key} = {self.text[v.start:v.end]}"
                for key, v in m.attrs.entries.items()
            ) + "}"
            self.module.attributes[MESH_ATTRS_PREFIX + name] = OpaqueAttr(text)

    def declare_function(self, f: _Func) -> Function:
        name = str(f.name)[1:]
        if self.module.lookup_function(name) is not None:
            raise self.fail(f"function @{name} is defined twice", f.name)
        arg_types, arg_attrs = [], []
        for a in f.args:
            sharding, kept = self.split_attrs(a.attrs)
            mapping = self.func_sharding(sharding, a.attrs, "sdy.sharding")
            arg_types.append(self.tensor(a.type, mapping))
            arg_attrs.append(kept)
        res_types, res_attrs = [], []
        for ty, attrs in f.results:
            sharding, kept = self.split_attrs(attrs)
            mapping = self.func_sharding(sharding, attrs, "sdy.sharding")
            res_types.append(self.tensor(ty, mapping))
            res_attrs.append(kept)
        visibility = str(f.visibility) if f.visibility is not None else "public"
        func = Function(
            name, arg_types, res_types, visibility=visibility, loc=self.where(f.tok),
            arg_names=[str(a.tok)[1:] for a in f.args],
        )
        func.arg_attrs = arg_attrs
        func.res_attrs = res_attrs
        if f.attrs is not None:
            func.attributes = {k: self.opaque(v) for k, v in f.attrs.entries.items()}
        if f.loc is not None:
            loc = self.locs.resolve(str(f.loc))
            if loc is not None:
                func.loc, func.loc_written = loc, True
        self.module.add_function(func)
        return func

    def func_sharding(self, sharding: _Attr | None, attrs: _Dict | None, key: str):
        if sharding is None:
            return None
        tok = attrs.tokens[key]
        if sharding.kind != "dialect" or not sharding.value.startswith("#sdy.sharding<"):
            raise self.fail("'sdy.sharding' on a function argument or result must be a "
                            "#sdy.sharding<@mesh, [...]>", tok)
        return self.mapping(sharding.value, tok)


def _props_ints(attr: _Attr | None) -> tuple[int, ...] | None:
    if attr is None:
        return None
    if attr.kind == "array":
        body = attr.value[attr.value.index(":") + 1 : -1] if ":" in attr.value else ""
        return tuple(int(x) for x in body.split(",") if x.strip())
    if attr.kind == "list":
        return tuple(int(x.value) for x in attr.value)
    raise ValueError("expected an integer array")


def _dialect_fields(text: str) -> dict[str, Any]:
    """`#stablehlo.gather<offset_dims = [2], index_vector_dim = 2>` -> {name: ints or int}."""
    out: dict[str, Any] = {}
    for key, arr, num in re.findall(r"(\w+)\s*=\s*(?:\[([^\]]*)\]|(-?\d+))", text):
        if num:
            out[key] = int(num)
        else:
            out[key] = tuple(int(x) for x in arr.split(",") if x.strip())
    return out


def _enum_word(attr: _Attr | None) -> str | None:
    """`#stablehlo<comparison_direction GT>` -> "GT"."""
    if attr is None:
        return None
    m = re.fullmatch(r"#\w+<\w+\s+(\w+)>", attr.value or "")
    if m is None:
        raise ValueError(f"expected an enum attribute, got {attr.value!r}")
    return m.group(1)


class _FunctionBuilder:
    """Resolves names and builds the native ops of one function."""

    def __init__(self, b: _Builder, func: Function):
        self.b = b
        self.func = func
        self.scope: dict[str, Value | tuple[Value, ...]] = {}

    def build(self, f: _Func) -> None:
        for a, value in zip(f.args, self.func.args):
            name = str(a.tok)[1:]
            if name in self.scope:
                raise self.b.fail(f"argument %{name} is declared twice", a.tok)
            self.scope[name] = value
        for rec in f.ops:
            self.add(rec)

    def lookup(self, tok: Token) -> Value:
        text = str(tok)[1:]
        name, _, index = text.partition("#")
        found = self.scope.get(name)
        if found is None:
            raise self.b.fail(f"use of undefined value %{name}", tok)
        if isinstance(found, tuple):
            i = int(index) if index else 0
            if i >= len(found):
                raise self.b.fail(f"%{name} has {len(found)} results; #{i} does not exist", tok)
            return found[i]
        if index and index != "0":
            raise self.b.fail(f"%{name} has a single result", tok)
        return found

    def add(self, rec: _Op) -> None:
        b = self.b
        first = rec.results[0][0] if rec.results else rec.tok
        operands = [self.lookup(t) for t in rec.operands]
        try:
            name, attrs, result_toks, mappings = _CONVERTERS[rec.form](self, rec, operands)
        except ValueError as e:
            raise b.fail(f"'{rec.name}' op: {e}", rec.tok) from None
        sharding, kept = b.split_attrs(rec.attrs, set(attrs))
        n_results = sum(n for _, n in rec.results)
        if len(result_toks) != n_results:
            raise b.fail(
                f"'{rec.name}' defines {n_results} value{'s' if n_results != 1 else ''} but its "
                f"type lists {len(result_toks)} result{'s' if len(result_toks) != 1 else ''}",
                first,
            )
        if sharding is not None:
            if mappings is not None:
                raise b.fail(f"'{rec.name}' carries its sharding inline; drop 'sdy.sharding'",
                             rec.attrs.tokens["sdy.sharding"])
            mappings = b.per_value(sharding, rec.attrs.tokens["sdy.sharding"], n_results)
        types = [
            b.tensor(t, mappings[i] if mappings else None) for i, t in enumerate(result_toks)
        ]
        attrs.update(kept)
        loc, written = b.where(first), False
        if rec.loc is not None:
            resolved = b.locs.resolve(str(rec.loc))
            if resolved is not None:
                loc, written = resolved, True
        op = Operation(name, operands, types, attrs, loc, loc_written=written)
        self.func.body.append(op)
        i = 0
        for tok, count in rec.results:
            text = str(tok)[1:]
            if text in self.scope:
                raise b.fail(f"value %{text} is defined twice", tok)
            group = tuple(op.results[i : i + count])
            if count == 1:
                group[0].name_hint = text
                self.scope[text] = group[0]
            else:
                self.scope[text] = group
            i += count

    # ----- signature checks -------------------------------------------------------------------

    def results_of(self, rec: _Op, operands: list[Value]) -> list[Token]:
        """Result type tokens from the signature; checks the operand types it names."""
        if rec.sig is None:
            return []
        kind, op_toks, res_toks = rec.sig
        if kind == "fn":
            if len(op_toks) != len(operands):
                raise ValueError(
                    f"signature lists {len(op_toks)} operand types for {len(operands)} operands"
                )
            for i, (tok, v) in enumerate(zip(op_toks, operands)):
                self.check_type(tok, v, i)
            return list(res_toks)
        return [res_toks[-1]]

    def check_type(self, tok: Token, v: Value, i: int) -> None:
        parsed = _tensor_type_text(str(tok))
        if isinstance(parsed, str):
            raise self.b.fail(parsed, tok)
        if parsed != (v.type.shape, v.type.dtype):
            raise self.b.fail(
                f"operand {i} has type {v.type.tensor} but the signature says {tok}", tok
            )

    def region_kind(self, rec: _Op, region: _Region, allow_replace: bool) -> str:
        """The reducer a single-op region computes: `add`, `maximum`, ..., or `replace`."""
        args = [str(t)[1:] for t, _ in region.args]
        ops = region.ops
        fail = ValueError(
            "only a region whose body is one add/maximum/minimum/multiply/and/or of its two "
            "block arguments imports" + (" (or returns the update)" if allow_replace else "")
        )
        is_return = bool(ops) and ops[-1].name.rpartition(".")[2] == "return"
        if len(args) != 2 or not is_return or len(ops[-1].operands) != 1:
            raise fail
        ret = str(ops[-1].operands[0])[1:]
        if len(ops) == 1 and allow_replace and ret == args[1]:
            return "replace"
        if len(ops) != 2:
            raise fail
        body = ops[0]
        dialect, _, short = body.name.partition(".")
        if body.form not in ("simple", "generic") or dialect != "stablehlo":
            raise fail
        if short not in REDUCER_KINDS or not body.results:
            raise fail
        if sorted(str(t)[1:] for t in body.operands) != sorted(args):
            raise fail
        if str(body.results[0][0])[1:] != ret:
            raise fail
        return short


# ----- converters: record -> (native name, attrs, result type tokens, result mappings) ----------


def _simple(fb: _FunctionBuilder, rec: _Op, operands: list[Value]):
    dialect, _, short = rec.name.partition(".")
    if rec.sig is not None and rec.sig[0] == "plain" and rec.sig[2]:
        toks = rec.sig[2]
        if short == "select" and len(toks) == 2 and len(operands) == 3:
            fb.check_type(toks[0], operands[0], 0)
            fb.check_type(toks[1], operands[1], 1)
            fb.check_type(toks[1], operands[2], 2)
        elif len(toks) == 1:
            for i, v in enumerate(operands):
                fb.check_type(toks[0], v, i)
    return short, {}, fb.results_of(rec, operands), None


def _constant(fb: _FunctionBuilder, rec: _Op, operands: list[Value]):
    ty = rec.sig[2][0]
    parsed = _tensor_type_text(str(ty))
    if isinstance(parsed, str):
        raise fb.b.fail(parsed, ty)
    try:
        value = parse_dense(str(rec.extra["dense"]), parsed[1])
    except (ValueError, IndexError, OverflowError):
        raise fb.b.fail(f"malformed dense literal for {ty}", rec.extra["dense"]) from None
    attrs: dict[str, Any] = {"value": value}
    if rec.name == "sdy.constant":
        attrs[SDY_CONSTANT_MARKER] = True
    return "constant", attrs, [ty], None


def _iota(fb, rec, operands):
    return "iota", {"iota_dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


_DIMS_ATTR = {
    "stablehlo.broadcast_in_dim": ("broadcast_in_dim", "broadcast_dimensions"),
    "stablehlo.transpose": ("transpose", "permutation"),
    "stablehlo.reverse": ("reverse", "dimensions"),
}


def _dims(fb, rec, operands):
    name, key = _DIMS_ATTR[rec.name]
    return name, {key: rec.extra["dims"]}, fb.results_of(rec, operands), None


def _concatenate(fb, rec, operands):
    return "concatenate", {"dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


def _dot_general(fb, rec, operands):
    (lb, rb), (lc, rc) = rec.extra["batching"], rec.extra["contracting"]
    attrs: dict[str, Any] = {}
    if lb or rb:
        attrs["lhs_batching_dims"], attrs["rhs_batching_dims"] = lb, rb
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = lc, rc
    if "precision" in rec.extra:
        attrs["precision"] = tuple(Keyword(w) for w in rec.extra["precision"])
    return "dot_general", attrs, fb.results_of(rec, operands), None


def _reduce(fb, rec, operands):
    if rec.extra["num_inputs"] != 1:
        raise ValueError(
            f"variadic reduce ({rec.extra['num_inputs']} inputs, e.g. argmax/argmin) does not "
            "import; shardc's reduce takes one input and one init value"
        )
    applies = rec.extra["applies"]
    if applies is not None:
        kind = str(applies).partition(".")[2]
        if kind not in REDUCER_KINDS or not str(applies).startswith("stablehlo."):
            raise ValueError(f"reducer '{applies}' is not one of {sorted(REDUCER_KINDS)}")
    else:
        kind = fb.region_kind(rec, rec.regions[0], allow_replace=False)
    attrs = {"dimensions": rec.extra["dims"], "kind": Keyword(kind)}
    return "reduce", attrs, fb.results_of(rec, operands), None


def _compare(fb, rec, operands):
    attrs: dict[str, Any] = {"comparison_direction": Keyword(str(rec.extra["direction"]))}
    if rec.extra["type"] is not None:
        attrs["compare_type"] = Keyword(str(rec.extra["type"]))
    return "compare", attrs, fb.results_of(rec, operands), None


def _slice(fb, rec, operands):
    ranges = rec.extra["ranges"]
    attrs = {
        "start_indices": tuple(r[0] for r in ranges),
        "limit_indices": tuple(r[1] for r in ranges),
        "strides": tuple(r[2] for r in ranges),
    }
    return "slice", attrs, fb.results_of(rec, operands), None


def _pad(fb, rec, operands):
    attrs = {
        "edge_padding_low": rec.extra["low"],
        "edge_padding_high": rec.extra["high"],
        "interior_padding": rec.extra["interior"],
    }
    return "pad", attrs, fb.results_of(rec, operands), None


def _call(fb, rec, operands):
    callee = str(rec.extra["callee"])[1:]
    if callee.startswith('"'):
        callee = _unescape(callee)
    return "call", {"callee": Symbol(callee)}, fb.results_of(rec, operands), None


def _return(fb, rec, operands):
    if rec.sig is not None:
        toks = rec.sig[2]
        if len(toks) != len(operands):
            raise ValueError(f"returns {len(operands)} values but lists {len(toks)} types")
        for i, (tok, v) in enumerate(zip(toks, operands)):
            fb.check_type(tok, v, i)
    elif operands:
        raise ValueError("return needs the types of its operands: `return %0 : tensor<...>`")
    return "return", {}, [], None


def _sdy_sharding(fb, rec, operands):
    mapping = fb.b.mapping(str(rec.extra["sharding"]), rec.extra["sharding"])
    name = rec.name.partition(".")[2]
    return name, {}, fb.results_of(rec, operands), [mapping]


def _sdy_group(fb, rec, operands):
    return "sharding_group", {"group_id": rec.extra["group_id"]}, [], None


def _sdy_barrier(fb, rec, operands):
    direction = str(rec.extra["direction"])
    attrs = {"allowed_direction": Keyword(direction)}
    return "propagation_barrier", attrs, fb.results_of(rec, operands), None


def _axes(items: tuple) -> tuple[AxisRef, ...]:
    out = []
    for a in items:
        out.append(a if isinstance(a, AxisRef) else AxisRef(a[0], a[1], a[2]))
    return tuple(out)


def _sdy_collective(fb, rec, operands):
    short = rec.name.partition(".")[2]
    try:
        extra = rec.extra
        if short in ("all_gather", "all_slice", "reduce_scatter"):
            key = {"all_gather": "gathering_axes", "all_slice": "slicing_axes",
                   "reduce_scatter": "scatter_axes"}[short]
            attrs: dict[str, Any] = {key: tuple(_axes(d) for d in extra["per_dim"])}
        elif short == "all_to_all":
            params = extra["params"]
            if len(params) != 1:
                raise ValueError(
                    f"all_to_all with {len(params)} parameters does not import; shardc's "
                    "all_to_all moves one axis list between two dims (split it into several)"
                )
            axes, src, tgt = params[0]
            attrs = {"axes": _axes(axes), "src_dim": src, "tgt_dim": tgt}
        elif short == "all_reduce":
            attrs = {"reduction_axes": _axes(extra["axes"])}
        else:
            attrs = {}
    except ShardcError as e:
        raise fb.b.fail(e.message, rec.tok, type(e)) from None
    mapping = fb.b.mapping(str(extra["sharding"]), extra["sharding"])
    return short, attrs, fb.results_of(rec, operands), [mapping]


_GENERIC_SIMPLE = (
    {f"stablehlo.{n}" for n in UNARY | BINARY | {"select", "clamp"}}
    | {f"chlo.{n}" for n in CHLO}
)


def _generic(fb: _FunctionBuilder, rec: _Op, operands: list[Value]):
    """The generic form `"stablehlo.x"(...) <{props}> ({regions}) : (...) -> ...`."""
    name = rec.name
    props: dict[str, _Attr | None] = rec.extra["props"].entries if rec.extra["props"] else {}
    results = fb.results_of(rec, operands)
    short = name.partition(".")[2] if "." in name else name

    def need(key: str) -> _Attr:
        value = props.get(key)
        if value is None:
            raise ValueError(f"needs property '{key}'")
        return value

    if name in _GENERIC_SIMPLE:
        return short, {}, results, None
    if name in ("func.call", "call"):
        return "call", {"callee": Symbol(need("callee").value)}, results, None
    if name in ("func.return", "return", "stablehlo.return"):
        return "return", {}, [], None
    if name == "stablehlo.constant":
        dense = need("value")
        if dense.kind != "dense" or not results:
            raise ValueError("property 'value' must be a dense<...> literal")
        parsed = _tensor_type_text(str(results[0]))
        if isinstance(parsed, str):
            raise ValueError(parsed)
        return "constant", {"value": parse_dense(str(dense.value[0]), parsed[1])}, results, None
    if name == "stablehlo.iota":
        return "iota", {"iota_dimension": need("iota_dimension").value}, results, None
    if name in _DIMS_ATTR:
        native, key = _DIMS_ATTR[name]
        return native, {key: _props_ints(need(key))}, results, None
    if name == "stablehlo.concatenate":
        return "concatenate", {"dimension": need("dimension").value}, results, None
    if name == "stablehlo.dot_general":
        dims = _dialect_fields(need("dot_dimension_numbers").value)
        attrs: dict[str, Any] = {}
        if dims.get("lhs_batching_dimensions") or dims.get("rhs_batching_dimensions"):
            attrs["lhs_batching_dims"] = dims.get("lhs_batching_dimensions", ())
            attrs["rhs_batching_dims"] = dims.get("rhs_batching_dimensions", ())
        attrs["lhs_contracting_dims"] = dims.get("lhs_contracting_dimensions", ())
        attrs["rhs_contracting_dims"] = dims.get("rhs_contracting_dimensions", ())
        if props.get("precision_config") is not None:
            words = [_enum_word(a) for a in props["precision_config"].value]
            attrs["precision"] = tuple(Keyword(w) for w in words)
        return "dot_general", attrs, results, None
    if name == "stablehlo.compare":
        attrs = {"comparison_direction": Keyword(_enum_word(need("comparison_direction")))}
        if props.get("compare_type") is not None:
            attrs["compare_type"] = Keyword(_enum_word(props["compare_type"]))
        return "compare", attrs, results, None
    if name == "stablehlo.slice":
        attrs = {k: _props_ints(need(k)) for k in ("start_indices", "limit_indices", "strides")}
        return "slice", attrs, results, None
    if name == "stablehlo.pad":
        keys = ("edge_padding_low", "edge_padding_high", "interior_padding")
        return "pad", {k: _props_ints(need(k)) for k in keys}, results, None
    if name == "stablehlo.reduce":
        if len(operands) != 2 or len(rec.regions) != 1:
            raise ValueError("variadic reduce (several inputs) does not import")
        kind = fb.region_kind(rec, rec.regions[0], allow_replace=False)
        attrs = {"dimensions": _props_ints(need("dimensions")), "kind": Keyword(kind)}
        return "reduce", attrs, results, None
    if name == "stablehlo.gather":
        dims = _dialect_fields(need("dimension_numbers").value)
        attrs = {
            "offset_dims": dims.get("offset_dims", ()),
            "collapsed_slice_dims": dims.get("collapsed_slice_dims", ()),
            "operand_batching_dims": dims.get("operand_batching_dims", ()),
            "start_indices_batching_dims": dims.get("start_indices_batching_dims", ()),
            "start_index_map": dims.get("start_index_map", ()),
            "index_vector_dim": dims.get("index_vector_dim", 0),
            "slice_sizes": _props_ints(need("slice_sizes")),
        }
        if props.get("indices_are_sorted") is not None:
            attrs["indices_are_sorted"] = props["indices_are_sorted"].value
        return "gather", attrs, results, None
    if name == "stablehlo.scatter":
        if len(operands) != 3 or len(rec.regions) != 1:
            raise ValueError("variadic scatter (several operands) does not import")
        dims = _dialect_fields(need("scatter_dimension_numbers").value)
        attrs = {
            "update_window_dims": dims.get("update_window_dims", ()),
            "inserted_window_dims": dims.get("inserted_window_dims", ()),
            "input_batching_dims": dims.get("input_batching_dims", ()),
            "scatter_indices_batching_dims": dims.get("scatter_indices_batching_dims", ()),
            "scatter_dims_to_operand_dims": dims.get("scatter_dims_to_operand_dims", ()),
            "index_vector_dim": dims.get("index_vector_dim", 0),
            "kind": Keyword(fb.region_kind(rec, rec.regions[0], allow_replace=True)),
        }
        for key in ("indices_are_sorted", "unique_indices"):
            if props.get(key) is not None:
                attrs[key] = props[key].value
        return "scatter", attrs, results, None
    if name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.constant"):
        if name == "sdy.constant":
            return _generic(fb, _renamed(rec, "stablehlo.constant"), operands)[:3] + (None,)
        sharding = need("sharding")
        mapping = fb.b.mapping(sharding.value, rec.tok)
        return short, {}, results, [mapping]
    raise ValueError("the generic form of this op does not import; use its pretty form")


def _renamed(rec: _Op, name: str) -> _Op:
    out = _Op(rec.form, rec.tok, rec.operands, rec.extra, rec.attrs, rec.sig, name=name)
    out.regions = rec.regions
    return out


_CONVERTERS = {
    "simple": _simple, "constant": _constant, "iota": _iota, "dims": _dims,
    "concatenate": _concatenate, "dot_general": _dot_general, "reduce": _reduce,
    "compare": _compare, "slice": _slice, "pad": _pad, "call": _call, "return": _return,
    "generic": _generic, "sdy_sharding": _sdy_sharding, "sdy_group": _sdy_group,
    "sdy_barrier": _sdy_barrier, "sdy_collective": _sdy_collective,
}


# ----- entry point ----------------------------------------------------------------------------

_OP_NAME_AT = re.compile(r'"?([A-Za-z_][\w]*(?:\.[\w]+)+)"?')


def _word_at(text: str, pos: int) -> str | None:
    start = pos
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
        start -= 1
    m = _OP_NAME_AT.match(text, start)
    return m.group(1) if m else None


def _syntax_error(text: str, filename: str, pos: int, line: int, col: int, msg: str):
    name = _word_at(text, pos)
    loc = Location(filename, line, col)
    if name is not None and "." in name and name.split(".")[0] in (
        "stablehlo", "chlo", "sdy", "mhlo", "func", "tensor", "arith", "shape", "math", "scf",
    ):
        start = pos
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
            start -= 1
        col -= pos - start
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


def import_stablehlo(text: str, filename: str = "<input>") -> Module:
    """Parse StableHLO + sdy MLIR text (what JAX prints) into a verified native `Module`."""
    if len(text) > MAX_INPUT_BYTES:
        raise ParseError(f"input is larger than {MAX_INPUT_BYTES} bytes")
    parser = _parser()
    try:
        with _LOCK:
            aliases, module_rec = parser.parse(text)
    except lark.exceptions.UnexpectedCharacters as e:
        raise _syntax_error(
            text, filename, e.pos_in_stream, e.line, e.column,
            f"unexpected character {text[e.pos_in_stream]!r}",
        ) from None
    except lark.exceptions.UnexpectedToken as e:
        if e.token.type == "$END":
            lines = text.splitlines() or [""]
            raise ParseError(
                f"unexpected end of input; expected {_describe(set(e.expected))}",
                Location(filename, len(lines), len(lines[-1]) + 1), source=text,
            ) from None
        raise _syntax_error(
            text, filename, e.token.start_pos or 0, e.line, e.column,
            f"unexpected '{e.token}'; expected {_describe(set(e.expected))}",
        ) from None
    except lark.exceptions.UnexpectedEOF as e:
        lines = text.splitlines() or [""]
        raise ParseError(
            f"unexpected end of input; expected {_describe(set(e.expected))}",
            Location(filename, len(lines), len(lines[-1]) + 1), source=text,
        ) from None
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
    builder = _Builder(text, filename, aliases)
    try:
        module = builder.build(module_rec)
        from ir.verifier import verify_module

        verify_module(module)
    except ShardcError as e:
        raise e.with_location(None, text) from None
    return module
