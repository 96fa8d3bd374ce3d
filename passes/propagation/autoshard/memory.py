"""The memory rows of the integer program, built compactly from terms.

    terms, rows = memory_rows(graph, space, model, x_offset, blocks, edge_terms, linear,
                              return_terms, kept)

A **term** is the bytes one device holds for one thing, as a linear function of the variables:
a value's local buffer under each choice of its group (`coef . x[g, :]`), the target buffers
of the reshards on one edge (`coef . e[block cells]`), what their collectives hold while they
run, or minus the bytes of a source that is dead once its last reader's reshard has run. A
**row** is one point of the program: every term live there with how often it is live (tied
layers share terms, so the activations the backward pass still needs are one term counted once
per layer). The solver gives each term that several rows share one auxiliary variable, so a row
costs one coefficient per distinct term, not one per choice of every live value: the rows of a
deep model stay linear in its size rather than quadratic.

For each op of the program, in order: the values live across it, the constant operands it reads
(in the layout it needs), the targets of the reshards feeding it less the sources they free, and
its results; a second row for the collectives just before it (the live values and what the
plans hold while they run); one row for the arguments at entry and one for the reshards before
the return. Rows with the same terms (the same point of different layers) are merged into
their upper envelope: each term's largest count (the smallest for a term that frees bytes),
exact when one row dominates, as when the earlier layers' activations are still live.

Arguments die at their last use (they are donated: XLA may reuse their buffers), except those
in `kept`, which live to the end of the step.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from shardc.passes.propagation.autoshard.costs import CostModel
from shardc.passes.propagation.autoshard.graph import CostGraph, Node
from shardc.passes.propagation.autoshard.parts import EdgeBlock, Linear, Row, Term, TermKey
from shardc.passes.propagation.autoshard.simplify import ChoiceSpace

ZERO = -1  # the id of a term that is 0 under every choice: left out of the rows


class _Terms:
    """Term keys to ids, each id's Term built once."""

    def __init__(self, graph: CostGraph, space: ChoiceSpace, model: CostModel,
                 x_offset: list[int], blocks: dict[TermKey, EdgeBlock],
                 linear: dict[TermKey, tuple[Linear, Linear, Linear, Linear]]) -> None:
        self.graph, self.space, self.model = graph, space, model
        self.x_offset, self.blocks, self.linear = x_offset, blocks, linear
        self.ids: dict[TermKey, int] = {}
        self.terms: list[Term] = []
        self.negative: set[int] = set()

    def _add(self, key: TermKey, term: Term) -> int:
        if not len(term.index) and not term.const:
            self.ids[key] = ZERO  # holds nothing under any choice
            return ZERO
        i = len(self.terms)
        self.ids[key] = i
        self.terms.append(term)
        if term.const < 0 or (len(term.coef) and term.coef.min() < 0):
            self.negative.add(i)
        return i

    def _of_linear(self, vec: Linear) -> Term:
        if self.space.sizes[vec.group] == 1:
            return Term(np.zeros(0, dtype=np.int64), np.zeros(0), float(vec.values[0]))
        nz = np.nonzero(vec.values)[0]
        return Term(self.x_offset[vec.group] + nz, vec.values[nz].astype(float), 0.0)

    def value(self, node: Node, k: int) -> int:
        key = ("value", self.space.representative[node.index], k)
        found = self.ids.get(key)
        if found is not None:
            return found
        v = node.values[k]
        held = [self.model.held(v.type.shape, v.type.dtype, s.results[k]) for s in node.strategies]
        group = self.space.group_of[node.index]
        return self._add(key, self._of_linear(Linear(group, np.array(held, dtype=float))))

    def free(self, node: Node, i: int) -> int:
        key = ("free", self.space.representative[node.index], i)
        found = self.ids.get(key)
        if found is not None:
            return found
        assert node.op is not None
        v = node.op.operand(i)
        held = [self.model.held(v.type.shape, v.type.dtype, s.operands[i]) for s in node.strategies]
        group = self.space.group_of[node.index]
        return self._add(key, self._of_linear(Linear(group, np.array(held, dtype=float))))

    def edge(self, which: str, edge: TermKey) -> int:
        """`which` of held, freed, peak for the reshards of edge `edge`."""
        key = (which, edge)
        found = self.ids.get(key)
        if found is not None:
            return found
        block = self.blocks.get(edge)
        if block is not None:
            cells = getattr(block, which).ravel()
            nz = np.nonzero(cells)[0]
            return self._add(key, Term(block.offset + nz, cells[nz].astype(float), 0.0))
        _, held, freed, peak = self.linear[edge]
        return self._add(key, self._of_linear({"held": held, "freed": freed, "peak": peak}[which]))


