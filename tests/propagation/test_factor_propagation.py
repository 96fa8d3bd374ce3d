"""Factor propagation and its strategies (mirrors Shardy's basic/aggressive factor-propagation
tests, translated to our API), plus end-to-end cases through NamedMappings and properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.ir.axis_refs import PrefixStatus, prefix_status
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.propagation.conflicts import (
    _merge_compatible,
    compatible_major_axes,
    no_conflicts_within_factor,
)
from shardc.passes.propagation.direction import PropagationDirection, resolve_directions
from shardc.passes.propagation.factor_propagation import propagate_factors, propagate_shardings
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
)
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.passes.propagation.strategies import AGGRESSIVE, BASIC, strategy_named

BOTH = PropagationDirection.BOTH
FORWARD = PropagationDirection.FORWARD
BACKWARD = PropagationDirection.BACKWARD
NONE = PropagationDirection.NONE

# ----- helpers --------------------------------------------------------------------------------

_REF = re.compile(r'"(\w+)"(?::\((\d+)\)(\d+))?')


def refs(text: str) -> tuple[AxisRef, ...]:
    return tuple(
        AxisRef(n) if not p else AxisRef(n, int(p), int(s)) for n, p, s in _REF.findall(text)
    )


def fs(text: str = "", closed: bool = False, minor: bool = False, overflow: str = ""):
    """A factor sharding; like Shardy's test fixtures, non-minor and open by default."""
    return FactorSharding(refs(text), closed, minor, refs(overflow))


def tensor(factors: dict[int, str | FactorSharding], replicated: str = "", unreduced: str = ""):
    return TensorFactorShardings(
        {f: fs(v) if isinstance(v, str) else v for f, v in factors.items()},
        refs(replicated),
        refs(unreduced),
    )


def rule_for(projection: ShardingProjection, sizes: list[int] | None = None, **kw):
    """A rule whose tensors have exactly the projection's factors, one dim per factor."""
    n = 1 + max((f for t in projection.tensors for f in t.factors), default=0)
    sizes = sizes if sizes is not None else [1] * n

    def mapping(t: TensorFactorShardings):
        return tuple((f,) for f in sorted(t.factors))

    return OpShardingRule(
        tuple(sizes),
        tuple(mapping(t) for t in projection.operands),
        tuple(mapping(t) for t in projection.results),
        **kw,
    )


def run(projection, strategy, direction=BOTH, sizes=None, mesh=None, rule=None, **kw):
    rule = rule if rule is not None else rule_for(projection, sizes)
    updates = propagate_factors(
        projection, rule, direction=direction, strategy=strategy, mesh=mesh, **kw
    )
    return (
        [i for i, u in enumerate(updates.operands) if u],
        [i for i, u in enumerate(updates.results) if u],
    )


def sharding(
    mesh: DeviceMesh, dims: str, replicated: str = "", unreduced: str = ""
) -> NamedMapping:
    out = []
    for inner, prio in re.findall(r"\{([^}]*)\}(?:p(\d+))?", dims):
        out.append(DimSharding(refs(inner), "?" not in inner, None if prio == "" else int(prio)))
    return NamedMapping(mesh, tuple(out), refs(replicated), refs(unreduced))


def texts(mappings) -> list[str | None]:
    return [None if m is None else m.text() for m in mappings]


# ----- compatible major axes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "can_expand", "expected", "still"),
    [
        ('"a"', '"a", "b"', True, '"a", "b"', True),
        ('"a", "b"', '"a", "c"', True, '"a"', False),
        ('"a":(1)2', '"a":(1)4', True, '"a":(1)4', True),
        ('"a":(1)2, "b"', '"a":(1)4, "b"', True, '"a":(1)2', False),
        ('"a"', '"a"', False, '"a"', False),
        ('"a"', '"a", "b"', False, '"a"', False),
        ('"a", "b"', '"a"', False, '"a", "b"', False),
        ('"a":(1)2', '"a":(1)4', False, '"a":(1)2', False),
        ('"a":(1)2', '"a":(2)2', True, "", False),
        ("", '"a"', False, "", False),
    ],
)
def test_merge_compatible_matches_shardy_examples(old, new, can_expand, expected, still):
    result, expand = _merge_compatible(list(refs(old)), refs(new), can_expand)
    assert result == list(refs(expected)) and expand is still


