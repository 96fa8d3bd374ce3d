"""Projection of shardings onto factors and back (mirrors Shardy's sharding_projection_test)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.ir.axis_refs import (
    PrefixStatus,
    add_or_merge,
    can_coexist,
    contains,
    overlaps,
    prefix_of,
    prefix_status,
    prefix_without_overlap,
)
from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.propagation.factor_propagation import propagate_shardings
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
    common_mesh,
    dims_from_factors,
    project_tensor,
    update_mapping,
)
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.rules.rule_parser import parse_rule

# ----- helpers --------------------------------------------------------------------------------

_REF = re.compile(r'"(\w+)"(?::\((\d+)\)(\d+))?')


def ax(name: str, pre: int | None = None, size: int | None = None) -> AxisRef:
    return AxisRef(name) if pre is None else AxisRef(name, pre, size)


def refs(text: str) -> tuple[AxisRef, ...]:
    """`'"a":(1)2, "b"'` -> the axis refs."""
    return tuple(
        AxisRef(n) if not p else AxisRef(n, int(p), int(s)) for n, p, s in _REF.findall(text)
    )


def sharding(
    mesh: DeviceMesh, dims: str, replicated: str = "", unreduced: str = ""
) -> NamedMapping:
    """`sharding(mesh, '[{"a", ?}, {}p1]')` -> a NamedMapping (Shardy's dim syntax)."""
    out = []
    for inner, prio in re.findall(r"\{([^}]*)\}(?:p(\d+))?", dims):
        out.append(DimSharding(refs(inner), "?" not in inner, None if prio == "" else int(prio)))
    return NamedMapping(mesh, tuple(out), refs(replicated), refs(unreduced))


def fs(text: str = "", closed: bool = False, minor: bool = True, overflow: str = ""):
    return FactorSharding(refs(text), closed, minor, refs(overflow))


DOT = parse_rule("([i, k], [k, j])->([i, j]) {i=2, j=4, k=8} reduction={k}")
ADD = parse_rule("([i, j], [i, j])->([i, j]) {i=2, j=4}")


def reshape_rule(text: str) -> OpShardingRule:
    return parse_rule(text)


def check_round_trip(projection: ShardingProjection, operands, results, rule, mesh) -> None:
    """Rebuilding every tensor from its projection gives back the original sharding."""
    new_operands, new_results = projection.to_mappings(operands, results, rule, mesh)
    for old, new in zip(operands + results, new_operands + new_results, strict=True):
        assert new is old


# ----- axis algebra ---------------------------------------------------------------------------


def test_axis_overlap_contains_prefix():
    assert overlaps(ax("a"), ax("a", 2, 2)) and not overlaps(ax("a"), ax("b"))
    assert not overlaps(ax("a", 1, 2), ax("a", 2, 2))
    assert contains(ax("a"), ax("a", 2, 2)) and not contains(ax("a", 2, 2), ax("a"))
    assert contains(ax("a", 1, 8), ax("a", 2, 2))
    assert prefix_of(ax("a", 1, 2), ax("a")) and not prefix_of(ax("a", 2, 2), ax("a"))
    assert prefix_of(ax("a", 2, 2), ax("a", 2, 4))


def test_prefix_without_overlap():
    assert prefix_without_overlap(ax("a"), ax("b")) == ax("a")
    assert prefix_without_overlap(ax("a"), ax("a", 4, 2)) == ax("a", 1, 4)
    assert prefix_without_overlap(ax("a", 2, 4), ax("a", 1, 4)) is None
    assert prefix_without_overlap(ax("a", 1, 4), ax("a", 2, 2)) == ax("a", 1, 2)
    # sub-axes of a 6-axis cut at 2 and at 3 cannot shard one tensor together
    assert prefix_without_overlap(ax("a", 1, 2), ax("a", 3, 2)) is None
    assert prefix_without_overlap(ax("a", 1, 3), ax("a", 2, 3)) is None


def test_can_coexist():
    assert can_coexist(ax("a"), ax("b"))
    assert can_coexist(ax("a"), ax("a", 2, 2))
    assert can_coexist(ax("a", 1, 2), ax("a", 4, 2))  # gap "a":(2)2 is a sub-axis
    assert not can_coexist(ax("a", 1, 2), ax("a", 3, 2))  # gap of size 3/2
    assert not can_coexist(ax("a", 1, 3), ax("a", 2, 3))  # overlap of 6/2 starting at 2
    assert can_coexist(ax("a", 1, 4), ax("a", 2, 4))
    for a, b in [(ax("a", 1, 2), ax("a", 3, 2)), (ax("a", 2, 4), ax("a", 1, 4))]:
        assert can_coexist(a, b) == can_coexist(b, a)


def test_add_or_merge_restores_whole_axis():
    mesh = DeviceMesh.create("m", {"a": 8})
    axes = [ax("a", 1, 2)]
    add_or_merge(axes, ax("a", 2, 4), mesh)
    assert axes == [ax("a")]
    axes = [ax("a", 1, 2)]
    add_or_merge(axes, ax("a", 2, 2), mesh)
    assert axes == [ax("a", 1, 4)]
    add_or_merge(axes, ax("b"), mesh)
    assert axes == [ax("a", 1, 4), ax("b")]


def test_prefix_status_cases():
    a, b, c = ax("a"), ax("b"), ax("c")
    for same in ([], [a], [ax("a", 2, 4)], [a, ax("b", 1, 2)]):
        assert prefix_status(same, same) is PrefixStatus.EQUAL
    for short, long in (
        ([], [a]),
        ([a], [a, b]),
        ([ax("a", 1, 4)], [a, b]),
        ([a, ax("b", 1, 2)], [a, b]),
        ([a, ax("b", 1, 2)], [a, ax("b", 1, 8)]),
    ):
        assert prefix_status(short, long) is PrefixStatus.STRICT_PREFIX
        assert prefix_status(long, short) is PrefixStatus.NOT_A_PREFIX
    for x, y in (
        ([a], [b]),
        ([a], [ax("b", 1, 2)]),
        ([a, b], [a, c]),
        ([a, b], [b, a]),
        ([a, ax("b", 2, 4)], [a, b]),
        ([a], [ax("a", 1, 4), b]),
    ):
        assert prefix_status(x, y) is PrefixStatus.NOT_A_PREFIX
        assert prefix_status(y, x) is PrefixStatus.NOT_A_PREFIX


# ----- build ----------------------------------------------------------------------------------


def test_dot_general_simple():
    mesh = DeviceMesh.create("mesh", {"a": 4, "b": 2, "c": 2, "d": 2, "e": 2})
    lhs = sharding(mesh, '[{"b"}, {"a", ?}]')
    rhs = sharding(mesh, '[{"a", "c"}, {"d", ?}]', replicated='"b"')
    out = sharding(mesh, '[{?}, {"d", "e"}]', replicated='"a", "c"')
    p = ShardingProjection.build([lhs, rhs], [out], DOT)
    assert p.operands[0].factors == {0: fs('"b"', closed=True), 2: fs('"a"')}
    assert p.operands[1].factors == {2: fs('"a", "c"', closed=True), 1: fs('"d"')}
    assert p.operands[1].replicated == refs('"b"')
    assert p.results[0].factors == {0: fs(""), 1: fs('"d", "e"', closed=True)}
    assert p.results[0].replicated == refs('"a", "c"')
    assert p.results[0].blocked_axes() == refs('"a", "c"')
    check_round_trip(p, [lhs, rhs], [out], DOT, mesh)


def test_reshape_split_dim():
    mesh = DeviceMesh.create("mesh", {"a": 4, "b": 2, "c": 3})
    rule = reshape_rule("([ij])->([i, j]) {i=2, j=4}")
    arg = sharding(mesh, '[{"a", "b"}]', replicated='"c"')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a":(1)2', closed=True, minor=False),
        1: fs('"a":(2)2, "b"', closed=True),
    }
    assert p.operands[0].replicated == refs('"c"')
    assert p.results[0].factors == {0: fs(), 1: fs()}
    check_round_trip(p, [arg], [None], rule, mesh)


