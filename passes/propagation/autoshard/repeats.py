"""Repeated layers: find the run of identical blocks a stacked model is made of.

    repeat = find_repeats(graph)       # Repeat(start, period, count) or None
    repeat.representative              # node index -> the node whose choice it shares

A 64-layer transformer is one block of ops written 64 times. Program order makes the blocks
consecutive and identical: the same op, attributes and types at the same offset, reading values
from the same offsets (of the same block or of the previous one), and each block's weights from
arguments only that block reads. Auto-shard gives the ops at one offset of every block one
shared choice (and the arguments each block reads at one slot one shared layout), so the integer
program is the size of one block however deep the model is.

The period is found from the signatures of the op nodes (name, attributes, types, user
shardings): for every distance at which a signature repeats, the longest stretch where the
sequence equals itself shifted by that distance; the distance covering the most ops wins (then
the shorter), if it covers at least half of them. The stretch is then checked block by block
for the same dataflow and cut where it differs. Tying can only lose plans that treat blocks
differently, never make a plan invalid.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from shardc.passes.propagation.autoshard.graph import CostGraph, Node, NodeKind

Key = tuple


@dataclass
class Repeat:
    """Blocks `start + j*period ... + period` of the op sequence, j < count, share choices."""

    start: int
    period: int
    count: int
    representative: dict[int, int] = field(default_factory=dict)


def _signature(node: Node) -> Key:
    op = node.op
    assert op is not None
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attributes.items() if k != "shardc.origin"))
    return (
        op.name,
        attrs,
        tuple(str(v.type) for v in op.operands),
        tuple(str(v.type) for v in op.results),
    )


def _best_run(seq: list[int]) -> tuple[int, int, int] | None:
    """(start, period, count) of the longest self-repeating stretch, or None."""
    n = len(seq)
    last: dict[int, int] = {}
    gaps: Counter[int] = Counter()
    for i, s in enumerate(seq):
        if s in last:
            gaps[i - last[s]] += 1
        last[s] = i
    best: tuple[int, int, int, int] | None = None  # (covered, -period, start, count)
    for p, seen in gaps.items():
        if seen < 1 or 2 * p > n:
            continue
        run = length = 0
        start = 0
        for i in range(n - p):
            if seq[i] == seq[i + p]:
                run += 1
                if run > length:
                    length, start = run, i - run + 1
            else:
                run = 0
        count = length // p + 1
        if count < 2:
            continue
        key = (count * p, -p, start, count)
        if best is None or key > best:
            best = key
    if best is None or 2 * best[0] < n:
        return None  # a few ops that happen to repeat are not a stack of layers
    covered, neg_p, start, count = best
    return start, -neg_p, count


class _Blocks:
    """Classifies every operand of every node of a candidate run relative to its block."""

    def __init__(self, graph: CostGraph, ops: list[Node], start: int, period: int, count: int):
        self.graph, self.ops = graph, ops
        self.start, self.period, self.count = start, period, count
        self.seq_of = {n.index: i for i, n in enumerate(ops)}
        self.reads: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
        for u in graph.uses:
            self.reads.setdefault(u.consumer.index, []).append((u.producer.index, u.operands))
        self.arg_blocks: dict[int, set[int | None]] = {}
        for u in graph.uses:
            if u.producer.kind is NodeKind.ARG:
                self.arg_blocks.setdefault(u.producer.index, set()).add(
                    self.block_of(u.consumer.index)
                )

    def block_of(self, node: int) -> int | None:
        q = self.seq_of.get(node)
        if q is None or not self.start <= q < self.start + self.period * self.count:
            return None
        return (q - self.start) // self.period

    def producer_class(self, producer: int, block: int) -> Key:
        node = self.graph.nodes[producer]
        if node.kind is NodeKind.ARG:
            blocks = self.arg_blocks[producer]
            if blocks == {block}:
                return ("local-arg", str(node.values[0].type), repr(node.user))
            return ("abs", producer)
        b = self.block_of(producer)
        if b is None:
            return ("abs", producer)
        q = self.seq_of[producer]
        return ("rel", b - block, (q - self.start) % self.period)

    def classes(self, block: int) -> list[Key]:
        out = []
        for k in range(self.period):
            node = self.ops[self.start + block * self.period + k]
            reads = sorted(
                (ops, self.producer_class(p, block)) for p, ops in self.reads.get(node.index, [])
            )
            out.append(tuple(reads))
        return out

    def first_mismatch(self) -> int | None:
        """The first block whose dataflow differs from block 1's (block 0 may read its
        previous-block values from outside the run)."""
        ref = self.classes(1)
        for j in range(self.count):
            if j == 1:
                continue
            got = self.classes(j)
            for mine, want in zip(got, ref):
                if mine == want:
                    continue
                if j == 0 and len(mine) == len(want) and all(
                    a == b or (b[1][0] == "rel" and b[1][1] < 0 and a[0] == b[0])
                    for a, b in zip(mine, want)
                ):
                    continue
                return j
        return None


def find_repeats(graph: CostGraph) -> Repeat | None:
    """The repeated blocks of `graph`'s op sequence and each tied node's representative (the
    node at the same offset of block 1; tied arguments: the one block 1 reads at that slot)."""
    ops = graph.ops
    ids: dict[Key, int] = {}
    seq = [ids.setdefault(_signature(n), len(ids)) for n in ops]
    found = _best_run(seq)
    if found is None:
        return None
    start, period, count = found
    while count >= 2:
        blocks = _Blocks(graph, ops, start, period, count)
        bad = blocks.first_mismatch()
        if bad is None:
            return _tie(blocks)
        if bad == 0:
            start, count = start + period, count - 1
        else:
            count = bad
    return None


def _tie(blocks: _Blocks) -> Repeat:
    rep: dict[int, int] = {}
    start, period = blocks.start, blocks.period
    ref_args: dict[tuple[int, tuple[int, ...]], int] = {}
    for j in range(blocks.count):
        for k in range(period):
            node = blocks.ops[start + j * period + k]
            rep[node.index] = blocks.ops[start + period + k].index
            for producer, operands in blocks.reads.get(node.index, []):
                if blocks.producer_class(producer, j)[0] != "local-arg":
                    continue
                slot = (k, operands)
                if j == 1:
                    ref_args[slot] = producer
    for j in range(blocks.count):
        for k in range(period):
            node = blocks.ops[start + j * period + k]
            for producer, operands in blocks.reads.get(node.index, []):
                ref = ref_args.get((k, operands))
                if ref is not None and blocks.producer_class(producer, j)[0] == "local-arg":
                    rep.setdefault(producer, ref)
    return Repeat(start, period, blocks.count, rep)
