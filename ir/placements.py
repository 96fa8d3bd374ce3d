"""Mesh-axis-indexed placements (PyTorch DTensor style): one per mesh axis.

`Replicated()` every device along the axis holds the same data; `Sharded(dim)` the tensor's `dim`
is split along the axis; `Partial(op)` each device holds a partial value awaiting reduction `op`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class ReduceOp(enum.Enum):
    """How partial (unreduced) values combine."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    AND = "and"  # logical for booleans, bitwise for integers (StableHLO's reduce with `and`)
    OR = "or"

    def combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Element-wise combination of two partial results."""
        if self is ReduceOp.SUM:
            return a + b
        if self is ReduceOp.MAX:
            return np.maximum(a, b)
        if self is ReduceOp.MIN:
            return np.minimum(a, b)
        if self is ReduceOp.AND:
            return a & b
        if self is ReduceOp.OR:
            return a | b
        return a * b

    @classmethod
    def parse(cls, text: str) -> ReduceOp:
        aliases = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}
        return cls(aliases.get(text, text))


class Placement:
    """Base of the three placements."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Replicated(Placement):
    def __str__(self) -> str:
        return "Replicated()"


@dataclass(frozen=True, slots=True)
class Sharded(Placement):
    dim: int

    def __str__(self) -> str:
        return f"Sharded({self.dim})"


@dataclass(frozen=True, slots=True)
class Partial(Placement):
    op: ReduceOp = ReduceOp.SUM

    def __str__(self) -> str:
        return f"Partial({self.op.value})"
