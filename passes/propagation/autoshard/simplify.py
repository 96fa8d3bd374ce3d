"""Graph simplification: fewer, shared choices (Alpa's follow ops and merged layers).

    space = simplify(graph, follow=True, repeats=True)
    space.group_of[node]     # the choice variable the node's strategy is a function of
    space.sizes[group]       # how many choices the group has
    graph.nodes[i].strategies[a]  # node i's strategy when its group takes choice a

Every node starts as its own group, one choice per strategy. Then:

- **Repeated layers** (`repeats.find_repeats`): the nodes at one offset of every block of a
  stacked model share the representative's group and strategy list; with `tie_rounds`, so do
  the nodes colour refinement finds alike (`tying.colour_classes`: a training step's layers).
- **Follow ops**: an element-wise op whose rule maps every tensor alike follows its deepest
  operand (the one on the longest path from the arguments, as Alpa's element-wise ops do): for
  each choice of that operand's group it takes the operand's layout, reduced. With
  `follow="chains"` only an element-wise producer is followed, so a chain of element-wise ops
  becomes one group with the op that starts it, and the first op after a matmul or a reduction
  keeps its own choices (it may, say, take the matmul's partial sums reduce-scattered rather
  than all-reduced). `follow="updates"` does so only for the element-wise ops whose results
  reach nothing but element-wise ops and returns (a training step's per-parameter updates:
  gradient, moments, new parameter), so the forward and backward passes keep every choice.
  `follow="all"` is Alpa's rule (smaller, and it loses such plans); `"none"` (the default)
  keeps every op's choices. If following would close a cycle
  through tied blocks (a block's first op following the previous block's last), the op keeps
  its own choices.

The strategies stay per node; only how many independent choices there are changes, so edges
and memory are still computed node by node (`costs.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.mapping import NamedMapping
from shardc.passes.propagation.autoshard.candidates import Strategy, local_points, reduced
from shardc.passes.propagation.autoshard.graph import CostGraph, Node, NodeKind, Use
from shardc.passes.propagation.autoshard.repeats import Repeat, find_repeats
from shardc.passes.propagation.autoshard.tying import colour_classes
from shardc.passes.propagation.rules.registry import rule_for


@dataclass
class ChoiceSpace:
    """The groups of choices after simplification."""

    sizes: list[int]
    group_of: list[int]
    representative: list[int]  # node -> the node whose strategy list it shares
    followed: dict[int, tuple[int, int]]  # follower node -> (node, result) it follows
    repeat: Repeat | None

    @property
    def num_free_groups(self) -> int:
        return sum(1 for n in self.sizes if n > 1)


def _pointwise_strategy(node: Node, layout: NamedMapping) -> Strategy:
    """The element-wise op computed on `layout` (every operand and result laid out so)."""
    op = node.op
    assert op is not None
    rule = rule_for(op)
    assert rule is not None
    axes = tuple(layout.dims[d].axes for d in range(layout.rank))
    operands = tuple(
        layout if v.type.rank else NamedMapping.fully_replicated(layout.mesh, 0)
        for v in op.operands
    )
    return Strategy(operands, (layout,) * len(op.results), local_points(rule.factor_sizes, axes,
                                                                       layout.mesh), axes)


def _deepest_operand(node: Node, reads: dict[int, list]) -> Use | None:
    """The use of `node` whose producer is deepest (then: the lowest operand position)."""
    best: Use | None = None
    for u in reads.get(node.index, []):
        if u.producer.values[u.result].type.shape != node.values[0].type.shape:
            continue
        if best is None or (u.producer.depth, -u.operands[0]) > (
            best.producer.depth, -best.operands[0]
        ):
            best = u
    return best


FOLLOW = ("none", "chains", "updates", "all")


def _tails(graph: CostGraph) -> set[int]:
    """Element-wise nodes whose results reach only element-wise nodes and returns: a training
    step's per-parameter updates (gradient, moments, new parameter)."""
    consumers: dict[int, list[int]] = {}
    for u in graph.uses:
        consumers.setdefault(u.producer.index, []).append(u.consumer.index)
    tails: set[int] = set()
    for node in reversed(graph.nodes):
        if node.pointwise and all(c in tails for c in consumers.get(node.index, ())):
            tails.add(node.index)
    return tails


def _union(a: list[int], b: list[int]) -> list[int]:
    """The classes of two tie relations joined; each node's representative is the first node of
    its class."""
    parent = list(range(len(a)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for rel in (a, b):
        for i, r in enumerate(rel):
            x, y = find(i), find(r)
            if x != y:
                parent[max(x, y)] = min(x, y)
    return [find(i) for i in range(len(a))]


def simplify(graph: CostGraph, *, follow: str = "none", repeats: bool = True,
             tie_rounds: int = 0) -> ChoiceSpace:
    """Group the nodes' choices (see the module docstring); rewrites followers' strategy lists
    and gives tied nodes their representative's."""
    n = len(graph.nodes)
    repeat = find_repeats(graph) if repeats else None
    rep = list(range(n))
    if repeat is not None:
        for node, r in repeat.representative.items():
            rep[node] = r
    if tie_rounds > 0:
        rep = _union(rep, colour_classes(graph, tie_rounds))
    reads: dict[int, list] = {}
    for u in graph.uses:
        reads.setdefault(u.consumer.index, []).append(u)
    followed: dict[int, tuple[int, int]] = {}
    tails = _tails(graph) if follow == "updates" else set()
    if follow != "none":
        for node in graph.nodes:
            if rep[node.index] == node.index and node.pointwise:
                if follow == "updates" and node.index not in tails:
                    continue
                u = _deepest_operand(node, reads)
                if u is not None and (follow == "all" or u.producer.pointwise):
                    followed[node.index] = (rep[u.producer.index], u.result)
    group_of = [-1] * n
    sizes: list[int] = []

    def resolve(i: int) -> None:
        """Give representative node `i` its group: walk down the nodes it follows to one with a
        group (or none to follow), then build each follower's strategies back up the chain."""
        chain: list[int] = []
        on_chain: set[int] = set()
        while group_of[i] < 0:
            chain.append(i)
            on_chain.add(i)
            target = followed.get(i)
            if target is not None and target[0] in on_chain:
                del followed[i]  # a cycle through tied blocks: keep its own choices
                target = None
            if target is None:
                group_of[i] = len(sizes)
                sizes.append(len(graph.nodes[i].strategies))
                chain.pop()
                break
            i = target[0]
        for j in reversed(chain):
            source_index, result = followed[j]
            source, node = graph.nodes[source_index], graph.nodes[j]
            node.strategies = [
                _pointwise_strategy(node, reduced(s.results[result])) for s in source.strategies
            ]
            group_of[j] = group_of[source_index]

    for node in graph.nodes:
        if rep[node.index] == node.index:
            resolve(node.index)
    for node in graph.nodes:
        r = rep[node.index]
        if r != node.index:
            group_of[node.index] = group_of[r]
            node.strategies = graph.nodes[r].strategies
    for node in graph.nodes:
        if node.kind is NodeKind.FIXED:
            assert sizes[group_of[node.index]] == 1
    return ChoiceSpace(sizes, group_of, rep, followed, repeat)
