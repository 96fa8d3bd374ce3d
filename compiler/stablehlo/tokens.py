"""What the line reader (line_reader.py) needs of the grammar without loading lark: the
grammar's terminals' regular expressions, read from grammar.lark's own text (the one source of
truth), and tokens located in the text as lark's lexer makes them.

lark costs ~0.07 CPU s to import and to build its LALR parser (from its cache): several percent
of `shardc.jit`'s first call on a small model. A text the line reader reads in full never loads
it; anything else falls back to the grammar (reader.py), which does.
"""

from __future__ import annotations

import functools
import re
import sys
from ast import literal_eval
from importlib import resources
from typing import Any


class LineToken(str):
    """A token as lark's `Token` holds it (a `str` with its terminal's name and where it
    starts), made by the line reader. The builder and the op families read the same
    attributes of either (`is_token` accepts both)."""

    type: str
    start_pos: int | None
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    end_pos: int | None

    @property
    def value(self) -> str:
        return str.__str__(self)


def new_token(kind: str, value: str, start_pos: int | None = None, line: int | None = None,
              column: int | None = None) -> Any:
    """A token of terminal `kind` spelling `value`, located (as lark's lexer locates it)."""
    tok = str.__new__(LineToken, value)
    tok.type, tok.start_pos, tok.line, tok.column = kind, start_pos, line, column
    tok.end_line = tok.end_column = tok.end_pos = None
    return tok


def is_token(x: object) -> bool:
    """Whether `x` is a token: the line reader's or lark's (loaded only if the grammar ran)."""
    if isinstance(x, LineToken):
        return True
    lark = sys.modules.get("lark")
    return lark is not None and isinstance(x, lark.Token)


_TERMINAL = re.compile(r"^([A-Z_][A-Z0-9_]*)(?:\.-?\d+)?:[ \t]*/(.*)/[ \t]*$", re.M)


def _unescape(body: str) -> str:
    """A `/regex/` literal's text as lark reads it (lark.load_grammar.eval_escaping): `\\n`,
    `\\t`, ... become the characters; any other escape is kept for the regex engine."""
    w, chars = "", iter(body)
    for c in chars:
        w += c
        if c == "\\":
            c2 = next(chars)
            if c2 == "\\":
                w += "\\\\"
            elif c2 not in "Uuxnftr":
                w += "\\"
            w += c2
    w = w.replace('\\"', '"').replace("'", "\\'")
    return literal_eval(f"u'''{w}'''")


@functools.cache
def terminals() -> dict[str, str]:
    """The regular expression of each `NAME: /regex/` terminal of grammar.lark (none has
    flags), as lark's `pattern.to_regexp()` gives it (tests/test_stablehlo_line_reader.py)."""
    grammar = resources.files("shardc.stablehlo").joinpath("grammar.lark").read_text()
    return {m.group(1): _unescape(m.group(2)) for m in _TERMINAL.finditer(grammar)}


def terminal(name: str) -> str:
    """The regular expression of the grammar's terminal `name`."""
    return terminals()[name]
