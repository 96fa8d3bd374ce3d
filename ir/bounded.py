"""`BoundedTable`: a memo dict that empties itself when full. The compiler's memos (interned
mappings, built rules, device groups, RuleMemo) hold pure results a model's repeated layers
ask for again and again; forgetting them only costs recomputing, so a full table is cleared
rather than evicted entry by entry."""

from __future__ import annotations

from typing import Any


class BoundedTable(dict):
    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> Any:
        """Store `value` under `key` (emptying the table first when it is full); `value`."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
