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

For each op of the program, in order: the values live across it, the targets of the reshards
feeding it less the sources they free, and its results; a second row for the collectives just
before it (the live values and what the plans hold while they run); one row for the arguments
at entry and one for the reshards before the return. The values of constant expressions and
broadcast scalars (`graph.Constant`: not nodes) are live values too, from their op to their last
reader, in the layout propagation gives them (constants.py), and each of their ops has a row:
the compiled program materializes them (JAX's random bits build several `ui64` counters at
once); a constant op's row is left out when the next op's row holds all of it. Rows with the
same terms (the same point of different layers) are merged into their upper envelope: each
term's largest count (the smallest for a term that frees bytes), exact when one row dominates,
as when the earlier layers' activations are still live.

Arguments die at their last use (they are donated: XLA may reuse their buffers), except those
in `kept`, which live to the end of the step.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from shardc.ir.mapping import NamedMapping
from shardc.passes.propagation.autoshard.constants import ConstantLayouts
from shardc.passes.propagation.autoshard.costs import CostModel
from shardc.passes.propagation.autoshard.graph import Constant, CostGraph, Node
from shardc.passes.propagation.autoshard.parts import EdgeBlock, Linear, Row, Term, TermKey
from shardc.passes.propagation.autoshard.simplify import ChoiceSpace
from shardc.passes.propagation.layouts import replicated

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
        self.layouts = ConstantLayouts(graph.mesh)
        self.held_memo: dict[tuple, tuple[int, ...]] = {}
        self.replicated: dict[int, NamedMapping] = {}  # rank -> the replicated layout

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

    def constant(self, c: Constant) -> int:
        """The bytes of a constant value, in the layout its reader's choice gives it. Keyed by
        what it holds: the same point of tied layers, and alike values, share one term."""
        t = c.value.type
        found = self.layouts(c) if t.rank else None  # (a scalar is never split)
        if found is None:
            group = -1
            whole = self.replicated.get(t.rank)
            if whole is None:
                whole = self.replicated[t.rank] = replicated(self.graph.mesh, t.rank)
            held: tuple[int, ...] = (self.model.held(t.shape, t.dtype, whole),)
        else:
            node, layouts_key, per = found
            group = self.space.group_of[node.index]
            held_key = (layouts_key, t.shape, t.dtype)
            memo = self.held_memo.get(held_key)
            if memo is None:
                memo = self.held_memo[held_key] = tuple(
                    self.model.held(t.shape, t.dtype, m) for m in per)
            held = memo
        if len(set(held)) == 1:  # the same under every choice
            group, held = -1, held[:1]
        key = ("constant", group, held)
        found_id = self.ids.get(key)
        if found_id is not None:
            return found_id
        if group < 0:
            return self._add(key, Term(np.zeros(0, dtype=np.int64), np.zeros(0), float(held[0])))
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


def _with(live: Counter[int], made: list[int]) -> Counter[int]:
    """The row of a constant op: what is live, and what it makes."""
    row = Counter(live)  # (`live` holds no zero counts: a copy at C speed)
    for t in made:
        row[t] += 1
    return row


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
    made: dict[int, list[int]] = {}  # position of a constant's op -> the terms it makes
    unread: set[int] = set()  # positions of constant ops with a result nobody reads
    for c in graph.constants:
        t = terms.constant(c)
        made.setdefault(c.position, []).append(t)
        if c.last_use > c.position:
            starts.setdefault(c.position + 1, []).append(t)
            stops.setdefault(min(c.last_use, end) + 1, []).append(t)
        else:
            unread.add(c.position)
    envelopes = _Envelopes(terms.negative)
    envelopes.add(args_row)
    live: Counter[int] = Counter()
    ops_at = {n.position: n for n in graph.ops}
    points = sorted(set(starts) | set(stops) | set(ops_at) | set(made) | {-1})
    # A constant op's row (what is live, and what it makes) waits for the next point: when
    # that is an op and nothing dies before it, the op's first row holds all of it (the
    # constant's results are live there) and more, so the row is left out. Chains make many
    # such rows (a counter, then its product). Else it is written from `live` as it is then,
    # which is still the live set of the constant's op.
    pending: list[int] | None = None  # the terms the waiting constant op makes
    for t in points:
        node = ops_at.get(t)
        edges = edge_terms.get(node.index, ()) if node is not None else ()
        if pending is not None:
            # (the peak row of a reshard freeing its source may hold less than `live`)
            if (t in stops or (node is None and t not in made)
                    or any(terms.edge("peak", k) in terms.negative for k in edges)):
                envelopes.add(_with(live, pending))
            pending = None
        for key in stops.get(t, ()):
            live[key] -= 1
            if not live[key]:
                del live[key]
        for key in starts.get(t, ()):
            live[key] += 1
        if node is None:
            if t in made:
                pending = made[t]
                if t in unread:  # (its unread result is not live at the next op)
                    envelopes.add(_with(live, pending))
                    pending = None
            continue
        before = Counter(live)
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
    if pending is not None:
        envelopes.add(_with(live, pending))
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
