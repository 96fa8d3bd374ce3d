"""The records of the commonest one-line op forms, read with regular expressions built on the
grammar's own terminals and handed to the same reader callbacks (`import_table.READ_RULES`)
the grammar calls: what line_reader.py reads instead of asking the grammar, for the first op
of each distinct line (the grammar costs ~20x more per token).

    %3 = stablehlo.add %1, %2 : tensor<8xf32>                          simple_op
    %4 = stablehlo.broadcast_in_dim %3, dims = [0] : (...) -> ...     dims_op
    %c = stablehlo.constant dense<1.0> : tensor<f32>                   constant_op

Only lines without attribute dictionaries or strings are read here; `read_record` returns None
for anything else and the grammar reads that line (tests/test_stablehlo_line_reader.py checks
that both build the same module).
"""

from __future__ import annotations

import functools
import re

import shardc.stablehlo.ops  # noqa: F401  (registers every op family's reader rules)
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.import_table import GENERIC, READ_RULES
from shardc.stablehlo.line_attrs import read_dict
from shardc.stablehlo.records import OpRec, generic_rec
from shardc.stablehlo.tokens import LineToken as Token
from shardc.stablehlo.tokens import new_token, terminal

_W = r"[ \t]*"
_VALUE = r"%[\w$.\-]+(?:#\d+)?"
_BLANKS = re.compile(_W)


class _Forms:
    def __init__(self) -> None:
        ty = f"(?:{terminal('TENSOR_TYPE')})"
        types = rf"{ty}(?:{_W},{_W}{ty})*"
        # type_sig: `T, T` | `(T, T) -> T` | `(T, T) -> (T, T)` | `T -> T` (grammar.lark)
        self.sig = re.compile(
            rf"(?P<plain>{types})$|\((?P<args>{_W}(?:{types})?){_W}\){_W}->{_W}(?P<res>.*)$"
            rf"|(?P<arg>{ty}){_W}->{_W}(?P<res1>.*)$")
        self.results = re.compile(rf"(?P<one>{ty})$|\({_W}(?P<many>(?:{types})?){_W}\)$")
        self.type = re.compile(ty)
        self.value = re.compile(_VALUE)
        self.simple = re.compile(
            rf"(?P<name>{terminal('SIMPLE_OP')})(?:{_W}(?P<ops>{_VALUE}(?:{_W},{_W}{_VALUE})*))?"
            rf"{_W}:{_W}(?P<sig>.*?){_W}$")
        self.dims = re.compile(
            rf"(?P<name>{terminal('DIMS_OP')}){_W}(?P<ops>{_VALUE}){_W},{_W}dims{_W}={_W}"
            rf"\[(?P<dims>{_W}(?:-?\d+(?:{_W},{_W}-?\d+)*)?){_W}\]{_W}:{_W}(?P<sig>.*?){_W}$")
        ints = rf"\[{_W}(?:-?\d+(?:{_W},{_W}-?\d+)*)?{_W}\]"
        sig = rf"{_W}:{_W}(?P<sig>.*?){_W}$"
        self.ints = re.compile(r"-?\d+")
        self.dot = re.compile(
            rf"(?P<name>{terminal('DOT_GENERAL')}){_W}(?P<a>{_VALUE}){_W},{_W}(?P<b>{_VALUE})"
            rf"(?:{_W},{_W}batching_dims{_W}={_W}(?P<lb>{ints}){_W}x{_W}(?P<rb>{ints}))?"
            rf"{_W},{_W}contracting_dims{_W}={_W}(?P<lc>{ints}){_W}x{_W}(?P<rc>{ints})"
            rf"(?:{_W},{_W}precision{_W}={_W}\[(?P<precision>{_W}[A-Za-z_]\w*(?:{_W},{_W}"
            rf"[A-Za-z_]\w*)*)?{_W}\])?"
            rf"(?:{_W},{_W}algorithm{_W}={_W}(?P<algorithm><[^<>\"]*>))?{sig}")
        self.call = re.compile(
            rf"(?P<name>{terminal('CALL')}){_W}(?P<callee>@[A-Za-z_][\w$.\-]*){_W}\("
            rf"(?P<ops>{_W}{_VALUE}(?:{_W},{_W}{_VALUE})*)?{_W}\){sig}")
        self.compare = re.compile(
            rf"(?P<name>{terminal('COMPARE')}){_W}(?P<dir>[A-Za-z_]\w*){_W},{_W}(?P<a>{_VALUE})"
            rf"{_W},{_W}(?P<b>{_VALUE})(?:{_W},{_W}(?P<type>[A-Za-z_]\w*))?{sig}")
        self.iota = re.compile(
            rf"(?P<name>{terminal('IOTA')}){_W}dim{_W}={_W}(?P<dim>-?\d+){sig}")
        self.slice = re.compile(
            rf"(?P<name>{terminal('SLICE')}){_W}(?P<a>{_VALUE}){_W}\[(?P<ranges>[\d:, \t-]*)\]"
            rf"{sig}")
        self.reduce = re.compile(
            rf"(?P<name>{terminal('REDUCE')}){_W}\({_W}(?P<a>{_VALUE}){_W}init{_W}:{_W}"
            rf"(?P<b>{_VALUE}){_W}\){_W}applies{_W}(?P<applies>{terminal('SIMPLE_OP')}){_W}"
            rf"across{_W}dimensions{_W}={_W}(?P<dims>{ints}){sig}")
        values = rf"{_VALUE}(?:{_W},{_W}{_VALUE})*"
        self.concat = re.compile(
            rf"(?P<name>{terminal('CONCATENATE')}){_W}(?P<ops>{values}){_W},{_W}dim{_W}={_W}"
            rf"(?P<dim>-?\d+){sig}")
        self.pad = re.compile(
            rf"(?P<name>{terminal('PAD')}){_W}(?P<a>{_VALUE}){_W},{_W}(?P<b>{_VALUE}){_W},{_W}"
            rf"low{_W}={_W}(?P<low>{ints}){_W},{_W}high{_W}={_W}(?P<high>{ints}){_W},{_W}"
            rf"interior{_W}={_W}(?P<interior>{ints}){sig}")
        self.ret = re.compile(
            rf"(?P<name>{terminal('RETURN')})(?:{_W}(?P<ops>{values}){_W}:{_W}(?P<types>{types}))?"
            rf"{_W}$")
        self.generic = re.compile(
            rf"(?P<name>{terminal('STRING')}){_W}\((?P<ops>{_W}{values})?{_W}\){_W}")
        self.generic_sig = re.compile(sig)
        self.constant = re.compile(
            rf"(?P<name>{terminal('CONSTANT_OP')}){_W}(?P<dense>{terminal('DENSE')})"
            rf"{_W}:{_W}(?P<type>{ty}){_W}$")


