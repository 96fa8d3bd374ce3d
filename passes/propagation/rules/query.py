"""`RuleQuery`: everything a rule depends on, as one hashable value (the memoisation key).

Rules are pure functions of the op name, the operand/result shapes and a few attributes, so
`rule_for` can build each distinct rule once even on graphs with 100k ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RuleQuery:
    """`name`, operand and result shapes, and the attributes (and op-context facts) the rule
    reads, as sorted `(key, value)` pairs of hashable values."""

    name: str
    operands: tuple[Shape, ...]
    results: tuple[Shape, ...]
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, key: str) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        raise KeyError(f"rule query for '{self.name}' has no attribute '{key}'")
