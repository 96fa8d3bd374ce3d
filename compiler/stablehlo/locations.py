"""MLIR `loc(...)` text -> the `file:line:col` it points at (through aliases, callsites, fusions).

    #loc3 = loc("model.py":12:8)
    loc(callsite(#loc1 at #loc3))   -> Location("model.py", 12, 8)
"""

from __future__ import annotations

import re

from shardc.ir.diagnostics import Location
from shardc.stablehlo.attributes import unescape


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


class Locations:
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

    def label(self, loc_text: str, depth: int = 0) -> str | None:
        """The name a `loc("name")` gives (through aliases), else None: JAX writes a function
        argument's pytree path so (`loc("params['w1']")`)."""
        body = loc_text.strip()
        if body.startswith("loc(") and body.endswith(")"):
            body = body[4:-1].strip()
        if body.startswith("#loc") and depth < 64:
            target = self.aliases.get(body)
            return self.label(target, depth + 1) if target else None
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', body)
        return unescape(m.group(0)) if m is not None and m.group(1) else None

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
            return Location(unescape(m.group(1)), int(m.group(2)), int(m.group(3)))
        if body.startswith('"'):
            end = re.match(r'"(?:[^"\\]|\\.)*"', body)
            rest = body[end.end() :].strip() if end else ""
            if rest.startswith("(") and rest.endswith(")"):
                return self.resolve(rest[1:-1], depth + 1)
        return None