@functools.cache
def forms() -> _Forms:
    return _Forms()


class Place:
    """Makes the tokens of one line, located in the whole text."""

    __slots__ = ("start", "line")

    def __init__(self, start: int, line: int):
        self.start = start
        self.line = line

    def tok(self, kind: str, m: re.Match, group: str | int) -> Token:
        at = m.start(group)
        return new_token(kind, m.group(group), self.start + at, self.line, at + 1)

    def all(self, kind: str, pattern: re.Pattern, text: str, offset: int) -> list[Token]:
        return [new_token(kind, m.group(0), self.start + offset + m.start(), self.line,
                      offset + m.start() + 1) for m in pattern.finditer(text)]


def read_sig(f: _Forms, p: Place, m: re.Match) -> tuple | None:
    """The `type_sig` at group "sig" of `m`, as reader.py's sig_* callbacks build it."""
    at, text = m.start("sig"), m.group("sig")
    s = f.sig.match(text)
    if s is None:
        return None
    if s.group("plain") is not None:
        return ("plain", None, p.all("TENSOR_TYPE", f.type, s.group("plain"), at))
    if s.group("args") is not None:
        args = p.all("TENSOR_TYPE", f.type, s.group("args"), at + s.start("args"))
        res, res_at = s.group("res"), at + s.start("res")
    else:
        args = [new_token("TENSOR_TYPE", s.group("arg"), p.start + at + s.start("arg"), p.line,
                      at + s.start("arg") + 1)]
        res, res_at = s.group("res1"), at + s.start("res1")
    r = f.results.match(res)
    if r is None:
        return None
    group = "one" if r.group("one") is not None else "many"
    return ("fn", args, p.all("TENSOR_TYPE", f.type, r.group(group), res_at + r.start(group)))