def test_compatible_major_axes_direction():
    p = ShardingProjection([tensor({0: '"a"'})], [tensor({0: '"a", "b"'})])
    assert compatible_major_axes(p, 0, BOTH) == list(refs('"a", "b"'))
    assert compatible_major_axes(p, 0, FORWARD) == list(refs('"a"'))
    assert compatible_major_axes(p, 0, BACKWARD) == list(refs('"a", "b"'))
    assert compatible_major_axes(p, 0, NONE) == []


# ----- basic strategy (Shardy's basic_factor_propagation_test) ---------------------------------


def test_basic_full_axes_conflicts_only_for_same_factor():
    p = ShardingProjection(
        [
            tensor({0: '"a"', 3: '"h"'}),
            tensor({0: "", 2: '"g"', 3: '"i"'}),
            tensor({1: '"e"'}),
        ],
        [
            tensor({0: '"a", "b", "c"', 1: '"e", "f"'}),
            tensor({0: '"a", "b", "d"', 2: "", 3: '"i", "j"'}),
        ],
    )
    # Factor 0 agrees on ["a", "b"], factor 1 on ["e", "f"], factor 2 on ["g"], factor 3 on [].
    assert run(p, BASIC) == ([0, 1, 2], [1])
    assert p.operands == [
        tensor({0: '"a", "b"', 3: '"h"'}),
        tensor({0: '"a", "b"', 2: '"g"', 3: '"i"'}),
        tensor({1: '"e", "f"'}),
    ]
    assert p.results[0] == tensor({0: '"a", "b", "c"', 1: '"e", "f"'})
    assert p.results[1] == tensor({0: '"a", "b", "d"', 2: '"g"', 3: '"i", "j"'})


def test_basic_sub_axes_conflicts_only_for_same_factor():
    p = ShardingProjection(
        [
            tensor({0: '"a", "b"', 1: '"c":(2)2, "d"', 4: '"j":(1)4', 5: '"k":(1)8'}),
            tensor({0: "", 1: '"c":(2)4', 3: '"g", "h":(1)8', 5: fs('"k":(1)4', closed=True)}),
        ],
        [
            tensor(
                {0: '"a":(1)2', 2: '"e":(2)4, "f":(4)2', 3: '"g", "h":(1)4, "i"', 5: '"k":(1)2'}
            ),
            tensor({1: '"c":(2)4, "d"', 2: '"e":(2)4, "f":(4)8', 4: '"j":(2)4', 5: ""}),
        ],
    )
    # Factor 5 agrees on ["k":(1)8], but a closed ["k":(1)4] cuts it to ["k":(1)4].
    assert run(p, BASIC) == ([1], [0, 1])
    assert p.operands[1] == tensor(
        {0: '"a", "b"', 1: '"c":(2)4', 3: '"g", "h":(1)8', 5: fs('"k":(1)4', closed=True)}
    )
    assert p.results[0] == tensor(
        {0: '"a", "b"', 2: '"e":(2)4, "f":(4)8', 3: '"g", "h":(1)4, "i"', 5: '"k":(1)4'}
    )
    assert p.results[1] == tensor(
        {1: '"c":(2)4, "d"', 2: '"e":(2)4, "f":(4)8', 4: '"j":(2)4', 5: '"k":(1)4'}
    )


def conflicts_with_other_factors_and_replicated() -> ShardingProjection:
    return ShardingProjection(
        [
            tensor({0: '"a"', 3: '"h":(1)2, "i"'}),
            tensor({1: '"b"', 2: fs('"f"', closed=True)}, replicated='"h":(1)2'),
            tensor({0: "", 4: '"j":(1)8, "k":(2)4'}),
        ],
        [
            tensor({0: '"a", "b", "c", "d"', 3: ""}, replicated='"h":(2)4, "i":(2)2'),
            tensor({0: '"a", "b", "c", "e"', 2: fs('"f", "g"', closed=True)}),
            tensor({4: '"j":(1)4', 5: '"k":(1)4'}),
        ],
    )


def test_basic_conflicts_between_factors_and_replicated_axes():
    p = conflicts_with_other_factors_and_replicated()
    # Factor 0: "b" is used by factor 1 -> ["a"]. Factor 3: the first result replicates "i":(2)2
    # -> ["h":(1)2, "i":(1)2]. Factor 4: "k":(2)4 overlaps factor 5's "k":(1)4 -> ["j":(1)8].
    assert run(p, BASIC) == ([2], [0, 2])
    assert p.operands[2] == tensor({0: '"a"', 4: '"j":(1)8, "k":(2)4'})
    assert p.results[0] == tensor(
        {0: '"a", "b", "c", "d"', 3: '"h":(1)2, "i":(1)2'}, replicated='"h":(2)4, "i":(2)2'
    )
    assert p.results[2] == tensor({4: '"j":(1)8', 5: '"k":(1)4'})