def test_reshape_split_dim_axis_already_split():
    mesh = DeviceMesh.create("mesh", {"a": 16, "b": 8, "c": 4})
    arg = sharding(mesh, '[{"a":(1)2, "b"}, {"a":(2)8}]', replicated='"c":(2)2')
    rule = reshape_rule("([i, jk])->([i, j, k]) {i=16, j=2, k=4}")
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a":(1)2, "b"', closed=True),
        1: fs('"a":(2)2', closed=True, minor=False),
        2: fs('"a":(4)4', closed=True),
    }
    assert p.operands[0].replicated == refs('"c":(2)2')
    check_round_trip(p, [arg], [None], rule, mesh)


def test_reshape_merge_dim():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2})
    rule = reshape_rule("([i, j])->([ij]) {i=4, j=4}")
    arg = sharding(mesh, '[{"a", ?}, {"b"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {0: fs('"a"'), 1: fs('"b"', closed=True)}
    assert p.results[0].factors == {0: fs(minor=False), 1: fs()}
    check_round_trip(p, [arg], [None], rule, mesh)


def test_reshape_with_size_one_dims():
    mesh = DeviceMesh.create("mesh", {"a": 2})
    rule = reshape_rule("([i, j, k])->([ij]) {i=4, j=2, k=1}")
    arg = sharding(mesh, '[{"a"}, {}, {}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a"', closed=True),
        1: fs(closed=True),
        2: fs(closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_single_factor_non_divisible_and_overflowing_axes_stay_on_the_factor():
    mesh = DeviceMesh.create("mesh", {"a": 3, "b": 4})
    a = sharding(mesh, '[{}, {"a"}]')
    b = sharding(mesh, '[{}, {"a", "b"}]')
    p = ShardingProjection.build([a, b], [None], ADD)
    assert p.operands[0].factors == {0: fs(closed=True), 1: fs('"a"', closed=True)}
    assert p.operands[1].factors[1] == fs('"a", "b"', closed=True)
    check_round_trip(p, [a, b], [None], ADD, mesh)


def test_minor_most_factor_takes_the_non_dividing_rest():
    mesh = DeviceMesh.create("mesh", {"a": 6})
    rule = reshape_rule("([ij])->([i, j]) {i=2, j=4}")
    arg = sharding(mesh, '[{"a"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a":(1)2', closed=True, minor=False),
        1: fs('"a":(2)3', closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_minor_most_factor_overflows_with_size_one_axes():
    mesh = DeviceMesh.create("mesh", {"a": 16, "b": 1, "c": 1})
    rule = reshape_rule("([ij])->([i, j]) {i=2, j=4}")
    arg = sharding(mesh, '[{"a", "b", "c"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a":(1)2', closed=True, minor=False),
        1: fs('"a":(2)8, "b", "c"', closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_non_minor_factor_non_divisible_overflows_and_closes_later_factors():
    mesh = DeviceMesh.create("mesh", {"a": 3})
    rule = reshape_rule("([ij])->([i, j]) {i=4, j=4}")
    arg = sharding(mesh, '[{"a", ?}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs(minor=False, overflow='"a"'),
        1: fs(closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_non_minor_factor_non_divisible_sub_axis_overflow():
    mesh = DeviceMesh.create("mesh", {"a": 6})
    rule = reshape_rule("([ij])->([i, j]) {i=4, j=4}")
    arg = sharding(mesh, '[{"a"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a":(1)2', closed=True, minor=False, overflow='"a":(2)3'),
        1: fs(closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_non_minor_factor_non_divisible_multiple_axes():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 3})
    rule = reshape_rule("([ij])->([i, j]) {i=4, j=4}")
    arg = sharding(mesh, '[{"a", "b"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a"', closed=True, minor=False, overflow='"b"'),
        1: fs(closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_size_one_axes_go_to_the_non_minor_factor():
    mesh = DeviceMesh.create("mesh", {"a": 1, "b": 2, "c": 1})
    rule = reshape_rule("([ij])->([i, j]) {i=2, j=4}")
    arg = sharding(mesh, '[{"a", "b", "c"}]')
    p = ShardingProjection.build([arg], [None], rule)
    assert p.operands[0].factors == {
        0: fs('"a", "b", "c"', closed=True, minor=False),
        1: fs(closed=True),
    }
    check_round_trip(p, [arg], [None], rule, mesh)


def test_missing_sharding_is_open_or_closed_on_request():
    p = ShardingProjection.build([None, None], [None], ADD)
    assert all(not f.is_closed for t in p.tensors for f in t.factors.values())
    p = ShardingProjection.build([None, None], [None], ADD, closed_if_missing=True)
    assert all(f.is_closed for t in p.tensors for f in t.factors.values())


def test_unreduced_axes_are_blocked():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2})
    t = project_tensor(sharding(mesh, "[{?}]", unreduced='"b"'), ((0,),), (4,), mesh)
    assert t.unreduced == refs('"b"') and t.blocked_axes() == refs('"b"')


def test_from_factor_axes():
    p = ShardingProjection.from_factor_axes([refs('"a"'), refs('"b"'), refs('"c", "d"')], DOT)
    assert p.operands[0].factors == {0: fs('"a"', closed=True), 2: fs('"c", "d"', closed=True)}
    assert p.operands[1].factors == {2: fs('"c", "d"', closed=True), 1: fs('"b"', closed=True)}
    assert p.results[0].factors == {0: fs('"a"', closed=True), 1: fs('"b"', closed=True)}


def test_build_rejects_rank_and_count_mismatches():
    mesh = DeviceMesh.create("mesh", {"a": 2})
    with pytest.raises(ShardingError, match="rank 1"):
        ShardingProjection.build([sharding(mesh, "[{?}]"), None], [None], ADD)
    with pytest.raises(ShardingError, match="2 operands"):
        ShardingProjection.build([None], [None], ADD)


def test_common_mesh_follows_shardy():
    a2 = DeviceMesh.create("a2", {"a": 2})
    a2_again = DeviceMesh.create("a2_again", {"a": 2})
    a4 = DeviceMesh.create("a4", {"a": 4})
    empty = DeviceMesh.create("empty", {})
    maximal = DeviceMesh("maximal", (), (3,))
    reordered = DeviceMesh.create("reordered", {"a": 2}, device_ids=[1, 0])
    s = {m.name: sharding(m, "[{?}, {?}]") for m in (a2, a2_again, a4, empty, maximal)}
    s["maximal"] = NamedMapping(maximal, ())
    s["reordered"] = sharding(reordered, "[{?}, {?}]")
    # an empty mesh goes with any other; equal meshes under two names are one (the first)
    assert common_mesh([s["empty"], None, s["a2"]]) is a2
    assert common_mesh([s["a2"], s["empty"], s["a2_again"]]) is a2
    assert common_mesh([s["a2_again"], s["a2"]]) is a2_again
    # a different shape, device order, or a maximal mesh next to another: no common mesh
    assert common_mesh([s["a2"], s["a4"]]) is None
    assert common_mesh([s["a2"], s["reordered"]]) is None
    assert common_mesh([s["maximal"], s["a2"]]) is None
    assert common_mesh([s["empty"], s["maximal"]]) is maximal
    assert common_mesh([None, None]) is None


def test_propagation_skips_ops_without_a_usable_mesh():
    a2 = DeviceMesh.create("a2", {"a": 2})
    x = sharding(a2, '[{"a"}, {?}]')
    other = sharding(DeviceMesh.create("a4", {"a": 4}), "[{?}, {?}]")
    ops, res = propagate_shardings([x, other], [None], ADD)
    assert ops[1] is other and res == [None]
    # a maximal sharding (`<@maximal, []>`, any rank) never propagates, nor does its op
    maximal = NamedMapping(DeviceMesh("maximal", (), (0,)), ())
    ops, res = propagate_shardings([x, None], [maximal], ADD)
    assert ops == [x, None] and res[0] is maximal


def test_an_empty_mesh_sharding_takes_the_common_mesh_when_it_grows():
    a2 = DeviceMesh.create("a2", {"a": 2})
    empty = DeviceMesh.create("empty", {})
    ops, res = propagate_shardings(
        [sharding(a2, '[{"a"}, {}]'), None], [sharding(empty, "[{?}, {}]")], ADD
    )
    assert str(res[0]) == '<@a2, [{"a", ?}, {}]>'
    closed = sharding(empty, "[{}, {}]")
    assert propagate_shardings([sharding(a2, '[{"a"}, {}]'), None], [closed], ADD)[1][0] is closed


# ----- factors -> tensor ----------------------------------------------------------------------

RESHAPE_MERGE = parse_rule("([i, j])->([ij]) {i=4, j=4}")


def test_consecutive_sub_axes_are_merged():
    mesh = DeviceMesh.create("mesh", {"a": 8, "b": 2, "c": 2})
    t = TensorFactorShardings(
        {0: fs('"b", "a":(2)2', minor=False), 1: fs('"a":(4)2')}, replicated=refs('"c"')
    )
    assert dims_from_factors(t, RESHAPE_MERGE.results[0], (4, 4), mesh) == [
        list(refs('"b", "a":(2)4'))
    ]


def test_overflow_sub_axis_is_merged():
    mesh = DeviceMesh.create("mesh", {"a": 6, "b": 2})
    rule = parse_rule("([ij])->([i, j]) {i=2, j=4}")
    t = TensorFactorShardings(
        {0: fs('"a":(1)2', minor=False, overflow='"a":(2)3'), 1: fs(closed=True)}
    )
    assert dims_from_factors(t, rule.operands[0], rule.factor_sizes, mesh) == [[ax("a")]]


def test_non_minor_factor_fully_sharded_continues():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2, "c": 4, "d": 2})
    t = TensorFactorShardings({0: fs('"a", "b"', minor=False), 1: fs('"c"')})
    assert dims_from_factors(t, RESHAPE_MERGE.results[0], (4, 4), mesh) == [
        list(refs('"a", "b", "c"'))
    ]


def test_non_minor_factor_partially_sharded_drops_later_axes():
    # "b" would need a strided view, so it is not part of the dim.
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2})
    t = TensorFactorShardings({0: fs('"a"', minor=False), 1: fs('"b"')})
    assert dims_from_factors(t, RESHAPE_MERGE.results[0], (4, 4), mesh) == [[ax("a")]]