_RESULT_NAME = r"%[\w$.\-]+"
RESULT = re.compile(rf"({_RESULT_NAME})(?::(\d+))?")
_HEAD = re.compile(rf"[ \t]*((?:{_RESULT_NAME}(?::\d+)?[ \t]*,[ \t]*)*{_RESULT_NAME}(?::\d+)?)"
                   rf"[ \t]*=[ \t]*")


def split_line(line: str, loc_tail: re.Pattern) -> tuple[re.Match | None, int, int]:
    """An op line's results (`%a, %b:2 = `, its match or None), where its op's name starts
    and where its trailing `loc(...)` starts (the line's length if it has none)."""
    head = _HEAD.match(line)
    body_at = len(line) - len(line.lstrip()) if head is None else head.end()
    loc_at = len(line)
    if line.endswith(")") and "loc(" in line:
        m = loc_tail.search(line, body_at)
        if m is not None:
            loc_at = m.start(1)
    return head, body_at, loc_at


def result_tokens(head: re.Match, start: int, lineno: int) -> list:
    """The `(token, count)` of each result `split_line` found (the grammar's result_def)."""
    at = head.start(1)
    return [(new_token("VALUE", m.group(1), start + at + m.start(1), lineno, at + m.start(1) + 1),
             int(m.group(2) or 1)) for m in RESULT.finditer(head.group(1))]


def record_at(line: str, start: int, lineno: int, head: re.Match | None, body_at: int,
              loc_at: int) -> OpRec | None:
    """The record of the op line `line` (`split_line`'s parts), with its results and `loc`;
    None when `read_record` does not read its form."""
    rec = read_record(line[:loc_at].rstrip(), body_at, start, lineno)
    if rec is None:
        return None
    if head is not None:
        rec.results = result_tokens(head, start, lineno)
    if loc_at < len(line):
        rec.loc = new_token("LOC", line[loc_at:].rstrip(), start + loc_at, lineno, loc_at + 1)
    return rec


def read_record(line: str, body_at: int, start: int, lineno: int) -> OpRec | None:
    """The record of the op `line[body_at:]` (no results, no `loc`; the caller adds them),
    or None when it is not one of the forms read here. `start`: where the line starts in the
    text; `lineno`: its number."""
    body = line[body_at:]
    if body.startswith('"') and "loc(" not in body:
        return _generic(forms(), Place(start, lineno), line, body_at)
    if "{" in body or '"' in body or "loc(" in body:
        return None
    f = forms()
    p = Place(start, lineno)
    m = f.simple.match(line, body_at)
    if m is not None:
        sig = read_sig(f, p, m)
        if sig is None:
            return None
        ops = p.all("VALUE", f.value, m.group("ops"), m.start("ops")) if m.group("ops") else None
        return READ_RULES["simple_op"]([p.tok("SIMPLE_OP", m, "name"), ops, None, sig])
    m = f.dims.match(line, body_at)
    if m is not None:
        sig = read_sig(f, p, m)
        if sig is None:
            return None
        dims = tuple(int(d) for d in m.group("dims").split(",") if d.strip())
        return READ_RULES["dims_op"]([p.tok("DIMS_OP", m, "name"), p.tok("VALUE", m, "ops"),
                                      dims, None, sig])
    m = f.constant.match(line, body_at)
    if m is not None:
        return READ_RULES["constant_op"]([p.tok("CONSTANT_OP", m, "name"), None,
                                          p.tok("DENSE", m, "dense"), None,
                                          p.tok("TENSOR_TYPE", m, "type")])
    m = f.ret.match(line, body_at)
    if m is not None:
        ops = types = None
        if m.group("ops") is not None:
            ops = p.all("VALUE", f.value, m.group("ops"), m.start("ops"))
            types = p.all("TENSOR_TYPE", f.type, m.group("types"), m.start("types"))
        return READ_RULES["return_op"]([p.tok("RETURN", m, "name"), ops, None, types])
    for form, build in _MORE:
        m = getattr(f, form).match(line, body_at)
        if m is not None:
            sig = read_sig(f, p, m)
            return None if sig is None else build(f, p, m, sig)
    return None


def _ints(f: _Forms, m: re.Match, group: str) -> tuple[int, ...]:
    return tuple(int(x) for x in f.ints.findall(m.group(group)))