def test_basic_conflicts_with_overflow_axes():
    p = ShardingProjection(
        [tensor({0: '"a", "b"', 1: '"c"'})],
        [tensor({0: "", 1: fs(overflow='"b":(1)2')})],
    )
    assert run(p, BASIC) == ([], [0])
    assert p.results[0] == tensor({0: '"a"', 1: fs(overflow='"b":(1)2')})


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ([9, 4], '"a", "b"'),  # 9 is divisible by |a|*|b| = 9
        ([6, 19], '"a"'),  # 6 is divisible by |a| = 3 but not by 9
        ([4, 1], ""),  # 4 is not divisible by 3
    ],
)
def test_basic_non_minor_factor_must_be_divisible(sizes, expected):
    mesh = DeviceMesh.create("m", {"a": 3, "b": 3, "c": 3})
    p = ShardingProjection(
        [tensor({0: fs('"a", "b"', minor=True), 1: fs('"c"', minor=True)})],
        [tensor({0: fs(), 1: fs(minor=True)})],
    )
    # The minor-most factor 1 may take "c" even though 3 does not divide its size.
    assert run(p, BASIC, sizes=sizes, mesh=mesh) == ([], [0])
    assert p.results[0] == tensor({0: fs(expected), 1: fs('"c"', minor=True)})


def test_non_minor_factor_takes_the_dividing_sub_axis():
    mesh = DeviceMesh.create("m", {"a": 4})
    for strategy in (BASIC, AGGRESSIVE):
        p = ShardingProjection([tensor({0: fs('"a"', minor=True)})], [tensor({0: fs()})])
        assert run(p, strategy, sizes=[2], mesh=mesh) == ([], [0])
        assert p.results[0].factors[0].axes == refs('"a":(1)2')


def uni_directional(forward: bool):
    operand0 = tensor({0: '"a", "b"', 1: '"d", "e"'})
    operand1 = tensor({0: '"a"', 1: '"d"'})
    result = tensor({0: '"a", "b", "c"', 1: '"d"'})
    if forward:  # the same tensors with operands and results swapped
        return ShardingProjection([result], [operand0, operand1])
    return ShardingProjection([operand0, operand1], [result])


def test_basic_backward_only_expands_from_results():
    p = uni_directional(forward=False)
    # Operands get ["a", "b", "c"] from the result; "e" does not move sideways along factor 1.
    assert run(p, BASIC, BACKWARD) == ([0, 1], [])
    assert p.operands == [
        tensor({0: '"a", "b", "c"', 1: '"d", "e"'}),
        tensor({0: '"a", "b", "c"', 1: '"d"'}),
    ]


def test_basic_forward_only_expands_from_operands():
    p = uni_directional(forward=True)
    assert run(p, BASIC, FORWARD) == ([], [0, 1])
    assert p.results == [
        tensor({0: '"a", "b", "c"', 1: '"d", "e"'}),
        tensor({0: '"a", "b", "c"', 1: '"d"'}),
    ]


def test_uni_directional_propagation_still_respects_conflicts():
    operands = [tensor({0: '"a", "b"'}), tensor({0: '"a"'})]
    result = tensor({0: '"z", "a", "b"'})
    for strategy in (BASIC, AGGRESSIVE):
        p = ShardingProjection([*operands], [result])
        assert run(p, strategy, BACKWARD) == ([], [])
        p = ShardingProjection([result], [*operands])
        assert run(p, strategy, FORWARD) == ([], [])


def test_none_direction_propagates_nothing():
    for strategy in (BASIC, AGGRESSIVE):
        p = ShardingProjection(
            [tensor({0: '"a", "b", "c"'})],
            [tensor({0: '"a", "b"'}), tensor({0: '"a"'}), tensor({0: '"a", "b", "c"'})],
        )
        assert run(p, strategy, NONE) == ([], [])


def test_conservative_propagation_stops_at_sub_axes():
    for strategy in (BASIC, AGGRESSIVE):
        p = ShardingProjection(
            [tensor({0: '"a", "b":(1)2, "c"', 1: '"b":(2)4'})],
            [tensor({0: "", 1: ""})],
        )
        assert run(p, strategy, conservative=True) == ([], [0])
        assert p.results[0] == tensor({0: '"a"', 1: ""})


