"""Tying nodes that play the same part: colour refinement (Weisfeiler-Lehman) over the graph.

    rep = colour_classes(graph, rounds=3)     # node index -> the node whose choice it shares

`repeats.find_repeats` ties the blocks of a stack of layers written one after the other; a
training step is not one: its backward pass runs the layers in reverse and its optimizer updates
the parameters leaf by leaf, so no stretch of the program repeats. What does repeat is each
node's neighbourhood: the `wq` gradient of layer 7 is computed from the same kinds of values,
by the same kinds of ops, as layer 8's. Colour refinement finds that: every node starts with
its signature (an op's name, attributes, operand and result types and user shardings; an
argument's type and sharding), then, for `rounds` rounds, each node's colour becomes its colour
with the multiset of its producers' colours (with the operand positions and result read) and of
its consumers' (likewise) and whether it is returned. Nodes with one colour after the last round
share one choice. Their strategies are the same (the same signature), so tying is always valid;
it loses the plans that treat two such nodes differently (a boundary layer is usually told
apart from the others within a few rounds, and keeps its own choice).

Colours are numbered in node order as they first appear, so the classes do not depend on
Python's string hashing: every process ties the same nodes.
"""

from __future__ import annotations

from shardc.passes.propagation.autoshard.graph import CostGraph, Node

ROUNDS = 3


def _signature(node: Node) -> tuple:
    user = tuple(None if u is None else u.text() for u in node.user)
    if node.op is None:
        return ("arg", str(node.values[0].type), user)
    op = node.op
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attributes.items() if k != "shardc.origin"))
    return (
        "op", op.name, attrs,
        tuple(str(v.type) for v in op.operands),
        tuple(str(v.type) for v in op.results),
        user, len(node.strategies),
    )


def _number(keys: list) -> list[int]:
    ids: dict = {}
    return [ids.setdefault(k, len(ids)) for k in keys]


def colour_classes(graph: CostGraph, rounds: int = ROUNDS) -> list[int]:
    """For every node, the first node (in node order) with its final colour."""
    nodes = graph.nodes
    colour = _number([_signature(n) for n in nodes])
    ins: list[list[tuple[tuple[int, ...], int, int]]] = [[] for _ in nodes]
    outs: list[list[tuple[int, tuple[int, ...], int]]] = [[] for _ in nodes]
    for u in graph.uses:
        ins[u.consumer.index].append((u.operands, u.result, u.producer.index))
        outs[u.producer.index].append((u.result, u.operands, u.consumer.index))
    returned: list[tuple] = [() for _ in nodes]
    for r in graph.returns:
        declared = None if r.declared is None else r.declared.text()
        returned[r.producer.index] += ((r.result, declared),)
    classes = len(set(colour))
    for _ in range(rounds):
        refined = _number([
            (
                colour[i],
                tuple(sorted((ops, k, colour[p]) for ops, k, p in ins[i])),
                tuple(sorted((k, ops, colour[c]) for k, ops, c in outs[i])),
                tuple(sorted(returned[i], key=repr)),
            )
            for i in range(len(nodes))
        ])
        count = len(set(refined))
        colour = refined
        if count == classes:
            break
        classes = count
    first: dict[int, int] = {}
    return [first.setdefault(c, i) for i, c in enumerate(colour)]