def _dot(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    batching = None
    if m.group("lb") is not None:
        batching = ("batching", _ints(f, m, "lb"), _ints(f, m, "rb"))
    precision = None
    if m.group("precision") is not None:
        precision = ("precision", tuple(x.strip() for x in m.group("precision").split(",")))
    algorithm = None
    if m.group("algorithm") is not None:
        algorithm = ("algorithm", m.group("algorithm"))
    return READ_RULES["dot_op"]([p.tok("DOT_GENERAL", m, "name"), p.tok("VALUE", m, "a"),
                                 p.tok("VALUE", m, "b"), batching, _ints(f, m, "lc"),
                                 _ints(f, m, "rc"), precision, algorithm, None, sig])


def _call(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    ops = p.all("VALUE", f.value, m.group("ops"), m.start("ops")) if m.group("ops") else None
    return READ_RULES["call_op"]([p.tok("CALL", m, "name"), p.tok("SYMBOL", m, "callee"), ops,
                                  None, sig])


def _compare(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    kind = p.tok("BARE", m, "type") if m.group("type") is not None else None
    return READ_RULES["compare_op"]([p.tok("COMPARE", m, "name"), p.tok("BARE", m, "dir"),
                                     p.tok("VALUE", m, "a"), p.tok("VALUE", m, "b"), kind,
                                     None, sig])


def _iota(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    return READ_RULES["iota_op"]([p.tok("IOTA", m, "name"), p.tok("INT", m, "dim"), None, sig])


def _slice(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec | None:
    ranges = []
    text = m.group("ranges").strip()
    for part in text.split(",") if text else ():
        bounds = part.split(":")
        if len(bounds) not in (2, 3) or not all(f.ints.fullmatch(b.strip()) for b in bounds):
            return None
        ranges.append([int(b) for b in bounds] + ([1] if len(bounds) == 2 else []))
    return READ_RULES["slice_op"]([p.tok("SLICE", m, "name"), p.tok("VALUE", m, "a"), *ranges,
                                   None, sig])


def _reduce(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    pair = READ_RULES["reduce_input"]([p.tok("VALUE", m, "a"), p.tok("VALUE", m, "b")])
    return READ_RULES["reduce_op"]([p.tok("REDUCE", m, "name"), pair,
                                    p.tok("SIMPLE_OP", m, "applies"), _ints(f, m, "dims"), None,
                                    sig, None])


def _concat(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    ops = p.all("VALUE", f.value, m.group("ops"), m.start("ops"))
    return READ_RULES["concat_op"]([p.tok("CONCATENATE", m, "name"), *ops,
                                    p.tok("INT", m, "dim"), None, sig])


def _pad(f: _Forms, p: Place, m: re.Match, sig: tuple) -> OpRec:
    return READ_RULES["pad_op"]([p.tok("PAD", m, "name"), p.tok("VALUE", m, "a"),
                                 p.tok("VALUE", m, "b"), _ints(f, m, "low"), _ints(f, m, "high"),
                                 _ints(f, m, "interior"), None, sig])


_MORE = (("concat", _concat), ("pad", _pad), ("dot", _dot), ("call", _call),
         ("compare", _compare), ("iota", _iota), ("slice", _slice), ("reduce", _reduce))


def _generic(f: _Forms, p: Place, line: str, body_at: int) -> OpRec | None:
    """`"dialect.op"(%a, %b) <{props}> {attrs} : (...) -> ...` on one line (JAX's gather) as
    the grammar's generic_op builds it; None for a name the importer has no generic form of
    (the grammar reports it) or any other form (a region)."""
    m = f.generic.match(line, body_at)
    if m is None or unescape(m.group("name")) not in GENERIC:
        return None
    pos, props, attrs = m.end(), None, None
    if line.startswith("<{", pos):
        found = read_dict(line, pos, p.start, p.line, "}>")
        if found is None:
            return None
        props, pos = found
    pos = _BLANKS.match(line, pos).end()
    if line.startswith("{", pos):
        found = read_dict(line, pos, p.start, p.line)
        if found is None:
            return None
        attrs, pos = found
    s = f.generic_sig.match(line, pos)
    sig = None if s is None else read_sig(f, p, s)
    if sig is None:
        return None
    ops = p.all("VALUE", f.value, m.group("ops"), m.start("ops")) if m.group("ops") else None
    return generic_rec(unescape(m.group("name")), p.tok("STRING", m, "name"), ops, props, None,
                       attrs, sig)
