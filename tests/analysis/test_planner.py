"""The reshard planner: collectives as layout transitions, optimal plans, and their semantics.

The oracle for optimality is independent of the planner's neighbour generation: every layout of a
small mesh is enumerated, every pair of layouts that one collective connects is found from the
pair itself, and networkx finds shortest paths in that full graph.
"""

from __future__ import annotations

import itertools
import random
import time

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.placements import ReduceOp
from shardc.passes.analysis.collectives import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    device_groups,
    greedy_plan,
    plan_reshard,
)
from shardc.passes.analysis.collectives.axes import cut_points, merge_refs, merge_set, split_refs
from shardc.passes.analysis.collectives.shards import nested_ok
from shardc.passes.analysis.collectives.simulate import collect, distribute, execute, execute_step
from shardc.passes.analysis.collectives.steps import same_layout


def mesh(axes: dict[str, int], ids=None) -> DeviceMesh:
    return DeviceMesh.create("mesh", axes, ids)


def ref(text: str) -> AxisRef:
    """`"x"` or `"x:2:2"` (pre 2, size 2)."""
    name, *sub = text.split(":")
    return AxisRef(name, int(sub[0]), int(sub[1])) if sub else AxisRef(name)


def layout(m: DeviceMesh, dims: list[str], unreduced: str = "", op=ReduceOp.SUM) -> NamedMapping:
    """`layout(m, ["x,y", ""], "z")` -> `<@mesh, [{"x", "y"}, {}], unreduced={"z"}>`."""
    return NamedMapping(
        m,
        tuple(DimSharding(tuple(ref(a) for a in d.split(",") if a)) for d in dims),
        (),
        tuple(ref(a) for a in unreduced.split(",") if a),
        op,
    )


def check_plan(plan, shape, src, dst, rng=None) -> None:
    """Every step valid in turn, the last layout is dst, the cost adds up, the data arrive."""
    current = src
    for step, expected in zip(plan.steps, plan.layouts[1:], strict=True):
        current = step.apply(current, shape)
        assert same_layout(current, expected)
    assert same_layout(current, dst)
    assert plan.cost == sum(plan.step_costs())
    rng = rng or np.random.default_rng(0)
    array = rng.integers(-50, 50, size=shape)
    blocks, final = execute(plan.steps, distribute(array, src, rng), shape, src)
    assert same_layout(final, dst)
    if dst.unreduced:
        np.testing.assert_array_equal(collect(blocks, shape, dst), array)
    else:
        expected = distribute(array, dst)
        assert blocks.keys() == expected.keys()
        for device, block in expected.items():
            np.testing.assert_array_equal(blocks[device], block)


# ----- steps -------------------------------------------------------------------------------


