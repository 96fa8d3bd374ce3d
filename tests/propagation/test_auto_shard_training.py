"""auto-shard on a training step written in JAX (examples/llama_jax.py's small LM: 2 layers,
d_model 64, vocab 256, batch 8 x 32, AdamW) on data=2 x model=4, unannotated, with the peak of
the Megatron plan as the budget: it fits, moves no more than the Megatron plan and no more than
the unbudgeted plan, and is proven optimal. Deeper, colour refinement ties the layers' nodes,
so the solver sees one layer's worth of choices however deep the step is."""

from __future__ import annotations

from pathlib import Path

import pytest

jax = pytest.importorskip("jax", reason="the training step is written in JAX")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lm():
    from tests.test_examples import load_example

    return load_example("llama_jax")


def _lowered(lm, specs, **auto):
    from jax.sharding import AbstractMesh

    import shardc

    cfg = lm.small()
    mesh = AbstractMesh((2, 4), ("data", "model"))
    f = shardc.jit(lm.make_step(cfg), mesh=mesh, backend="numpy", in_shardings=specs(cfg),
                   **auto)
    return f.lower(*lm.abstract_args(cfg))


def _lower(lm, specs, **auto):
    return _lowered(lm, specs, **auto).report


@pytest.fixture(scope="module")
def free(lm):
    """The small LM, unannotated, auto-sharded without a budget."""
    return _lowered(lm, lm.unannotated_specs, auto_shard=True)


def test_the_small_lm_fits_the_megatron_peak_and_moves_less(lm, free) -> None:
    megatron = _lower(lm, lambda c: lm.megatron_specs(c, "data", "model"))
    budget = megatron["peak_memory_bytes_per_device"]
    free = free.report
    auto = _lower(lm, lm.unannotated_specs, auto_shard=True, memory_budget=budget)
    info = auto["auto_shard"]
    assert info["fits_budget"] and auto["peak_memory_bytes_per_device"] <= budget
    assert auto["total_comm_bytes"] <= megatron["total_comm_bytes"]
    assert auto["total_comm_bytes"] <= free["total_comm_bytes"]
    assert info["status"] == "optimal" and info["gap"] == 0.0
    assert info["source"] == "free"  # the free optimum fits: it is the answer


def _carried(lowered) -> tuple[int, int]:
    """(state results in their argument's layout, state results): params, m, v and the step
    count come back at their argument's position (the loss is last)."""
    main = lowered.module.main
    state = range(len(main.result_types) - 1)
    same = sum(1 for i in state if str(main.result_types[i].mapping) == str(main.args[i].mapping))
    return same, len(state)


def test_carry_returns_the_state_in_its_arguments_layouts(lm, free) -> None:
    from shardc.pipeline import CompileOptions

    carried = _lowered(lm, lm.unannotated_specs, auto_shard=True,
                       options=CompileOptions(auto_shard_carry=True))
    same, state = _carried(carried)
    assert state == 64 and same == state  # every parameter and moment, and the count
    info = carried.report["auto_shard"]
    assert info["graph"]["carried"] == state
    assert info["status"] == "optimal" and info["gap"] == 0.0
    # Without it some state comes back in another layout than it came in, which the next
    # step would have to reshard (or recompile for); carrying prices those reshards instead.
    assert _carried(free)[0] < state
    assert carried.report["total_comm_bytes"] >= free.report["total_comm_bytes"]


def _graph(lm, layers: int):
    from jax.sharding import AbstractMesh

    from shardc.ir.mesh import DeviceMesh
    from shardc.jax_api import from_jax
    from shardc.passes.ingest.split_constants import split_function
    from shardc.passes.manager import load_all_passes
    from shardc.passes.propagation.autoshard.graph import build_graph, single_mesh
    from shardc.passes.propagation.autoshard.inline import inline_calls

    load_all_passes()
    cfg = lm.small(layers=layers)
    mesh = AbstractMesh((2, 4), ("data", "model"))
    with jax.sharding.use_abstract_mesh(mesh):
        module = from_jax(lm.make_step(cfg), *lm.abstract_args(cfg), mesh=mesh,
                          in_shardings=lm.unannotated_specs(cfg))
    if not module.meshes:
        module.add_mesh(DeviceMesh.create("mesh", {"data": 2, "model": 4}))
    inline_calls(module, module.main)
    split_function(module.main)
    return build_graph(module, module.main, single_mesh(module))


def test_colour_refinement_ties_the_layers_of_a_training_step(lm) -> None:
    from shardc.passes.propagation.autoshard.repeats import find_repeats
    from shardc.passes.propagation.autoshard.simplify import simplify
    from shardc.passes.propagation.autoshard.tying import colour_classes

    groups = {}
    for layers in (4, 8):
        graph = _graph(lm, layers)
        assert find_repeats(graph) is None  # backward and optimizer: no run of blocks
        rep = colour_classes(graph)
        for i, r in enumerate(rep):  # tied nodes are alike
            a, b = graph.nodes[i], graph.nodes[r]
            assert r <= i and (a.op is None) == (b.op is None)
            assert a.op is None or (a.op.name == b.op.name and len(a.strategies) ==
                                    len(b.strategies))
        groups[layers] = len(simplify(graph, tie_rounds=3).sizes)
        assert groups[layers] < len(graph.nodes) / 2
    # the interior layers share one class: twice the layers, (nearly) the same program
    assert groups[8] <= groups[4] * 1.1
