"""`Cause`: why a pass made an op (ir/core.py's `Operation.cause`)."""

from __future__ import annotations


class Cause:
    """Why a pass made an op: passes subclass it with frozen dataclasses (e.g. the reshard
    insert-reshards put on an operand, passes/reshard/reshards/provenance.py). It is not part of
    the IR's meaning (never printed or compared); an op a rewrite derives from another inherits
    it with the location (`Operation.at`), so a collective still knows which reshard it lowers."""

    __slots__ = ()
