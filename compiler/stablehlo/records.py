"""The light records the reader builds while parsing (no parse tree): what the builder consumes.

    %0 = stablehlo.add %a, %b : tensor<8xf32>
        -> OpRec(form="simple", name="stablehlo.add", operands=[%a, %b], sig=..., results=[(%0, 1)])

Tokens stay `Token`s (lark's, or the line reader's: tokens.py) so every later error can point
at its line and column; attribute values keep their source span (`AttrRec.start`/`end`) so
uninterpreted ones are copied verbatim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.stablehlo.tokens import is_token

if TYPE_CHECKING:
    from lark import Token  # (or the line reader's: tokens.py)



class AttrRec:
    """A parsed attribute value: its kind, a decoded value and its source span."""

    __slots__ = ("kind", "value", "start", "end")

    def __init__(self, kind: str, value: Any, start: int, end: int):
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end


class DictRec:
    """A parsed `{key = value, ...}`: values are `AttrRec` (None for a unit attribute)."""

    __slots__ = ("entries", "tokens")

    def __init__(self, entries: dict[str, AttrRec | None], tokens: dict[str, Token]):
        self.entries = entries
        self.tokens = tokens


class RegionRec:
    __slots__ = ("args", "ops")

    def __init__(self, args: list[tuple[Token, Token]], ops: list[OpRec]):
        self.args = args
        self.ops = ops


class OpRec:
    __slots__ = ("form", "name", "tok", "results", "operands", "extra", "attrs", "sig",
                 "regions", "loc")

    def __init__(self, form: str, tok: Token, operands: list[Token], extra: dict[str, Any],
                 attrs: DictRec | None, sig: tuple | None, name: str | None = None):
        self.form = form
        self.name = name if name is not None else str(tok)
        self.tok = tok
        self.results: list[tuple[Token, int]] = []
        self.operands = operands
        self.extra = extra
        self.attrs = attrs
        self.sig = sig
        self.regions: list[RegionRec] = []
        self.loc: Token | None = None


class PairRec:
    __slots__ = ("first", "second")

    def __init__(self, first: Any, second: Any):
        self.first = first
        self.second = second


class ArgRec:
    __slots__ = ("tok", "type", "attrs", "loc")

    def __init__(self, tok: Token, type_tok: Token, attrs: DictRec | None,
                 loc: str | None = None):
        self.tok = tok
        self.type = type_tok
        self.attrs = attrs
        self.loc = loc  # its `loc(...)` text, if written (JAX: the argument's pytree path)


class ResultsRec(list):
    """Function results: `(type token, attrs)` pairs."""


class FuncRec:
    __slots__ = ("tok", "visibility", "name", "args", "results", "attrs", "ops", "loc")


def generic_rec(name: str, tok: Token, operands: list[Token] | None, props: DictRec | None,
                regions: list[RegionRec] | None, attrs: DictRec | None, sig: tuple) -> OpRec:
    """The record of `"dialect.op"(operands) <{props}> ({regions}) {attrs} : sig` (the
    grammar's generic_op, and the line reader's)."""
    rec = OpRec("generic", tok, operands or [], {"props": props}, attrs, sig, name=name)
    rec.regions = regions or []
    return rec


class MeshRec:
    __slots__ = ("tok", "name", "axes", "device_ids", "dialect", "attrs")


class ModuleRec:
    __slots__ = ("name", "attrs", "items")

    def __init__(self, name: Token | None, attrs: DictRec | None, items: list):
        self.name = name
        self.attrs = attrs
        self.items = items


# ----- picking pieces out of a grammar rule's children (for the reader callbacks) -------------


def value_tokens(c: list) -> list[Token]:
    """The `%name` tokens among a rule's children."""
    return [t for t in c if is_token(t) and t.type == "VALUE"]


def first_of(c: list, cls: type) -> Any:
    """The first child that is a `cls`, else None."""
    for x in c:
        if isinstance(x, cls):
            return x
    return None
