"""The text of Shardy's propagation-debugging attributes, read back: `#sdy.propagation_edges<...>`
and the arrays `sdy.result_propagation_edges` / `sdy.block_arg_propagation_edges` /
`sdy.*_sharding_origins` hold.

    #sdy.propagation_edges<[{step-0 = [{"x" = operand-0 -> [operand-1, result-0]}]},
                            {step-3 = [{"y":(1)2 = result-0 -> [operand-0]}]}]>

`parse_edges(text)` gives its `Step`s (each with its `Edge`s: an axis, a source value and its
target values, `("operand" | "result", index)`); a malformed text is a `VerifyError`.
`split_array("[a, b]")` gives an array attribute's elements. Shardy's propagation passes write
these attributes (passes/propagation/shardy_debug.py writes shardc's); the StableHLO reader
verifies them (compiler/stablehlo/propagation_edges.py); both read them with this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shardc.ir.diagnostics import VerifyError
from shardc.ir.mesh import AxisRef

PREFIX = "#sdy.propagation_edges<"
_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<ref>(?:operand|result)-\d+)|(?P<step>step-?-?\d+)'
    r"|(?P<num>-?\d+)|(?P<p>->|[\[\]{}(),:=<>]))"
)


@dataclass(frozen=True)
class Edge:
    """`{"x":(1)2 = operand-0 -> [result-0]}`: `axis` is the axis name; `sub_axis` the
    (pre-size, size) of a sub-axis, None for a whole axis."""

    axis: str
    source: tuple[str, int]
    targets: tuple[tuple[str, int], ...]
    sub_axis: tuple[int, int] | None = None

    @property
    def axis_ref(self) -> AxisRef:
        if self.sub_axis is None:
            return AxisRef(self.axis)
        return AxisRef(self.axis, self.sub_axis[0], self.sub_axis[1])


@dataclass(frozen=True)
class Step:
    index: int
    edges: tuple[Edge, ...]


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise VerifyError(f"unexpected text '{text[pos:pos + 12].strip()}'")
            self.tokens.append((m.lastgroup or "", m.group(m.lastgroup or 0)))
            pos = m.end()
        self.i = 0

    def next(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise VerifyError("unexpected end of the attribute")
        self.i += 1
        return self.tokens[self.i - 1]

    def expect(self, punct: str) -> None:
        kind, text = self.next()
        if kind != "p" or text != punct:
            raise VerifyError(f"expected '{punct}', found '{text}'")

    def accept(self, punct: str) -> bool:
        if self.i < len(self.tokens) and self.tokens[self.i] == ("p", punct):
            self.i += 1
            return True
        return False

    def number(self) -> int:
        kind, text = self.next()
        if kind != "num":
            raise VerifyError(f"expected a number, found '{text}'")
        return int(text)

    def ref(self) -> tuple[str, int]:
        kind, text = self.next()
        if kind != "ref":
            raise VerifyError(f"expected operand-N or result-N, found '{text}'")
        name, _, index = text.partition("-")
        return name, int(index)

    def edge(self) -> Edge:
        self.expect("{")
        kind, axis = self.next()
        if kind != "str":
            raise VerifyError(f"expected an axis name, found '{axis}'")
        sub = None
        if self.accept(":"):  # a sub-axis "x":(1)2
            self.expect("(")
            pre = self.number()
            self.expect(")")
            sub = (pre, self.number())
        self.expect("=")
        source = self.ref()
        self.expect("->")
        self.expect("[")
        targets = [self.ref()]
        while self.accept(","):
            targets.append(self.ref())
        self.expect("]")
        self.expect("}")
        return Edge(axis[1:-1], source, tuple(targets), sub)

    def step(self) -> Step:
        self.expect("{")
        kind, text = self.next()
        if kind != "step":
            raise VerifyError(f"expected step-N, found '{text}'")
        index = int(text[len("step-"):])
        self.expect("=")
        self.expect("[")
        edges = [] if self.accept("]") else None
        if edges is None:
            edges = [self.edge()]
            while self.accept(","):
                edges.append(self.edge())
            self.expect("]")
        self.expect("}")
        return Step(index, tuple(edges))

    def steps(self) -> list[Step]:
        self.expect("[")
        if self.accept("]"):
            return []
        out = [self.step()]
        while self.accept(","):
            out.append(self.step())
        self.expect("]")
        return out

    def at_end(self) -> bool:
        return self.i == len(self.tokens)


def parse_edges(text: str) -> list[Step]:
    """The steps of `#sdy.propagation_edges<[...]>`; `VerifyError` when malformed."""
    text = text.strip()
    if not text.startswith(PREFIX) or not text.endswith(">"):
        raise VerifyError("expected #sdy.propagation_edges<[...]>")
    reader = _Reader(text[len(PREFIX):-1])
    steps = reader.steps()
    if not reader.at_end():
        raise VerifyError("unexpected text after the propagation edges")
    return steps


def split_array(text: str) -> list[str]:
    """The elements of `[a, b]` at bracket depth 0, outside strings (an arrow's '>' closes
    nothing); `VerifyError` if `text` is not an array."""
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise VerifyError("expected an array [...]")
    out, depth, start, i = [], 0, 1, 1
    while i < len(body) - 1:
        c = body[i]
        if c == '"':
            i += 1
            while i < len(body) - 1 and body[i] != '"':
                i += 2 if body[i] == "\\" else 1
        elif c in "[{<(":
            depth += 1
        elif c in "]}>)" and not (c == ">" and body[i - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            out.append(body[start:i].strip())
            start = i + 1
        i += 1
    last = body[start:-1].strip()
    if last or out:
        out.append(last)
    return out