# ----- aggressive strategy (Shardy's aggressive_factor_propagation_test) -----------------------


def test_aggressive_real_and_fake_conflicts():
    p = ShardingProjection(
        [
            tensor({0: '"a"', 2: '"c"', 4: '"b"', 6: '"e"', 7: "", 8: '"f"', 10: '"g"'}),
            tensor(
                {1: '"a"', 2: "", 3: '"c"', 4: "", 5: '"b"', 6: "", 7: '"e"', 9: '"g"', 10: '"f"'}
            ),
        ],
        [
            tensor(
                {
                    0: "",
                    1: "",
                    2: fs(overflow='"d"'),
                    3: "",
                    4: fs(closed=True),
                    5: "",
                    6: fs(closed=True),
                    7: "",
                    8: "",
                    9: "",
                }
            ),
        ],
    )
    operands = list(p.operands)
    # "a" could reach the result along factor 0 or 1 (a real conflict): factor 0 wins, its source
    # is operand 0 and all tensors have the same size. The other conflicts are fake ones.
    assert run(p, AGGRESSIVE) == ([], [0])
    assert p.operands == operands
    assert p.results[0] == tensor(
        {
            0: '"a"',
            1: "",
            2: fs(overflow='"d"'),
            3: '"c"',
            4: fs(closed=True),
            5: '"b"',
            6: fs(closed=True),
            7: '"e"',
            8: '"f"',
            9: '"g"',
        }
    )


def test_aggressive_two_factors_that_never_meet_share_an_axis():
    p = ShardingProjection(
        [tensor({0: '"a"'}), tensor({1: '"a"'})],
        [tensor({0: ""}), tensor({1: ""})],
    )
    assert run(p, AGGRESSIVE) == ([], [0, 1])
    assert p.results == [tensor({0: '"a"'}), tensor({1: '"a"'})]


def test_aggressive_conflicts_between_factors_and_replicated_axes():
    p = conflicts_with_other_factors_and_replicated()
    # Unlike basic, factor 0 still reaches ["a", "b", "c"] on the tensors where "b" is free.
    assert run(p, AGGRESSIVE) == ([0, 2], [0, 2])
    assert p.operands[0] == tensor({0: '"a", "b", "c"', 3: '"h":(1)2, "i"'})
    assert p.operands[2] == tensor({0: '"a", "b", "c"', 4: '"j":(1)8, "k":(2)4'})
    assert p.results[0] == tensor(
        {0: '"a", "b", "c", "d"', 3: '"h":(1)2, "i":(1)2'}, replicated='"h":(2)4, "i":(2)2'
    )
    assert p.results[2] == tensor({4: '"j":(1)8', 5: '"k":(1)4'})


def test_aggressive_new_axes_conflict():
    p = ShardingProjection(
        [
            tensor({0: '"a", "b", "c"', 1: "", 2: fs(closed=True), 3: ""}, replicated='"d"'),
            tensor({0: "", 1: '"b", "a"', 2: "", 3: '"d"'}),
            tensor({0: fs(closed=True), 1: "", 2: '"c", "a"', 3: ""}),
        ],
        [
            tensor({0: "", 1: fs(closed=True), 2: "", 3: ""}),
            tensor({0: '"a", "b", "d"', 1: "", 2: "", 3: ""}),
        ],
    )
    # "a" can reach result 0 along factor 0 or 2; factor 0 wins (source operand 0).
    assert run(p, AGGRESSIVE) == ([1, 2], [0, 1])
    assert p.operands[1] == tensor({0: "", 1: '"b", "a"', 2: '"c"', 3: '"d"'})
    assert p.operands[2] == tensor({0: fs(closed=True), 1: '"b"', 2: '"c", "a"', 3: '"d"'})
    assert p.results[0] == tensor({0: '"a", "b"', 1: fs(closed=True), 2: '"c"', 3: '"d"'})
    assert p.results[1] == tensor({0: '"a", "b", "d"', 1: "", 2: '"c"', 3: ""})