def test_minor_most_factor_not_divisible():
    mesh = DeviceMesh.create("mesh", {"a": 3, "b": 4})
    t = TensorFactorShardings({0: fs('"b"', minor=False), 1: fs('"a"')})
    assert dims_from_factors(t, RESHAPE_MERGE.results[0], (4, 4), mesh) == [list(refs('"b", "a"'))]


def test_update_mapping_appends_to_open_dims_only():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2, "c": 2, "d": 2})
    old = sharding(mesh, '[{"a", ?}p1, {"b"}]', replicated='"c"')
    t = project_tensor(old, ADD.results[0], ADD.factor_sizes, mesh)
    assert update_mapping(old, t, ADD.results[0], ADD.factor_sizes, mesh) is old
    t.factors[0].axes = refs('"a", "d"')
    new = update_mapping(old, t, ADD.results[0], ADD.factor_sizes, mesh)
    assert new is not None
    assert new.text() == '<@mesh, [{"a", "d", ?}p1, {"b"}], replicated={"c"}>'
    assert new.dims[0] == DimSharding(refs('"a", "d"'), False, 1)
    assert new.dims[1] is old.dims[1]


def test_update_mapping_of_unsharded_value():
    mesh = DeviceMesh.create("mesh", {"a": 2})
    t = project_tensor(None, ADD.results[0], ADD.factor_sizes, mesh)
    assert update_mapping(None, t, ADD.results[0], ADD.factor_sizes, mesh) is None
    t.factors[1].axes = refs('"a"')
    new = update_mapping(None, t, ADD.results[0], ADD.factor_sizes, mesh)
    assert new is not None and new.text() == '<@mesh, [{?}, {"a", ?}]>'