class _Envelopes:
    """Rows with the same term set merged into their upper envelope."""

    def __init__(self, negative: set[int]) -> None:
        self.negative = negative
        self.rows: dict[tuple[int, ...], dict[int, int]] = {}

    def add(self, row: Counter[int]) -> None:
        row.pop(ZERO, None)
        signature = tuple(sorted(row))
        old = self.rows.get(signature)
        if old is None:
            self.rows[signature] = dict(row)
            return
        for key, count in row.items():
            old[key] = min(old[key], count) if key in self.negative else max(old[key], count)


def memory_rows(
    graph: CostGraph,
    space: ChoiceSpace,
    model: CostModel,
    x_offset: list[int],
    blocks: dict[TermKey, EdgeBlock],
    edge_terms: dict[int, list[TermKey]],
    linear: dict[TermKey, tuple[Linear, Linear, Linear, Linear]],
    return_terms: list[TermKey],
    kept: frozenset[int] = frozenset(),
) -> tuple[list[Term], list[Row]]:
    """The terms and rows (module docstring)."""
    terms = _Terms(graph, space, model, x_offset, blocks, linear)
    end = len(graph.func.body)
    starts: dict[int, list[int]] = {}
    stops: dict[int, list[int]] = {}
    args_row: Counter[int] = Counter()
    kept_live: Counter[int] = Counter()
    for node in graph.nodes:
        is_arg = node.position < 0
        held_to_end = is_arg and node.values[0].index in kept
        for k in range(len(node.values)):
            t = terms.value(node, k)
            if is_arg:
                args_row[t] += 1
            if held_to_end:
                kept_live[t] += 1
                last = end
            else:
                last = graph.last_use.get((node.index, k), node.position)
            if last > node.position:
                starts.setdefault(node.position + 1, []).append(t)
                stops.setdefault(min(last, end) + 1, []).append(t)
    envelopes = _Envelopes(terms.negative)
    envelopes.add(args_row)
    live: Counter[int] = Counter()
    ops_at = {n.position: n for n in graph.ops}
    points = sorted(set(starts) | set(stops) | set(ops_at) | {-1})
    for t in points:
        for key in stops.get(t, ()):
            live[key] -= 1
        for key in starts.get(t, ()):
            live[key] += 1
        node = ops_at.get(t)
        if node is None:
            continue
        before = +live
        for i in graph.free_operands.get(node.index, ()):
            before[terms.free(node, i)] += 1
        edges = edge_terms.get(node.index, ())
        at = Counter(before)
        for key in edges:
            before[terms.edge("peak", key)] += 1
            at[terms.edge("held", key)] += 1
            at[terms.edge("freed", key)] += 1
        for k in range(len(node.values)):
            at[terms.value(node, k)] += 1
        if edges:
            envelopes.add(before)
        envelopes.add(at)
    # The reshards before the return: the returned values and kept arguments are live, and
    # what the plans hold.
    if return_terms:
        final: Counter[int] = Counter(kept_live)
        for r in {(r.producer.index, r.result): r for r in graph.returns}.values():
            t = terms.value(r.producer, r.result)
            final[t] = max(final[t], 1)
        for key in return_terms:
            final[terms.edge("peak", key)] += 1
        envelopes.add(final)
    rows = []
    for row in envelopes.rows.values():
        ids = np.array(sorted(row), dtype=np.int64)
        rows.append(Row(ids, np.array([row[i] for i in ids], dtype=float)))
    return terms.terms, rows