@pytest.mark.parametrize(
    ("directions", "winner"),
    [
        ([BOTH, NONE], 0),
        ([BOTH, BOTH], 0),  # both may propagate: factor 0 wins the tie (lower source index)
        ([NONE, BOTH], 1),
    ],
)
def test_aggressive_propagate_along_specific_factors(directions, winner):
    sharded0 = {0: '"a"', 1: ""}
    sharded1 = {0: "", 1: '"a"'}
    p = ShardingProjection([tensor(sharded0), tensor(sharded1)], [tensor({0: "", 1: ""})])
    assert run(p, AGGRESSIVE, directions) == ([], [0])
    assert p.results[0] == tensor(sharded0 if winner == 0 else sharded1)


def test_aggressive_larger_source_tensor_wins():
    def projection():
        return ShardingProjection(
            [tensor({0: '"a"', 2: ""}), tensor({2: "", 1: '"a"'})], [tensor({0: "", 1: ""})]
        )

    p = projection()
    run(p, AGGRESSIVE, tensor_sizes=[8, 64, 16])  # operand 1 is larger: factor 1 wins
    assert p.results[0] == tensor({0: "", 1: '"a"'})
    p = projection()
    run(p, AGGRESSIVE, tensor_sizes=[64, 8, 16])
    assert p.results[0] == tensor({0: '"a"', 1: ""})


def test_aggressive_elementwise_prefers_the_more_sharded_factor():
    mesh = DeviceMesh.create("m", {"x": 2, "y": 2})

    def projection():
        return ShardingProjection(
            [tensor({0: '"x"', 1: ""}), tensor({0: "", 1: '"x", "y"'})],
            [tensor({0: "", 1: ""})],
        )

    p = projection()
    run(p, AGGRESSIVE, sizes=[8, 8], mesh=mesh, elementwise=True)
    assert p.results[0] == tensor({0: "", 1: '"x", "y"'})
    p = projection()
    run(p, AGGRESSIVE, sizes=[8, 8], mesh=mesh)  # not element-wise: the lower source index wins
    assert p.results[0] == tensor({0: '"x"', 1: ""})


def test_aggressive_elementwise_operand_gets_no_more_than_the_result():
    p = ShardingProjection([tensor({0: '"a"'}), tensor({0: ""})], [tensor({0: fs(closed=True)})])
    assert run(p, AGGRESSIVE, elementwise=True) == ([], [])
    assert p.operands[1] == tensor({0: ""})
    p = ShardingProjection([tensor({0: '"a"'}), tensor({0: ""})], [tensor({0: fs(closed=True)})])
    assert run(p, AGGRESSIVE) == ([1], [])
    assert p.operands[1] == tensor({0: '"a"'})


def test_basic_closed_tensor_blocks_the_factor_for_all_aggressive_only_skips_it():
    def projection():
        return ShardingProjection(
            [tensor({0: '"a"'}), tensor({0: ""})], [tensor({0: fs(closed=True)})]
        )

    p = projection()
    assert run(p, BASIC) == ([], [])
    p = projection()
    assert run(p, AGGRESSIVE) == ([1], [])


def test_unreduced_axes_are_never_added():
    for strategy in (BASIC, AGGRESSIVE):
        p = ShardingProjection([tensor({0: '"a", "b"'})], [tensor({0: ""}, unreduced='"b"')])
        assert run(p, strategy) == ([], [0])
        assert p.results[0].factors[0].axes == refs('"a"')


def test_strategy_lookup():
    assert strategy_named("basic") is BASIC and strategy_named("aggressive") is AGGRESSIVE
    assert str(AGGRESSIVE) == "aggressive"
    with pytest.raises(ValueError, match="unknown propagation strategy"):
        strategy_named("greedy")


def test_direction_union_and_intersection():
    assert FORWARD.union(BACKWARD) is BOTH and BOTH.intersection(FORWARD) is FORWARD
    assert FORWARD.intersection(BACKWARD) is NONE and NONE.union(FORWARD) is FORWARD


def test_resolve_directions_blocks_and_filters_kinds():
    rule = OpShardingRule(
        (2, 2, 2),
        (((0,), (1,), (2,)),),
        (((0,),),),
        (FactorKind.PASS_THROUGH, FactorKind.REDUCTION, FactorKind.PASS_THROUGH),
        blocked=(2,),
    )
    assert resolve_directions(rule, BOTH) == (BOTH, BOTH, NONE)
    assert resolve_directions(rule, BOTH, only_pass_through=True) == (BOTH, NONE, NONE)
    assert resolve_directions(rule, lambda f: FORWARD) == (FORWARD, FORWARD, NONE)
    with pytest.raises(ValueError, match="2 directions"):
        resolve_directions(rule, [BOTH, BOTH])


