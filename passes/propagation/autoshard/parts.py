"""The parts of the integer program shared by its builders (formulation.py, memory.py).

    EdgeBlock   the pairwise cells of the edges between two groups with several choices
    Linear      a vector over one group's choices
    Term        bytes one device holds for one thing, as a linear function of the variables
    Row         one point of the program: a weighted sum of terms
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TermKey = tuple


@dataclass
class EdgeBlock:
    """The pairwise part of the edges between a producer group and a consumer group."""

    src_group: int
    dst_group: int
    rows: list[list[int]]  # producer choices of each row class
    cols: list[list[int]]  # consumer choices of each column class
    comm: np.ndarray  # bytes per device of the reshards of one occurrence (R x C)
    ring: np.ndarray
    held: np.ndarray  # bytes their targets hold while the consumer runs
    freed: np.ndarray  # minus the bytes of a source that is dead by then (<= 0)
    peak: np.ndarray  # bytes their collectives add while they run
    offset: int = 0  # index of e[0, 0]
    count: int = 0  # occurrences (tied blocks)

    @property
    def size(self) -> int:
        return len(self.rows) * len(self.cols)


@dataclass
class Linear:
    """A vector over one group's choices."""

    group: int
    values: np.ndarray


@dataclass(frozen=True)
class Term:
    """Bytes one device holds for one thing (a value, a reshard's buffer) as a function of the
    choice: `coef . v[index] + const`."""

    index: np.ndarray
    coef: np.ndarray
    const: float

    def value(self, v: np.ndarray) -> float:
        return float(self.coef @ v[self.index]) + self.const if len(self.index) else self.const


@dataclass(frozen=True)
class Row:
    """One point of the program: `sum counts[i] * terms[ids[i]]` bytes live."""

    ids: np.ndarray
    counts: np.ndarray