def test_update_mapping_ignores_strided_view_axes():
    mesh = DeviceMesh.create("mesh", {"a": 2, "b": 2})
    old = sharding(mesh, '[{"a", ?}]')
    t = project_tensor(old, RESHAPE_MERGE.results[0], (4, 4), mesh)
    t.factors[1].axes = refs('"b"')  # factor 0 is only half sharded: "b" needs a strided view
    assert update_mapping(old, t, RESHAPE_MERGE.results[0], (4, 4), mesh) is old


# ----- properties -----------------------------------------------------------------------------

MESH = DeviceMesh.create("m", {"a": 2, "b": 4, "c": 3, "d": 8, "e": 1})


@st.composite
def dim_shardings(draw, names: list[str]) -> tuple[DimSharding, list[str]]:
    """A dim sharded by whole axes or single sub-axes taken from `names` (which it consumes)."""
    k = draw(st.integers(0, min(2, len(names))))
    axes = []
    for _ in range(k):
        name = names.pop(draw(st.integers(0, len(names) - 1)))
        n = MESH.axis_size(name)
        splits = [(p, s) for p in (1, 2, 4) for s in (2, 4) if p * s <= n and n % (p * s) == 0]
        splits = [(p, s) for p, s in splits if not (p == 1 and s == n)]
        if splits and draw(st.booleans()):
            p, s = draw(st.sampled_from(splits))
            axes.append(AxisRef(name, p, s))
        else:
            axes.append(AxisRef(name))
    return DimSharding(tuple(axes), draw(st.booleans()))