def test_within_factor_keeps_the_factor_own_last_axis_when_closed():
    closed = fs('"a":(1)2', closed=True)
    assert no_conflicts_within_factor(AxisRef("a"), (), closed, 1, 8, None) == AxisRef("a", 1, 2)
    assert no_conflicts_within_factor(AxisRef("b"), (), closed, 1, 8, None) is None


# ----- end to end through NamedMappings -------------------------------------------------------

MESH = DeviceMesh.create("m", {"a": 2, "b": 2, "c": 4})
MATMUL = parse_rule("([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}")
ADD = parse_rule("([i, j], [i, j])->([i, j]) {i=8, j=16}")


def test_matmul_forward_to_unsharded_result():
    lhs = sharding(MESH, '[{"a"}, {?}]')
    rhs = sharding(MESH, '[{?}, {"b", ?}]')
    operands, results = propagate_shardings([lhs, rhs], [None], MATMUL)
    assert operands[0] is lhs and operands[1] is rhs
    assert texts(results) == ['<@m, [{"a", ?}, {"b", ?}]>']


def test_matmul_contracting_dim_propagates_between_operands_only():
    lhs = sharding(MESH, '[{?}, {"c"}]')
    rhs = sharding(MESH, "[{?}, {?}]")
    operands, results = propagate_shardings([lhs, rhs], [None], MATMUL)
    assert texts(operands) == [lhs.text(), '<@m, [{"c", ?}, {?}]>']
    assert results == [None]


def test_elementwise_result_before_operands_and_closed_dims_untouched():
    a = sharding(MESH, '[{"a"}, {?}]')
    b = sharding(MESH, '[{}, {"b"}]')
    r = sharding(MESH, "[{?}, {?}]")
    operands, results = propagate_shardings([a, b], [r], ADD, elementwise=True)
    assert texts(results) == ['<@m, [{"a", ?}, {"b", ?}]>']
    assert texts(operands) == ['<@m, [{"a"}, {"b", ?}]>', b.text()]


def test_reshape_splits_an_axis_into_sub_axes():
    rule = parse_rule("([ij])->([i, j]) {i=2, j=8}")
    arg = sharding(MESH, '[{"c", ?}]')
    _, results = propagate_shardings([arg], [None], rule)
    assert texts(results) == ['<@m, [{"c":(1)2, ?}, {"c":(2)2, ?}]>']
    # ...and merging the dims back gives the whole axis again.
    back = parse_rule("([i, j])->([ij]) {i=2, j=8}")
    _, results = propagate_shardings([results[0]], [None], back)
    assert texts(results) == ['<@m, [{"c", ?}]>']


def test_priorities_survive_and_replicated_axes_are_avoided():
    a = sharding(MESH, '[{"a", "b", ?}p1, {?}]')
    b = sharding(MESH, "[{?}, {?}]", replicated='"b"')
    operands, results = propagate_shardings([a, b], [None], ADD)
    assert texts(operands) == [a.text(), '<@m, [{"a", ?}, {?}], replicated={"b"}>']
    assert texts(results) == ['<@m, [{"a", "b", ?}, {?}]>']


def test_only_pass_through_factors():
    lhs = sharding(MESH, '[{"a"}, {"c"}]')
    rhs = sharding(MESH, "[{?}, {?}]")
    operands, results = propagate_shardings([lhs, rhs], [None], MATMUL, only_pass_through=True)
    assert operands[1] is rhs  # the reduction factor k did not propagate
    assert texts(results) == ['<@m, [{"a", ?}, {?}]>']


def test_blocked_factor_does_not_propagate():
    rule = parse_rule("([i, j])->([i, j]) {i=8, j=16} blocked_propagation={i}")
    arg = sharding(MESH, '[{"a"}, {"b"}]')
    _, results = propagate_shardings([arg], [None], rule)
    assert texts(results) == ['<@m, [{?}, {"b", ?}]>']


def test_forward_direction_can_shard_a_sibling_operand():
    # Shardy's direction only picks the tensors that drive a factor; all tensors may receive it.
    a = sharding(MESH, '[{"a"}, {?}]')
    b = sharding(MESH, "[{?}, {?}]")
    operands, results = propagate_shardings([a, b], [None], ADD, direction=FORWARD)
    assert texts(results) == ['<@m, [{"a", ?}, {?}]>']
    assert texts(operands) == [a.text(), '<@m, [{"a", ?}, {?}]>']
    # Backward, the unsharded result drives and cuts nothing, but cannot lengthen either.
    operands, results = propagate_shardings([a, b], [None], ADD, direction=BACKWARD)
    assert operands[1] is b and results == [None]


