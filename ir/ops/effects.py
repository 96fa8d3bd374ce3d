"""Side effects: which ops stay though nothing uses their results, and erasing those that need
not (`erase_dead`, the dead-code rule of `canonicalize` and of the import passes that rewrite)."""

from __future__ import annotations

from shardc.ir.core import Operation

# Ops that must stay even when nothing uses their results.
SIDE_EFFECTS = frozenset({"return", "custom_call", "sharding_group", "manual_computation"})


def is_dead(op: Operation) -> bool:
    """Whether `op` may go: no side effects, and results, none of them used."""
    results = op.results
    if len(results) == 1:  # (the common case, without a generator)
        return not results[0].uses and op.name not in SIDE_EFFECTS
    return bool(results) and op.name not in SIDE_EFFECTS and not any(r.uses for r in results)


def erase_dead(op: Operation) -> bool:
    if not is_dead(op):
        return False
    op.erase()
    return True
