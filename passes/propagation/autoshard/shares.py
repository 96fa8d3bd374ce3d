"""A value's reshard to one layout, priced once however many consumers read it in that layout.

    plan = share_plan(graph, model)          # value -> the (source, target) pairs consumers share
    shares = build_shares(...)               # one Share per value (tied values: one, counted)
    attach_shares(problem)                   # z columns after the x and edge columns
    fill_shares(problem, v)                  # z of a plan: 1 where some consumer reads the pair

`write_choice` (apply.py) puts one `sharding_constraint` per value and layout before the first
consumer that needs it, and the later consumers read that one: the reshard happens once. An
edge prices the reshards its own consumer needs, so a value that several consumers read in the
same layout would be priced once per consumer (the NNX training step's weights, gathered for the
forward and the backward matmul, were over-estimated by 26-36%). For a pair (source layout `s`,
target layout `T`) that two or more consumers of a value may need, the edges price nothing and
a continuous `z[s, T]` in [0, 1] pays the reshard once: `z >= P_i` for each consumer `i`, where
`P_i` is the indicator that the producer makes `s` and consumer `i` needs `T`, a sum of the
consumer's edge cells (or of `x` where the edge is linear in one group). With `x` binary and the
objective minimised, `z` is the largest `P_i`: 1 exactly when some consumer reads the value in
`T` from `s`, so the objective is the compiled program's bytes. Memory is unchanged: each
consumer's row still holds the target buffer while it runs.

Only consumers `write_choice` shares are pooled: ops it writes constraints for (not a user's
`sharding_constraint`/`reshard`, whose result is the reshard, nor a fixed op, which
`insert-reshards` feeds by itself), and never returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shardc.ir.mapping import NamedMapping
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.propagation.autoshard.costs import UNPLANNABLE, CostModel
from shardc.passes.propagation.autoshard.graph import RESHARDING, CostGraph, NodeKind, Use
from shardc.passes.propagation.autoshard.parts import Term

Pair = tuple[NamedMapping, NamedMapping]  # (source layout, target layout)


@dataclass
class Share:
    """One (source, target) reshard of a value that several consumers may read: `z` pays
    `comm`/`ring` per occurrence, `count` occurrences (tied values), and `z >= P` for each
    `P` in `reads`."""

    comm: float
    ring: float
    count: int
    reads: list[Term] = field(default_factory=list)
    column: int = -1  # index of z


def pooled(u: Use) -> bool:
    """The uses whose reshards `write_choice` shares (module docstring)."""
    c = u.consumer
    return c.kind is not NodeKind.FIXED and not (c.op is not None and c.op.name in RESHARDING)


def share_plan(graph: CostGraph, model: CostModel) -> dict[tuple[int, int], tuple[Pair, ...]]:
    """Per value (producer node, result): the pairs two or more of its pooled consumers may
    read, that move bytes and that the planner can lower (the unplannable stay on the edges,
    which forbid them)."""
    uses: dict[tuple[int, int], list[Use]] = {}
    for u in graph.uses:
        if pooled(u):
            uses.setdefault((u.producer.index, u.result), []).append(u)
    plan: dict[tuple[int, int], tuple[Pair, ...]] = {}
    for (p, k), us in uses.items():
        if len(us) < 2:
            continue
        seen: dict[NamedMapping, int] = {}
        for u in us:
            for t in dict.fromkeys(s.operands[i] for s in u.consumer.strategies
                                   for i in u.operands):
                seen[t] = seen.get(t, 0) + 1
        targets = [t for t, n in seen.items() if n > 1]
        if not targets:
            continue
        producer = graph.nodes[p]
        v = producer.values[k]
        pairs = []
        for s in dict.fromkeys(st.results[k] for st in producer.strategies):
            for t in targets:
                if same_layout(s, t):
                    continue
                r = model.reshard(v.type.shape, v.type.dtype, s, t)
                if 0 < r.comm < UNPLANNABLE or 0 < r.ring < UNPLANNABLE:
                    pairs.append((s, t))
        if pairs:
            plan[(p, k)] = tuple(pairs)
    return plan


class Hits:
    """Per pair of one value: 1 if a consumer needing `targets` from a producer making `src`
    reads it (`hits(src, targets)`)."""

    def __init__(self, pairs: tuple[Pair, ...]) -> None:
        self.size = len(pairs)
        self.index: dict[NamedMapping, dict[NamedMapping, int]] = {}
        for j, (s, t) in enumerate(pairs):
            self.index.setdefault(s, {})[t] = j

    def __call__(self, src: NamedMapping, targets: tuple) -> np.ndarray:
        out = np.zeros(self.size)
        mine = self.index.get(src)
        if mine:
            for t in targets:
                j = mine.get(t)
                if j is not None:
                    out[j] = 1.0
        return out


def attach_shares(problem) -> None:
    """Give each share its `z` column after the problem's variables, with its cost."""
    n = problem.num_vars
    comm, ring = [problem.comm], [problem.ring]
    for s in problem.shares:
        s.column = n
        n += 1
        comm.append(np.array([s.comm * s.count]))
        ring.append(np.array([s.ring * s.count]))
    if n == problem.num_vars:
        return
    problem.forbidden = np.concatenate([problem.forbidden, np.zeros(n - problem.num_vars, bool)])
    problem.comm, problem.ring = np.concatenate(comm), np.concatenate(ring)
    problem.num_vars = n


def fill_shares(problem, v: np.ndarray) -> None:
    """Set each `z` of point `v` to the largest of its reads (a plan's value)."""
    for s in problem.shares:
        v[s.column] = min(1.0, max((t.value(v) for t in s.reads), default=0.0))


def share_rows(problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows `z - P >= P.const` as (row, column, value) triplets and lower bounds."""
    r, c, val, lower = [], [], [], []
    i = 0
    for s in problem.shares:
        for t in s.reads:
            r.append(np.full(1 + len(t.index), i))
            c.append(np.concatenate([[s.column], t.index]).astype(np.int64))
            val.append(np.concatenate([[1.0], -t.coef]))
            lower.append(t.const)
            i += 1
    if not r:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    return np.concatenate(r), np.concatenate(c), np.concatenate(val), np.array(lower)