@given(st.data())
@settings(max_examples=200, deadline=None)
def test_property_projection_round_trips(data):
    """Projecting any valid sharding onto any factorisation of its dims and back is the identity.

    (Shardy's sharding_projection_test checks this for every build case.)
    """
    rank = data.draw(st.integers(1, 3))
    names = list(MESH.axis_names)
    dims = tuple(data.draw(dim_shardings(names)) for _ in range(rank))
    mapping = NamedMapping(MESH, dims)
    sizes: list[int] = []
    tensor_mapping = []
    for _ in range(rank):
        k = data.draw(st.integers(1, 3))
        dim = []
        for _ in range(k):
            dim.append(len(sizes))
            sizes.append(data.draw(st.sampled_from([1, 2, 3, 4, 6, 8, 16])))
        tensor_mapping.append(tuple(dim))
    rule = OpShardingRule(tuple(sizes), (tuple(tensor_mapping),), (tuple(tensor_mapping),))
    p = ShardingProjection.build([mapping], [None], rule)
    check_round_trip(p, [mapping], [None], rule, MESH)
    # Every axis of a dim ends up in exactly one factor or overflow list of that dim.
    for dim, factors in zip(dims, tensor_mapping, strict=True):
        size = 1
        for f in factors:
            for ref in (*p.operands[0].factors[f].axes, *p.operands[0].factors[f].overflow):
                size *= ref.axis_size(MESH)
        assert size == dim.num_shards(MESH)
