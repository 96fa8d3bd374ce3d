"""auto-shard prices a value's reshard to one layout once, however many consumers read it there
(`write_choice` writes one `sharding_constraint` per value and layout): shares.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.models.catalogue import MODELS
from shardc.passes.propagation.autoshard.plans import evaluate, greedy_plans, plan_vector
from tests.programs import modules
from tests.propagation.test_auto_shard import auto

# x arrives split on "dp"; both ops must compute on "tp": one reshard, read twice.
TWO_READERS = """mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>) -> (tensor<16x64xf32, <@mesh, [{"tp"}, {}]>>, tensor<16x64xf32, <@mesh, [{"tp"}, {}]>>) {
  %0 = negate %x : tensor<16x64xf32, <@mesh, [{"tp"}, {}]>>
  %1 = exponential %x : tensor<16x64xf32, <@mesh, [{"tp"}, {}]>>
  return %0, %1
}
"""


def test_a_reshard_two_consumers_read_is_priced_once() -> None:
    result = auto(parse_module(TWO_READERS), share="true")
    info = result.context.data["auto_shard"]
    # one all_to_all-sized move of the 16x64 f32 block, not two
    assert result.report["total_comm_bytes"] == info["measured"]["comm_bytes"] == 1536
    assert info["predicted"]["comm_bytes"] == 1536
    assert info["predicted"]["ring_bytes"] == info["measured"]["ring_bytes"]
    # by default each consumer's edge prices its own reshard: twice the bytes moved
    default = auto(parse_module(TWO_READERS)).context.data["auto_shard"]
    assert default["predicted"]["comm_bytes"] == 2 * default["measured"]["comm_bytes"] == 3072


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(modules(max_ops=8))
def test_shared_pricing_never_promises_less_than_the_program(module) -> None:
    module = parse_module(print_module(module))
    info = auto(module, share="true").context.data["auto_shard"]
    for key in ("comm_bytes", "ring_bytes"):
        assert info["measured"][key] <= info["predicted"][key]


def _problem(module, **options):
    """The auto-shard problem of `module` (the pass's own steps, no solve)."""
    from shardc.passes.ingest.split_constants import split_function
    from shardc.passes.propagation.autoshard.costs import CostModel
    from shardc.passes.propagation.autoshard.formulation import formulate
    from shardc.passes.propagation.autoshard.graph import build_graph, single_mesh
    from shardc.passes.propagation.autoshard.inline import inline_calls
    from shardc.passes.propagation.autoshard.simplify import simplify

    mesh = single_mesh(module)
    inline_calls(module, module.main)
    split_function(module.main)
    graph = build_graph(module, module.main, mesh)
    graph.carry_pairs()
    return graph, formulate(graph, simplify(graph, **options), CostModel("bytes"),
                            share=True)


def _plan_bytes(graph, problem, choices) -> int:
    """What `write_choice` makes the plan move, counted from the graph: each value's reshard to
    each distinct layout its consumers need, once (a fixed op or a user's constraint: once per
    consumer, `insert-reshards` feeds them itself), and each return's or carried state's."""
    from shardc.passes.propagation.autoshard.candidates import reduced
    from shardc.passes.propagation.autoshard.shares import pooled

    model, space = problem.model, problem.space
    strategy = {n.index: n.strategies[choices[space.group_of[n.index]]] for n in graph.nodes}
    seen: set = set()
    total = 0
    for u in graph.uses:
        v = u.producer.values[u.result]
        src = strategy[u.producer.index].results[u.result]
        for t in dict.fromkeys(strategy[u.consumer.index].operands[i] for i in u.operands):
            key = (u.producer.index, u.result, t)
            if pooled(u) and key in seen:
                continue
            seen.add(key)
            total += model.reshard(v.type.shape, v.type.dtype, src, t).comm
    carried = {ret.index: arg for ret, arg in graph.carries}
    for ret in graph.returns:
        v = ret.producer.values[ret.result]
        src = strategy[ret.producer.index].results[ret.result]
        if ret.index in carried:
            src, dst = reduced(src), strategy[carried[ret.index].index].results[0]
        else:
            dst = ret.target(src)
        total += model.reshard(v.type.shape, v.type.dtype, src, dst).comm
    return total


@pytest.mark.parametrize("model,follow", [("mlp", "none"), ("mlp", "all"),
                                          ("transformer", "none")])
def test_plans_are_priced_as_the_program_moves_them(model: str, follow: str) -> None:
    # A training step: each weight is read by the forward and the backward matmul and by its
    # update. Greedy and random plans are priced by the problem exactly as the count above
    # (one reshard per value and layout); pricing each consumer's edge alone over-counts the
    # plans that share a reshard, and some of these do.
    module = MODELS[model].unannotated({"dp": 2, "tp": 4}, train="adam")
    graph, problem = _problem(module, follow=follow)
    rng = np.random.default_rng(0)
    plans = greedy_plans(problem)
    plans += [[int(rng.integers(n)) for n in problem.space.sizes] for _ in range(40)]
    shared = 0
    for choices in plans:
        cost, _ = evaluate(problem, choices)
        if not np.isfinite(cost):
            continue
        assert cost + problem.const_comm == _plan_bytes(graph, problem, choices)
        v = plan_vector(problem, choices)
        shared += sum(v[s.column] > 0.5 and len(s.reads) > 1 for s in problem.shares)
    assert shared
