"""`RuleMemo`: a bounded memo of a pure function of an op's sharding rule and its tensors'
layouts (insert-reshards' plan of an op, the layout a tensor gets from its factors, spmd's
locality check). A model's layers repeat the same ops on the same layouts, so most calls were
made before.

Keyed by the rule's identity (rules are shared: registry.py builds each distinct one once) and
the caller's key; each entry keeps its rule alive, so an id is never reused while its entry
stands. The table is cleared when full.
"""

from __future__ import annotations

from typing import Any

from shardc.ir.bounded import BoundedTable
from shardc.passes.propagation.rules.rule import OpShardingRule

MISSING: Any = object()


class RuleMemo:
    def __init__(self, size: int = 1 << 14):
        self.table = BoundedTable(size)  # (id(rule), key) -> (rule, value)

    def get(self, rule: OpShardingRule, key: tuple) -> Any:
        """The value stored for (`rule`, `key`), or `MISSING`."""
        hit = self.table.get((id(rule), key))
        return hit[1] if hit is not None and hit[0] is rule else MISSING

    def put(self, rule: OpShardingRule, key: tuple, value: Any) -> None:
        self.table.put((id(rule), key), (rule, value))
