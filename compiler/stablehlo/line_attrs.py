"""Attribute dictionaries on one line, read as the grammar's `attr_dict`, `properties` and
`attr_value` rules (reader.py) build them, for the line reader (line_reader.py): JAX's
signature dictionaries, a module's `{mhlo.num_partitions = 8 : i32, ...}`, a mesh's
`{stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}]}}` and a generic op's
`<{dimension_numbers = #stablehlo.gather<...>, indices_are_sorted = false, ...}>`.

Values read here: integers (with a `: i32`-like type), strings, booleans, dialect attributes,
`array<...>`, `dense<...>` (with a `: tensor<...>`), lists and dictionaries of them; keys are
bare. Anything else (floats, symbols, unit entries, quoted keys, a key given twice, ...) gives
None, and the grammar reads the dictionary (tests/test_stablehlo_line_reader.py checks that
both build the same module).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.records import AttrRec, DictRec
from shardc.stablehlo.tokens import new_token, terminal

_W = re.compile(r"[ \t]*")


class _Patterns:
    def __init__(self) -> None:
        self.key = re.compile(rf"[ \t]*({terminal('ATTR_KEY')})[ \t]*=[ \t]*")
        # Where a value ends: what may follow it (so `1.5`, `1e3`, `0x1` are not read as ints).
        after = r"(?=[ \t]*[,\]}:])"
        self.int = re.compile(rf"(?!0x)({terminal('INT')}){after}")
        self.type = re.compile(rf"[ \t]*:[ \t]*({terminal('BUILTIN_TYPE')})")
        self.str = re.compile(terminal("STRING"))
        self.bool = re.compile(terminal("BOOL"))
        self.dialect = re.compile(terminal("DIALECT_ATTR"))
        self.array = re.compile(terminal("ARRAY"))
        self.dense = re.compile(terminal("DENSE"))
        self.tensor = re.compile(rf"[ \t]*:[ \t]*({terminal('TENSOR_TYPE')})")


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


class _Reader:
    """One line's dictionaries; `start`: where the line starts in the text, `lineno`: its
    number (for the keys' tokens, located as the lexer locates them)."""

    def __init__(self, line: str, start: int, lineno: int):
        self.line, self.start, self.lineno = line, start, lineno
        self.p = _patterns()

    def entries(self, pos: int, close: str) -> tuple[list[tuple[str, AttrRec, Any]], int] | None:
        """`key = value, ...` from `pos` up to `close`: the entries (key, value, key token)
        and where `close` ends; None for any form not read here."""
        line, out = self.line, []
        pos = _W.match(line, pos).end()
        if line.startswith(close, pos):
            return out, pos + len(close)
        while True:
            m = self.p.key.match(line, pos)
            if m is None:
                return None
            at = m.start(1)
            tok = new_token("ATTR_KEY", m.group(1), self.start + at, self.lineno, at + 1)
            found = self.value(m.end())
            if found is None:
                return None
            value, pos = found
            out.append((m.group(1), value, tok))
            pos = _W.match(line, pos).end()
            if line.startswith(close, pos):
                return out, pos + len(close)
            if not line.startswith(",", pos):
                return None
            pos += 1

    def value(self, pos: int) -> tuple[AttrRec, int] | None:
        """The `attr_value` at `pos` and where it ends."""
        line, p, s = self.line, self.p, self.start
        c = line[pos : pos + 1]
        if c == "[":
            items, at = [], _W.match(line, pos + 1).end()
            if not line.startswith("]", at):
                while True:
                    found = self.value(_W.match(line, at).end())
                    if found is None:
                        return None
                    items.append(found[0])
                    at = _W.match(line, found[1]).end()
                    if line.startswith("]", at):
                        break
                    if not line.startswith(",", at):
                        return None
                    at += 1
            return AttrRec("list", items, s + pos, s + at + 1), at + 1
        if c == "{":
            found = self.entries(pos + 1, "}")
            if found is None:
                return None
            entries, end = found
            return AttrRec("dict", [(k, v, str(t)) for k, v, t in entries], s + pos, s + end), end
        if c == '"':
            m = p.str.match(line, pos)
            return None if m is None else (
                AttrRec("str", unescape(m.group(0)), s + pos, s + m.end()), m.end())
        if c == "#":
            m = p.dialect.match(line, pos)
            return None if m is None else (
                AttrRec("dialect", m.group(0), s + pos, s + m.end()), m.end())
        m = p.int.match(line, pos)
        if m is not None:
            end = m.end()
            t = p.type.match(line, end)
            if t is not None:
                end = t.end()
            return AttrRec("int", int(m.group(1)), s + pos, s + end), end
        m = p.bool.match(line, pos)
        if m is not None:
            return AttrRec("bool", m.group(0) == "true", s + pos, s + m.end()), m.end()
        m = p.array.match(line, pos)
        if m is not None:
            return AttrRec("array", m.group(0), s + pos, s + m.end()), m.end()
        m = p.dense.match(line, pos)
        if m is not None:
            dense = new_token("DENSE", m.group(0), s + pos, self.lineno, pos + 1)
            t, ty, end = p.tensor.match(line, m.end()), None, m.end()
            if t is not None:
                at, end = t.start(1), t.end()
                ty = new_token("TENSOR_TYPE", t.group(1), s + at, self.lineno, at + 1)
            return AttrRec("dense", (dense, ty), s + pos, s + end), end
        return None


def read_dict(line: str, begin: int, start: int, lineno: int,
              close: str = "}") -> tuple[DictRec, int] | None:
    """The dictionary opened at `line[begin]` (`{`, or a generic op's `<{` with `close` `}>`)
    as the grammar's attr_dict builds it, and where it ends; None when it is not read here."""
    found = _Reader(line, start, lineno).entries(begin + len(close), close)
    if found is None:
        return None
    entries, end = found
    rec = DictRec({}, {})
    for key, value, tok in entries:
        if key in rec.entries:  # (the grammar's error)
            return None
        rec.entries[key] = value
        rec.tokens[key] = tok
    return rec, end
