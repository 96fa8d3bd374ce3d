"""Side effects: which ops stay though nothing uses their results, and erasing those that need
not (`erase_dead`, the dead-code rule of `canonicalize` and of the import passes that rewrite)."""

from __future__ import annotations

from shardc.ir.core import Operation

# Ops that must stay even when nothing uses their results.
SIDE_EFFECTS = frozenset({"return", "custom_call", "sharding_group", "manual_computation"})


def erase_dead(op: Operation) -> bool:
    if op.name in SIDE_EFFECTS or not op.results or any(r.uses for r in op.results):
        return False
    op.erase()
    return True
