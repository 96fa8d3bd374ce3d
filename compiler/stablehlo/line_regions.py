"""Generic ops with one region of one-line ops, as JAX prints a scatter (also a sort, a
reduce_window or an all_reduce), read for the line reader (line_reader.py) as the grammar's
generic_op builds them:

    %5 = "stablehlo.scatter"(%0, %1, %2) <{indices_are_sorted = false, ...}> ({
    ^bb0(%a: tensor<f32> loc("scatter-add:"(#loc95)), %b: tensor<f32> loc(...)):
      %6 = stablehlo.add %a, %b : tensor<f32> loc(#loc272)
      stablehlo.return %6 : tensor<f32> loc(#loc271)
    }) : (tensor<256x128xf32>, tensor<8x64x1xi32>, tensor<8x64x128xf32>) -> tensor<256x128xf32>

Anything else (several regions or blocks, a nested region, an attribute dictionary or op line
not read by line_attrs.py and line_records.py) gives None, and the grammar reads the op.
"""

from __future__ import annotations

import functools
import re

from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.import_table import GENERIC
from shardc.stablehlo.line_attrs import read_dict
from shardc.stablehlo.line_records import (
    Place,
    forms,
    read_sig,
    record_at,
    result_tokens,
    split_line,
)
from shardc.stablehlo.records import OpRec, RegionRec, generic_rec
from shardc.stablehlo.tokens import new_token, terminal

_W = r"[ \t]*"
_VALUE = r"%[\w$.\-]+(?:#\d+)?"


class _Forms:
    def __init__(self) -> None:
        values = rf"{_VALUE}(?:{_W},{_W}{_VALUE})*"
        self.open = re.compile(
            rf"{_W}(?P<name>{terminal('STRING')}){_W}\((?P<ops>{_W}{values})?{_W}\){_W}")
        self.label = re.compile(rf"{_W}{terminal('BLOCK_ID')}{_W}\(")
        self.arg = re.compile(
            rf"{_W}(?P<v>{terminal('VALUE')}){_W}:{_W}(?P<t>{terminal('TENSOR_TYPE')})"
            rf"(?:{_W}{terminal('LOC')})?{_W}(?P<sep>[,)])")
        self.label_end = re.compile(rf"{_W}:{_W}$")
        self.close = re.compile(rf"{_W}\}}{_W}\){_W}")
        self.sig = re.compile(rf"{_W}:{_W}(?P<sig>.*?){_W}$")
        self.value = re.compile(_VALUE)


@functools.cache
def _forms() -> _Forms:
    return _Forms()


def read_region_op(lines: list[str], starts: list[int], first: int, last: int,
                   loc_tail: re.Pattern) -> OpRec | None:
    """The record of the generic op on lines `first..last` (module docstring), or None.
    `starts`: where each line starts in the text; `loc_tail`: a line's trailing `loc(...)`."""
    f = _forms()
    line, start, lineno = lines[first], starts[first], first + 1
    head, body_at, _ = split_line(line, loc_tail)
    m = f.open.match(line, body_at)
    if m is None or unescape(m.group("name")) not in GENERIC:
        return None
    pos, props = m.end(), None
    if line.startswith("<{", pos):
        found = read_dict(line, pos, start, lineno, "}>")
        if found is None:
            return None
        props, pos = found
    if line[pos:].strip() != "({":
        return None
    place = Place(start, lineno)
    ops = place.all("VALUE", f.value, m.group("ops"), m.start("ops")) if m.group("ops") else None
    rec = generic_rec(unescape(m.group("name")), place.tok("STRING", m, "name"), ops, props,
                      None, None, ("plain", None, []))
    if head is not None:
        rec.results = result_tokens(head, start, lineno)
    i, args = first + 1, []
    label = f.label.match(lines[i]) if i < last else None
    if label is not None:
        args, pos = [], label.end()
        line, start, lineno = lines[i], starts[i], i + 1
        if not line.startswith(")", pos):
            while True:
                a = f.arg.match(line, pos)
                if a is None:
                    return None
                args.append((new_token("VALUE", a.group("v"), start + a.start("v"), lineno,
                                       a.start("v") + 1),
                             new_token("TENSOR_TYPE", a.group("t"), start + a.start("t"), lineno,
                                       a.start("t") + 1)))
                pos = a.end()
                if a.group("sep") == ")":
                    break
        else:
            pos += 1
        if f.label_end.match(line, pos) is None:
            return None
        i += 1
    body = []
    for k in range(i, last):
        line = lines[k]
        if not line.strip():
            continue
        head, body_at, loc_at = split_line(line, loc_tail)
        op = record_at(line, starts[k], k + 1, head, body_at, loc_at)
        if op is None:
            return None
        body.append(op)
    rec.regions = [RegionRec(args, body)]
    line, start, lineno = lines[last], starts[last], last + 1
    c = f.close.match(line)
    if c is None:
        return None
    head, _, loc_at = split_line(line, loc_tail)
    pos = c.end()
    if line.startswith("{", pos):
        found = read_dict(line, pos, start, lineno)
        if found is None:
            return None
        rec.attrs, pos = found
    s = f.sig.match(line[:loc_at], pos)
    sig = None if head is not None or s is None else read_sig(forms(), Place(start, lineno), s)
    if sig is None:
        return None
    rec.sig = sig
    if loc_at < len(line):
        rec.loc = new_token("LOC", line[loc_at:].rstrip(), start + loc_at, lineno, loc_at + 1)
    return rec