def test_nothing_to_propagate_without_any_sharding():
    operands, results = propagate_shardings([None, None], [None], ADD)
    assert operands == [None, None] and results == [None]


# ----- properties -----------------------------------------------------------------------------

PMESH = DeviceMesh.create("p", {"a": 2, "b": 4, "c": 3, "d": 2})


@st.composite
def ops(draw):
    """A random op: a rule over 1-4 factors and valid (possibly absent) shardings for it."""
    n = draw(st.integers(1, 4))
    sizes = tuple(draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12])) for _ in range(n))

    def tensor_mapping():
        factors = draw(st.permutations(range(n)))[: draw(st.integers(1, n))]
        dims, i = [], 0
        while i < len(factors):
            k = draw(st.integers(1, min(2, len(factors) - i)))
            dims.append(tuple(factors[i : i + k]))
            i += k
        return tuple(dims)

    operands = tuple(tensor_mapping() for _ in range(draw(st.integers(1, 3))))
    results = tuple(tensor_mapping() for _ in range(draw(st.integers(1, 2))))
    kinds = tuple(draw(st.sampled_from(list(FactorKind))) for _ in range(n))
    rule = OpShardingRule(sizes, operands, results, kinds)

    def mapping(tm):
        if draw(st.integers(0, 4)) == 0:
            return None
        pool = list(PMESH.axis_names)
        dims = []
        for _ in tm:
            axes = []
            for _ in range(draw(st.integers(0, 2))):
                if not pool:
                    break
                name = pool.pop(draw(st.integers(0, len(pool) - 1)))
                if name == "b" and draw(st.booleans()):
                    axes.append(AxisRef("b", draw(st.sampled_from([1, 2])), 2))
                else:
                    axes.append(AxisRef(name))
            dims.append(DimSharding(tuple(axes), draw(st.booleans())))
        replicated = [AxisRef(pool.pop())] if pool and draw(st.booleans()) else []
        unreduced = [AxisRef(pool.pop())] if pool and draw(st.booleans()) else []
        return NamedMapping(PMESH, tuple(dims), tuple(replicated), tuple(unreduced))

    return (
        rule,
        [mapping(tm) for tm in operands],
        [mapping(tm) for tm in results],
        draw(st.sampled_from([BASIC, AGGRESSIVE])),
        draw(st.sampled_from([BOTH, FORWARD, BACKWARD])),
        draw(st.booleans()),
    )


def _propagate(case):
    rule, operands, results, strategy, direction, elementwise = case
    return propagate_shardings(
        operands,
        results,
        rule,
        PMESH,
        strategy=strategy,
        direction=direction,
        elementwise=elementwise,
    )


@given(ops())
@settings(max_examples=300, deadline=None)
def test_property_only_appends_to_open_dims(case):
    _, operands, results, *_ = case
    new_operands, new_results = _propagate(case)
    for old, new in zip(operands + results, new_operands + new_results, strict=True):
        if old is None:
            assert new is None or all(d.is_open for d in new.dims)
            continue
        assert new is not None
        assert new.replicated == old.replicated and new.unreduced == old.unreduced
        for d_old, d_new in zip(old.dims, new.dims, strict=True):
            if d_old.is_closed:
                assert d_new is d_old  # closed dims never change
            else:
                # never removes or reorders: the old axes are a prefix of the new ones
                assert prefix_status(d_old.axes, d_new.axes) is not PrefixStatus.NOT_A_PREFIX
                assert d_new.is_open and d_new.priority == d_old.priority
        # NamedMapping validates on construction: no axis is used twice in the result.
        NamedMapping(new.mesh, new.dims, new.replicated, new.unreduced)


@given(ops())
@settings(max_examples=300, deadline=None)
def test_property_second_application_changes_nothing(case):
    rule, _, _, strategy, direction, elementwise = case
    once = _propagate(case)
    twice = propagate_shardings(
        *once, rule, PMESH, strategy=strategy, direction=direction, elementwise=elementwise
    )
    assert texts(twice[0]) == texts(once[0]) and texts(twice[1]) == texts(once[1])