def test_device_groups_follow_shardy_replica_groups():
    m = mesh({"x": 2, "y": 4, "z": 2})
    assert device_groups(m, [ref("y"), ref("x")]) == [
        [0, 8, 2, 10, 4, 12, 6, 14],
        [1, 9, 3, 11, 5, 13, 7, 15],
    ]
    assert device_groups(m, [ref("x"), ref("y:2:2")]) == [
        [0, 2, 8, 10],
        [1, 3, 9, 11],
        [4, 6, 12, 14],
        [5, 7, 13, 15],
    ]
    assert device_groups(mesh({"x": 2, "y": 4}), [ref("y")]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert device_groups(mesh({"x": 2}, [1, 0]), [ref("x")]) == [[1, 0]]


def test_steps_apply_and_print_like_shardy():
    m = DeviceMesh.create("mesh", {"a": 2, "b": 2, "c": 2, "d": 2})
    src = layout(m, ["a,b,c", "", "d"])
    gather = AllGather(((ref("b"), ref("c")), (), (ref("d"),)))
    out = gather.apply(src)
    assert out.text() == '<@mesh, [{"a"}, {}, {}]>'
    assert gather.text(src) == (
        'sdy.all_gather [{"b", "c"}, {}, {"d"}] %0 out_sharding=<@mesh, [{"a"}, {}, {}]>'
    )
    assert same_layout(AllSlice(((ref("b"), ref("c")), (), (ref("d"),))).apply(out), src)
    a2a = AllToAll((ref("b"),), 0, 2)
    assert a2a.text(layout(m, ["a,b", "c", "", ""])) == (
        'sdy.all_to_all [{"b"}: 0->2] %0 out_sharding=<@mesh, [{"a"}, {"c"}, {"b"}, {}]>'
    )
    assert AllReduce((ref("d"),)).text(layout(m, ["a"], "d")) == (
        'sdy.all_reduce {"d"} %0 out_sharding=<@mesh, [{"a"}]>'
    )
    assert ReduceScatter(((ref("d"),),)).apply(layout(m, ["a"], "d,c")).text() == (
        '<@mesh, [{"a", "d"}], unreduced={"c"}>'
    )


def test_collective_permute_example_from_shardy():
    m = DeviceMesh.create("mesh", {"a": 2, "b": 2, "c": 4, "d": 2, "e": 2, "f": 2})
    src = layout(m, ["a,c", "f", "d,e"])
    dst = layout(m, ["c:1:2,b,f", "a", "e,d"])
    step = CollectivePermute(dst)
    assert same_layout(step.apply(src), dst)
    assert step.text(src, "%1").startswith("sdy.collective_permute %1 out_sharding=<@mesh, [{")
    sources = [s for s, _ in step.pairs(src)]
    assert len(sources) == len(set(sources))  # a permutation: every device sends at most once


def test_sub_axes_are_split_and_merged():
    m = mesh({"x": 4, "y": 2})
    src = layout(m, ["x", ""])
    half = AllGather(((ref("x:2:2"),), ()))
    assert half.apply(src).text() == '<@mesh, [{"x":(1)2}, {}]>'
    moved = AllToAll((ref("x:2:2"),), 0, 1).apply(src)
    assert moved.text() == '<@mesh, [{"x":(1)2}, {"x":(2)2}]>'
    assert same_layout(AllToAll((ref("x:2:2"),), 1, 0).apply(moved), src)


@pytest.mark.parametrize(
    "step, src",
    [
        (AllGather(((ref("x"),), ())), ["x,y", ""]),  # not minor-most
        (AllSlice(((ref("x"),), ())), ["", "x"]),  # already used
        (AllToAll((ref("y"),), 0, 1), ["x", ""]),
        (AllReduce((ref("x"),)), ["", ""]),  # not unreduced
        (ReduceScatter(((ref("y"),), ())), ["", ""]),
        (CollectivePermute(layout(mesh({"x": 2, "y": 4}), ["y", ""])), ["x", ""]),  # counts
        (CollectivePermute(layout(mesh({"x": 2, "y": 4}), ["x", ""])), ["x", ""]),  # no-op
    ],
)
def test_invalid_steps_raise(step, src):
    with pytest.raises(ShardingError):
        step.apply(layout(mesh({"x": 2, "y": 4}), src))


def test_costs_follow_the_ring_model():
    m = mesh({"x": 2, "y": 4})
    shape, sharded = (16, 64), layout(m, ["x", ""])  # local 8x64 f32 = 2048 bytes
    gather = AllGather(((ref("x"),), ()))
    assert gather.bytes_per_device(shape, "f32", sharded) == 4096
    assert gather.ring_bytes(shape, "f32", sharded) == 2048  # 4096 * (2-1)/2
    partial = layout(m, ["x", ""], "y")
    assert AllReduce((ref("y"),)).ring_bytes(shape, "f32", partial) == 2 * 2048 * 3 // 4
    assert ReduceScatter(((), (ref("y"),))).ring_bytes(shape, "f32", partial) == 2048 * 3 // 4
    a2a = AllToAll((ref("x"),), 0, 1)
    assert a2a.ring_bytes(shape, "f32", sharded) == 1024
    assert a2a.bytes_per_device(shape, "f32", sharded) == 2048
    assert AllSlice(((), (ref("y"),))).ring_bytes(shape, "f32", sharded) == 0
    assert AllSlice(((), (ref("y"),))).bytes_per_device(shape, "f32", sharded) == 0
    permute = CollectivePermute(layout(m, ["x", ""]).with_dim(0, DimSharding((ref("y:1:2"),))))
    assert permute.ring_bytes(shape, "f32", sharded) == 2048
    # Uneven: 10 over 4 devices holds ceil(10/4) = 3 padded rows; the ring moves 3 shards.
    m4 = mesh({"x": 4})
    assert AllGather(((ref("x"),),)).ring_bytes((10,), "f32", layout(m4, ["x"])) == 3 * 3 * 4
    entry = gather.report_entry(shape, "f32", sharded)
    assert entry["groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]] and entry["group_size"] == 2


def test_uneven_regroup_must_nest():
    assert nested_ok(10, 1, 4) and nested_ok(16, 2, 8) and nested_ok(12, 2, 4)
    assert not nested_ok(10, 2, 4)  # shard 1 of 4 is [3, 6), its parent shard 0 of 2 is [0, 5)
    m = mesh({"x": 2, "y": 2})
    step = AllGather(((ref("y"),),))
    step.apply(layout(m, ["x,y"]))  # fine without a shape
    with pytest.raises(ShardingError, match="do not nest"):
        step.apply(layout(m, ["x,y"]), (10,))


# ----- uneven dims through every collective ----------------------------------------------------


M44 = mesh({"x": 4, "y": 4})
UNEVEN_STEPS = [
    (["", ""], AllSlice(((ref("x"),), (ref("y"),)))),
    (["x", "y"], AllGather(((ref("x"),), ()))),
    (["x", ""], AllToAll((ref("x"),), 0, 1)),
    (["x", ""], CollectivePermute(layout(M44, ["y", ""]))),
    (["y", ""], AllReduce((ref("x"),))),
    (["", ""], ReduceScatter(((ref("x"),), ()))),
]


@pytest.mark.parametrize("src_dims, step", UNEVEN_STEPS, ids=lambda v: getattr(v, "kind", ""))
def test_every_collective_on_uneven_dims(src_dims, step):
    shape = (10, 6)  # 10 and 6 over 4 devices: ceil-div shards padded at the end
    unreduced = "x" if step.kind in ("all_reduce", "reduce_scatter") else ""
    src = layout(M44, src_dims, unreduced)
    rng = np.random.default_rng(3)
    array = rng.integers(-9, 9, size=shape)
    blocks, out = execute_step(step, distribute(array, src, rng), shape, src)
    expected = distribute(array, out)
    for device, block in expected.items():
        np.testing.assert_array_equal(blocks[device], block)
    assert step.ring_bytes(shape, "f32", src) >= 0


# ----- plans ---------------------------------------------------------------------------------


def test_moving_an_axis_between_dims_is_one_all_to_all():
    m = mesh({"x": 2, "y": 4})
    src, dst = layout(m, ["x", ""]), layout(m, ["", "x"])
    plan, greedy = plan_reshard((16, 64), "f32", src, dst), greedy_plan((16, 64), "f32", src, dst)
    assert plan.kinds == ("all_to_all",)
    assert greedy.kinds == ("all_gather", "all_slice")  # through a replicated layout
    assert plan.cost == 1024 < greedy.cost == 2048
    assert plan.text() == (
        '%r1 = sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]>'
    )


def test_unreduced_to_sharded_is_a_reduce_scatter():
    # One axis: with a free axis "x" the ring model prefers all_slice "x", reduce_scatter "y",
    # all_gather "x" (see test_slicing_a_free_axis_makes_a_reduction_cheaper).
    m = mesh({"y": 4})
    src, dst = layout(m, ["", ""], "y"), layout(m, ["y", ""])
    plan, greedy = plan_reshard((16, 64), "f32", src, dst), greedy_plan((16, 64), "f32", src, dst)
    assert plan.kinds == ("reduce_scatter",)
    assert greedy.kinds == ("all_reduce", "all_slice")
    assert plan.cost < greedy.cost
    check_plan(plan, (16, 64), src, dst)


def test_axis_order_within_a_dim_is_a_collective_permute():
    m = mesh({"x": 2, "y": 4}, [3, 1, 0, 2, 7, 5, 4, 6])
    src, dst = layout(m, ["x,y", ""]), layout(m, ["y,x", ""])
    plan = plan_reshard((16, 64), "f32", src, dst)
    assert plan.kinds == ("collective_permute",)
    assert plan.cost < greedy_plan((16, 64), "f32", src, dst).cost
    check_plan(plan, (16, 64), src, dst)


def test_equal_cost_prefers_fewer_steps():
    m = mesh({"x": 2, "y": 2})
    src, dst = layout(m, ["x", ""]), layout(m, ["y", ""])
    plan = plan_reshard((8, 8), "f32", src, dst)  # permute: B; gather + slice: B*(2-1)/2*2 = B
    assert plan.kinds == ("collective_permute",)
    assert plan.cost == greedy_plan((8, 8), "f32", src, dst).cost


def test_slicing_a_free_axis_makes_a_reduction_cheaper():
    m = mesh({"x": 4, "y": 2})
    src, dst = layout(m, ["", ""], "x"), layout(m, ["", ""])
    plan, greedy = plan_reshard((16, 16), "f32", src, dst), greedy_plan((16, 16), "f32", src, dst)
    assert greedy.kinds == ("all_reduce",)
    assert plan.cost < greedy.cost
    assert "y" in plan.text()
    check_plan(plan, (16, 16), src, dst)


def test_unreduced_axes_the_target_keeps_stay_unreduced():
    m = mesh({"x": 2, "y": 2, "z": 2})
    src, dst = layout(m, ["x", ""], "y,z"), layout(m, ["", "x,y"], "z")
    plan = plan_reshard((8, 8), "i32", src, dst)
    assert all(
        step.kind != "all_reduce" or ref("z") not in step.group_axes() for step in plan.steps
    )
    check_plan(plan, (8, 8), src, dst)


def test_plans_are_memoised_and_deterministic():
    m = mesh({"x": 2, "y": 2, "z": 2})
    src, dst = layout(m, ["x", "y", ""], "z"), layout(m, ["", "z,x", "y"])
    first = plan_reshard((8, 16, 32), "f32", src, dst)
    assert plan_reshard((8, 16, 32), "f32", src, dst) is first
    assert plan_reshard((8, 16, 32), "f32", src, dst, cost="bytes").cost_model == "bytes"


def test_identity_plan_is_empty():
    m = mesh({"x": 2})
    plan = plan_reshard((4,), "f32", layout(m, ["x"]), layout(m, ["x"]))
    assert plan.steps == () and plan.cost == 0


@pytest.mark.parametrize(
    "src, dst",
    [
        (layout(mesh({"x": 2}), [""]), layout(mesh({"x": 2}), [""], "x")),  # creates unreduced
        (layout(mesh({"x": 2}), ["x"]), layout(DeviceMesh.create("other", {"x": 2}), ["x"])),
        (layout(mesh({"x": 2}), ["x"]), NamedMapping.fully_open(mesh({"x": 2}), 1)),
        (layout(mesh({"x": 2}), ["x", ""]), layout(mesh({"x": 2}), ["", "x"])),  # rank 2 vs (4,)
    ],
)
def test_bad_reshards_raise(src, dst):
    with pytest.raises(ShardingError):
        plan_reshard((4,), "f32", src, dst)


def test_uneven_plan_avoids_non_nesting_partial_gathers():
    m = mesh({"x": 2, "y": 2})
    src, dst = layout(m, ["x,y"]), layout(m, ["x"])
    plan = plan_reshard((10,), "f32", src, dst)  # gathering only "y" would not nest for 10
    assert plan.kinds == ("all_gather", "all_slice")
    check_plan(plan, (10,), src, dst)
    check_plan(greedy_plan((10,), "f32", src, dst), (10,), src, dst)


def test_planning_is_fast():
    m = mesh({"dp": 2, "tp": 4})
    specs = [["", ""], ["dp", ""], ["", "tp"], ["dp", "tp"], ["tp", "dp"], ["dp,tp", ""]]
    start = time.perf_counter()
    for a, b in itertools.product(specs, specs):
        plan_reshard((512, 1024), "bf16", layout(m, a), layout(m, b))
    per_plan = (time.perf_counter() - start) / len(specs) ** 2
    assert per_plan < 0.02, f"{per_plan * 1e3:.1f} ms per reshard"


# ----- brute force: the plan is optimal in the full layout graph ------------------------------


def all_layouts(m: DeviceMesh, atoms: list[str], rank: int, unreduced: tuple[str, ...]):
    """Every closed layout over `atoms` (refs, e.g. `x:1:2`) with unreduced axes among
    `unreduced`; adjacent sub-axes merge, so `x:1:2, x:2:2` in a dim is `"x"`."""
    out = {}
    for r in range(len(unreduced) + 1):
        for partial in itertools.combinations(unreduced, r):
            rest = [a for a in atoms if a not in partial]
            for slots in itertools.product(range(rank + 1), repeat=len(rest)):
                chosen = [a for a, s in zip(rest, slots, strict=True) if s < rank]
                for order in itertools.permutations(chosen):
                    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
                    for a in order:
                        dims[slots[rest.index(a)]].append(ref(a))
                    x = NamedMapping(
                        m, tuple(DimSharding(merge_refs(d, m)) for d in dims), (),
                        merge_set([ref(a) for a in partial], m),
                    )
                    out[x.text()] = x
    return list(out.values())


def candidate_steps(a: NamedMapping, b: NamedMapping, cuts):
    """The single collectives that could take layout `a` to `b`, found from the pair alone
    (axes cut into atoms at `cuts`, so `"x"` -> `"x":(1)2` is a gather of `"x":(2)2`)."""
    m = a.mesh
    da = [tuple(split_refs(d.axes, cuts, m)) for d in a.dims]
    db = [tuple(split_refs(d.axes, cuts, m)) for d in b.dims]
    prefix = [len(x) <= len(y) and y[: len(x)] == x for x, y in zip(da, db, strict=True)]
    shrink = [len(y) <= len(x) and x[: len(y)] == y for x, y in zip(da, db, strict=True)]
    ua, ub = set(split_refs(a.unreduced, cuts, m)), set(split_refs(b.unreduced, cuts, m))
    if ua == ub:
        if all(shrink) and da != db:
            yield AllGather(tuple(x[len(y):] for x, y in zip(da, db, strict=True)))
        if all(prefix) and da != db:
            yield AllSlice(tuple(y[len(x):] for x, y in zip(da, db, strict=True)))
        changed = [d for d in range(len(da)) if da[d] != db[d]]
        if len(changed) == 2:
            for s, t in (changed, changed[::-1]):
                moved = da[s][len(db[s]):]
                if shrink[s] and prefix[t] and moved and db[t][len(da[t]):] == moved:
                    yield AllToAll(moved, s, t)
        if a.shard_counts() == b.shard_counts() and da != db:
            yield CollectivePermute(b)
    elif ub < ua:
        removed = ua - ub
        if da == db:
            yield AllReduce(tuple(sorted(removed)))
        added = [y[len(x):] for x, y in zip(da, db, strict=True)]
        if all(prefix) and sorted(r for d in added for r in d) == sorted(removed):
            yield ReduceScatter(tuple(added))


def full_graph(layouts, shape, dtype, cuts, cost="ring") -> nx.DiGraph:
    graph = nx.DiGraph()
    for a, b in itertools.permutations(layouts, 2):
        for step in candidate_steps(a, b, cuts):
            try:
                out = step.apply(a, shape)
            except ShardingError:
                continue  # uneven data would leave the group
            assert same_layout(out, b), (step, a.text(), b.text())
            w = (step.ring_bytes if cost == "ring" else step.bytes_per_device)(shape, dtype, a)
            key = (a.text(), b.text())
            if not graph.has_edge(*key) or graph.edges[key]["weight"] > w:
                graph.add_edge(*key, weight=w)
    return graph


def bounded_distances(graph: nx.DiGraph, source: str, k: int) -> dict[str, int]:
    """Cheapest cost from `source` over paths of at most k collectives (Bellman-Ford rounds)."""
    dist = {source: 0}
    for _ in range(k):
        nxt = dict(dist)
        for u, d in dist.items():
            for v, data in graph[u].items():
                if d + data["weight"] < nxt.get(v, float("inf")):
                    nxt[v] = d + data["weight"]
        dist = nxt
    return dist


def uses_sub_axis(mapping: NamedMapping) -> bool:
    return any(r.is_sub_axis for r in (*mapping.used_axes(), *mapping.unreduced))


BRUTE_FORCE = [
    # mesh, atoms, shape, unreduced atoms the sources may have
    ({"x": 2, "y": 2, "z": 2}, "x y z", (8, 4), ()),
    ({"x": 2, "y": 2, "z": 2}, "x y z", (4, 2, 8), ()),
    ({"x": 2, "y": 2, "z": 2}, "x y z", (4, 6), ("y", "z")),
    ({"x": 4, "y": 2}, "x y", (10, 6), ("y",)),
    ({"x": 2, "y": 3}, "x y", (6, 5, 4), ("x",)),
    ({"x": 3, "y": 2, "z": 2}, "x y z", (12, 7), ("z",)),
    ({"x": 4, "y": 4}, "x y", (16, 8, 6), ("x",)),
    ({"x": 4, "y": 2}, "x:1:2 x:2:2 y", (8, 12), ()),
    ({"x": 4, "y": 2}, "x:1:2 x:2:2 y", (8, 6), ("x:2:2",)),
]


@pytest.mark.parametrize(
    "axes, atoms, shape, unreduced, cost",
    [(*case, "ring") for case in BRUTE_FORCE]
    + [(*BRUTE_FORCE[2], "bytes"), (*BRUTE_FORCE[8], "bytes")],
)
def test_plans_are_optimal_by_brute_force(axes, atoms, shape, unreduced, cost):
    m = mesh(axes)
    layouts = all_layouts(m, atoms.split(), len(shape), unreduced)
    cuts = cut_points([ref(a) for a in atoms.split()], m)
    graph = full_graph(layouts, shape, "f32", cuts, cost)
    by_text = {x.text(): x for x in layouts}
    # With sub-atoms, the planner cuts only where src/dst do: compare pairs that name a sub-axis.
    needs_cut = any(":" in a for a in atoms.split())
    rnd = random.Random(len(layouts))
    checked = 0
    for src in rnd.sample(layouts, min(10, len(layouts))):
        exact = nx.single_source_dijkstra_path_length(graph, src.text())
        bounded = bounded_distances(graph, src.text(), 3)
        for text in rnd.sample(sorted(exact), min(40, len(exact))):
            dst = by_text[text]
            if needs_cut and not (uses_sub_axis(src) or uses_sub_axis(dst)):
                continue
            plan = plan_reshard(shape, "f32", src, dst, cost=cost)
            assert plan.cost == exact[text], (src.text(), dst.text(), plan.text())
            assert plan.cost <= bounded.get(text, float("inf"))
            assert plan.cost <= greedy_plan(shape, "f32", src, dst, cost=cost).cost
            checked += 1
    assert checked >= 20


# ----- properties ------------------------------------------------------------------------------


@st.composite
def reshard_cases(draw):
    sizes = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))
    names = ["x", "y", "z"][: len(sizes)]
    ids = draw(st.permutations(range(int(np.prod(sizes))))) if draw(st.booleans()) else None
    m = mesh(dict(zip(names, sizes, strict=True)), ids)
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 12), min_size=rank, max_size=rank)))
    refs = random_refs(draw, names, sizes)
    src = random_layout(draw, m, refs, rank, refs)
    dst = random_layout(draw, m, refs, rank, list(src.unreduced))
    return m, shape, src, dst


