"""The line reader's (line_reader.py) module header, function signatures and attribute
dictionaries: each split with regular expressions built on the grammar's terminals, into the
records the grammar's rules build (`FuncRec`, `ArgRec`, `DictRec`), located in the whole text.

    func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<...>}) -> ...

A dictionary is read by line_attrs.py when it can, else by the grammar, once per distinct
text; a mesh declaration is read here when its dictionary is.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from shardc.ir.line_values import Unsupported, dict_end
from shardc.stablehlo.builder import ModuleBuilder
from shardc.stablehlo.line_attrs import read_dict
from shardc.stablehlo.records import ArgRec, DictRec, FuncRec, MeshRec, ModuleRec, ResultsRec
from shardc.stablehlo.tokens import LineToken as Token
from shardc.stablehlo.tokens import new_token, terminal

_VALUE = r"%[\w$.\-]+"
_FUNC = re.compile(r"([ \t]*)func\.func(?:[ \t]+(public|private|nested))?[ \t]+"
                   r"(@[A-Za-z_][\w$.\-]*)[ \t]*\(")
_SEP = re.compile(r"[ \t]*(,|\))[ \t]*")
_MODULE = re.compile(r"[ \t]*module(?:[ \t]+(@[A-Za-z_][\w$.\-]*))?[ \t]*"
                     r"(attributes[ \t]*)?")
_MESH_AXIS = re.compile(r'[ \t]*("(?:[^"\\]|\\.)*")[ \t]*=[ \t]*(-?\d+)[ \t]*([,\]])')
_DEVICE_IDS = re.compile(r"[ \t]*,[ \t]*device_ids[ \t]*=[ \t]*\[([-\d, \t]*)\]")
_BLANKS = re.compile(r"[ \t]*")
_INT = re.compile(r"-?\d+")


class Patterns:
    """The expressions built on the grammar's own terminals (a `loc(...)`, a type, a dialect
    attribute), so that this reader and the grammar agree on where each ends."""

    def __init__(self) -> None:
        loc, ty = terminal("LOC"), terminal("TENSOR_TYPE")
        self.loc_tail = re.compile(rf"[ \t]+({loc})[ \t]*$")
        self.loc_alias = re.compile(rf"(#loc\d*)[ \t]*=[ \t]*({loc})[ \t]*$")
        self.loc_at = re.compile(rf"{loc}[ \t]*")
        self.close = re.compile(rf"[ \t]*\}}(?:[ \t]*({loc}))?[ \t]*$")
        self.arg = re.compile(rf"[ \t]*({_VALUE})[ \t]*:[ \t]*({ty})[ \t]*")
        self.type_at = re.compile(rf"[ \t]*({ty})[ \t]*")
        self.mesh = re.compile(rf"[ \t]*({terminal('MESH')})[ \t]+({terminal('SYMBOL')})[ \t]*="
                               r"[ \t]*<[ \t]*\[")


@functools.cache
def patterns() -> Patterns:
    return Patterns()


def read_item(rule: str, text: str, begin: int, end: int, line: int, line_start: int) -> Any:
    """The grammar's record of one item the line reader does not read itself (reader.py's
    `read_item`; the first call loads lark: tokens.py)."""
    from shardc.stablehlo.reader import read_item as grammar_item

    return grammar_item(rule, text, begin, end, line, line_start)



class HeaderReader:
    """The header-reading half of `LineReader` (line_reader.py), which sets these up."""

    text: str
    lines: list[str]
    starts: list[int]
    p: Patterns
    b: ModuleBuilder
    dicts: dict[str, DictRec]

    def _body_lines(self, i: int, f: FuncRec) -> int:
        raise NotImplementedError

    def _item(self, rule: str, i: int, cls: type) -> Any:
        start = self.starts[i]
        rec = read_item(rule, self.text, start, start + len(self.lines[i]), i + 1, start)
        if not isinstance(rec, cls):
            raise Unsupported(rule)
        return rec

    def _mesh(self, i: int) -> MeshRec:
        """`sdy.mesh @name = <["a"=2, ...], device_ids=[...]> {attrs} loc(...)` as the
        grammar's mesh_decl builds it (another form, by the grammar)."""
        line, start, lineno = self.lines[i], self.starts[i], i + 1

        def tok(kind: str, m: re.Match, group: int) -> Token:
            at = m.start(group)
            return new_token(kind, m.group(group), start + at, lineno, at + 1)

        m = self.p.mesh.match(line)
        if m is None:
            return self._item("mesh_decl", i, MeshRec)
        rec = MeshRec()
        rec.tok, rec.name, rec.dialect, rec.axes = tok("MESH", m, 1), tok("SYMBOL", m, 2), None, []
        pos = _BLANKS.match(line, m.end()).end()
        if line.startswith("]", pos):
            pos += 1
        else:
            while True:
                a = _MESH_AXIS.match(line, pos)
                if a is None:
                    return self._item("mesh_decl", i, MeshRec)
                name = tok("STRING", a, 1)
                rec.axes.append((name, int(a.group(2)), name))
                pos = a.end()
                if a.group(3) == "]":
                    break
        rec.device_ids = None
        d = _DEVICE_IDS.match(line, pos)
        if d is not None:
            ids = [x.strip() for x in d.group(1).split(",")] if d.group(1).strip() else []
            if not all(_INT.fullmatch(x) for x in ids):
                return self._item("mesh_decl", i, MeshRec)
            rec.device_ids, pos = [int(x) for x in ids], d.end()
        pos = _BLANKS.match(line, pos).end()
        if not line.startswith(">", pos):
            return self._item("mesh_decl", i, MeshRec)
        rec.attrs, pos = None, _BLANKS.match(line, pos + 1).end()
        if line.startswith("{", pos):
            found = read_dict(line, pos, start, lineno)
            if found is None:
                return self._item("mesh_decl", i, MeshRec)
            rec.attrs, pos = found
        loc = self.p.loc_at.match(line, _BLANKS.match(line, pos).end())
        if loc is not None:
            pos = loc.end()
        if line[pos:].strip():
            return self._item("mesh_decl", i, MeshRec)
        return rec

    def _module_header(self, i: int) -> ModuleRec:
        line = self.lines[i]
        m = _MODULE.match(line)
        if m is None:
            raise Unsupported("module")
        pos, attrs = m.end(), None
        if m.group(2):
            if not line.startswith("{", pos):
                raise Unsupported("module attributes")
            end = dict_end(line, pos)
            attrs = self._dict(i, pos, end)
            pos = end
        if line[pos:].strip() != "{":
            raise Unsupported("module")
        name = None
        if m.group(1):
            name = new_token("SYMBOL", m.group(1), self.starts[i] + m.start(1), i + 1,
                             m.start(1) + 1)
        return ModuleRec(name, attrs, [])

    def _dict(self, i: int, begin: int, end: int) -> DictRec:
        """The attribute dictionary `lines[i][begin:end]`, as the grammar reads it."""
        text = self.lines[i][begin:end]
        found = self.dicts.get(text)
        if found is not None:
            # Its spans point at the first copy of the same text, which reads the same.
            return DictRec(dict(found.entries), dict(found.tokens))
        read = read_dict(self.lines[i], begin, self.starts[i], i + 1)
        found = read[0] if read is not None and read[1] == end else None
        if found is None:
            start = self.starts[i]
            found = read_item("attr_dict", self.text, start + begin, start + end, i + 1, start)
        self.dicts[text] = found
        return DictRec(dict(found.entries), dict(found.tokens))

    def _function(self, i: int) -> tuple[FuncRec, int]:
        """The header at line `i` (the grammar's `func` rule, up to the body) and where the
        body's lines are; returns the record and the line after the function."""
        line, start, lineno = self.lines[i], self.starts[i], i + 1
        m = _FUNC.match(line)
        if m is None:
            raise Unsupported("function header")

        def tok(kind: str, group: int) -> Token:
            at = m.start(group)
            return new_token(kind, m.group(group), start + at, lineno, at + 1)

        f = FuncRec()
        at = m.start(0) + len(m.group(1))
        f.tok = new_token("FUNC_FUNC", "func.func", start + at, lineno, at + 1)
        f.visibility = tok("VISIBILITY", 2) if m.group(2) else None
        f.name = tok("SYMBOL", 3)
        f.args, pos = [], m.end()
        if not line.startswith(")", pos):
            while True:
                a = self.p.arg.match(line, pos)
                if a is None:
                    raise Unsupported("argument")
                at, at2 = a.start(1), a.start(2)
                value = new_token("VALUE", a.group(1), start + at, lineno, at + 1)
                ty = new_token("TENSOR_TYPE", a.group(2), start + at2, lineno, at2 + 1)
                attrs, pos, loc = self._attrs_loc(i, a.end())
                f.args.append(ArgRec(value, ty, attrs, loc))
                sep = _SEP.match(line, pos)
                if sep is None:
                    raise Unsupported("argument list")
                pos = sep.end()
                if sep.group(1) == ")":
                    break
        else:
            pos += 1
        f.results = ResultsRec()
        rest = line[pos:].lstrip()
        pos = len(line) - len(rest)
        if rest.startswith("->"):
            pos += 2
            single = self.p.type_at.match(line, pos)
            if single is not None:
                f.results.append((self._type_token(i, single), None))
                pos = single.end()
            else:
                pos = self._results(i, line, pos, f.results)
        f.attrs = None
        rest = line[pos:].strip()
        if rest.startswith("attributes"):
            pos = line.index("attributes", pos) + len("attributes")
            pos += len(line[pos:]) - len(line[pos:].lstrip())
            if not line.startswith("{", pos):
                raise Unsupported("function attributes")
            end = dict_end(line, pos)
            f.attrs = self._dict(i, pos, end)
            rest = line[end:].strip()
        if rest != "{":
            raise Unsupported("function header")
        f.ops = []
        return f, self._body_lines(i + 1, f)

    def _type_token(self, i: int, m: re.Match) -> Token:
        return new_token("TENSOR_TYPE", m.group(1), self.starts[i] + m.start(1), i + 1,
                     m.start(1) + 1)

    def _attrs_loc(self, i: int, pos: int) -> tuple[DictRec | None, int, str | None]:
        """An optional attribute dictionary, then an optional `loc(...)` (its text), at `pos`."""
        line = self.lines[i]
        attrs = None
        if line.startswith("{", pos):
            end = dict_end(line, pos)
            attrs = self._dict(i, pos, end)
            pos = _BLANKS.match(line, end).end()  # (no copy of the line's rest: a header
            # can hold hundreds of arguments on one line)
        loc = self.p.loc_at.match(line, pos)
        if loc is None:
            return attrs, pos, None
        return attrs, loc.end(), loc.group(0).strip()

    def _results(self, i: int, line: str, pos: int, out: ResultsRec) -> int:
        """`(type {attrs}, ...)` after a header's `->`."""
        rest = line[pos:].lstrip()
        pos = len(line) - len(rest)
        if not rest.startswith("("):
            raise Unsupported("results")
        pos += 1
        if line[pos:].lstrip().startswith(")"):
            return line.index(")", pos) + 1
        while True:
            t = self.p.type_at.match(line, pos)
            if t is None:
                raise Unsupported("result type")
            attrs, pos, _ = self._attrs_loc(i, t.end())
            out.append((self._type_token(i, t), attrs))
            sep = _SEP.match(line, pos)
            if sep is None:
                raise Unsupported("result list")
            pos = sep.end()
            if sep.group(1) == ")":
                return pos