def random_refs(draw, names: list[str], sizes: list[int]) -> list[AxisRef]:
    """The mesh's axes, a size-4 one split into sub-axes sometimes (so plans cross sub-axis
    boundaries)."""
    refs = []
    for name, size in zip(names, sizes, strict=True):
        if size == 4 and draw(st.booleans()):
            refs += [AxisRef(name, 1, 2), AxisRef(name, 2, 2)]
        else:
            refs.append(AxisRef(name))
    return refs


def random_layout(draw, m: DeviceMesh, refs: list[AxisRef], rank: int,
                  unreduced_allowed: list[AxisRef]) -> NamedMapping:
    """Each of `refs`, in a random order, on a random dim, unreduced (if allowed) or unused."""
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    unreduced = []
    for r in draw(st.permutations(refs)):
        slot = draw(st.integers(0, rank + 1))
        if slot < rank:
            dims[slot].append(r)
        elif slot == rank and r in unreduced_allowed:
            unreduced.append(r)
    merged = [merge_refs(d, m) for d in dims]
    return NamedMapping(m, tuple(DimSharding(d) for d in merged), (), tuple(unreduced))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reshard_cases(), st.integers(0, 2**16))
def test_plans_reach_the_target_and_move_the_right_data(case, seed):
    m, shape, src, dst = case
    plan = plan_reshard(shape, "i32", src, dst)
    greedy = greedy_plan(shape, "i32", src, dst)
    assert plan.cost <= greedy.cost
    rng = np.random.default_rng(seed)
    check_plan(plan, shape, src, dst, rng)
    check_plan(greedy, shape, src, dst, rng)


@pytest.mark.parametrize("dst_dims, dst_unreduced", [("y,z", ""), ("x", "z:1:2,z:2:2")])
def test_unreduced_sub_axes_that_make_a_whole_axis_plan_like_the_whole_axis(
    dst_dims, dst_unreduced
):
    """`unreduced={"z":(1)2, "z":(2)2}` is `unreduced={"z"}` (Shardy merges adjacent sub-axes):
    the planner's layouts, which merge them, must compare equal to the ones given."""
    m = mesh({"x": 3, "y": 3, "z": 4})
    src = layout(m, ["x,y"], "z:1:2,z:2:2")
    dst = layout(m, [dst_dims], dst_unreduced)
    for shape in [(1,), (9,), (10,)]:
        plan = plan_reshard(shape, "i32", src, dst)
        check_plan(plan, shape, src, dst)
        check_plan(greedy_plan(shape, "i32", src, dst), shape, src, dst)
        assert plan.steps == plan_reshard(shape, "i32", layout(m, ["x,y"], "z"), dst).steps


def test_max_partials_reduce_with_max():
    m = mesh({"x": 2, "y": 2})
    src = layout(m, ["", ""], "x", ReduceOp.MAX)
    dst = layout(m, ["x", ""])
    dst = NamedMapping(m, dst.dims, (), (), ReduceOp.MAX)
    plan = plan_reshard((6, 4), "i32", src, dst)
    check_plan(plan, (6, 4), src, dst)
