"""NamedMapping / PlacementMapping: construction, validation and conversions."""

from __future__ import annotations

import pytest

from shardc.ir.diagnostics import ConversionError, ShardingError
from shardc.ir.mapping import UNCONSTRAINED, DimSharding, NamedMapping, PlacementMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.placements import Partial, ReduceOp, Replicated, Sharded

MESH = DeviceMesh.create("mesh", {"dp": 2, "tp": 4, "pp": 2})


def test_from_spec_and_text() -> None:
    m = NamedMapping.from_spec(("dp", None, ("tp", "pp"), UNCONSTRAINED), MESH)
    assert m.text() == '<@mesh, [{"dp"}, {}, {"tp", "pp"}, {?}]>'
    assert m.spec == ("dp", None, ("tp", "pp"), UNCONSTRAINED)
    assert m.shard_counts() == (2, 1, 8, 1)
    assert not m.is_fully_replicated
    assert not m.is_fully_resolved


def test_priorities_unreduced_and_memory_kind() -> None:
    m = NamedMapping.from_spec(
        ("dp", "tp"), MESH, priorities=(0, 1), unreduced=("pp",), memory_kind="device"
    )
    assert m.text() == '<@mesh, [{"dp"}p0, {"tp"}p1], unreduced={"pp"}, memory_kind="device">'
    assert m.priorities == (0, 1)


def test_fully_replicated_and_resolved() -> None:
    assert NamedMapping.fully_replicated(MESH, 2).is_fully_replicated
    assert NamedMapping.fully_replicated(MESH, 2).is_fully_resolved
    assert not NamedMapping.fully_open(MESH, 2).is_fully_resolved
    partial = NamedMapping.from_spec((None,), MESH, unreduced=("dp",))
    assert not partial.is_fully_replicated


def test_replicated_and_unreduced_sets_are_sorted_in_mesh_order() -> None:
    m = NamedMapping(MESH, (DimSharding(),), replicated=(AxisRef("pp"), AxisRef("dp")))
    assert [r.name for r in m.replicated] == ["dp", "pp"]


def test_adjacent_sub_axes_in_replicated_and_unreduced_sets_are_merged() -> None:
    # Shardy's canonical form: `"x":(1)2, "x":(2)2` is `"x"`; a set never spells it in pieces.
    mesh = DeviceMesh.create("mesh", {"a": 8, "b": 4})
    m = NamedMapping(
        mesh,
        (DimSharding((AxisRef("b", 2, 2),)),),
        replicated=(AxisRef("a", 4, 2), AxisRef("b", 1, 2), AxisRef("a", 1, 2)),
        unreduced=(AxisRef("a", 2, 2),),
    )
    assert m.replicated == (AxisRef("a", 1, 2), AxisRef("a", 4, 2), AxisRef("b", 1, 2))
    pieces = (AxisRef("a", 2, 4), AxisRef("b", 1, 2), AxisRef("b", 2, 2), AxisRef("a", 1, 2))
    whole = NamedMapping(mesh, (DimSharding(),), unreduced=pieces)
    assert whole.unreduced == (AxisRef("a"), AxisRef("b"))
    assert whole == NamedMapping(mesh, (DimSharding(),), unreduced=(AxisRef("a"), AxisRef("b")))
    assert whole.text() == '<@mesh, [{}], unreduced={"a", "b"}>'
    halves = (AxisRef("a", 2, 2), AxisRef("a", 1, 2))
    partial = NamedMapping(mesh, (DimSharding(),), replicated=halves)
    assert partial.replicated == (AxisRef("a", 1, 4),)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: NamedMapping.from_spec(("dp", "dp"), MESH), "used twice"),
        (lambda: NamedMapping.from_spec((("tp", "tp"),), MESH), "used twice"),
        (lambda: NamedMapping.from_spec(("xx",), MESH), "unknown axis 'xx'"),
        (lambda: NamedMapping(MESH, (DimSharding((AxisRef("tp", 1, 3),)),)), "does not divide"),
        (lambda: NamedMapping(MESH, (DimSharding((AxisRef("tp", 3, 2),)),)), "does not divide"),
        (lambda: NamedMapping(MESH, (DimSharding((AxisRef("tp", 1, 4),)),)), "whole axis"),
        (lambda: DimSharding((), True, 2), "priority"),
        (lambda: DimSharding((AxisRef("dp"),), True, -1), ">= 0"),
        (
            lambda: NamedMapping(
                MESH, (DimSharding((AxisRef("tp", 1, 2),)), DimSharding((AxisRef("tp", 2, 2),)))
            ),
            None,
        ),
        (
            lambda: NamedMapping(MESH, (DimSharding((AxisRef("tp", 1, 2), AxisRef("tp", 2, 2))),)),
            "merge",
        ),
        (
            lambda: NamedMapping(
                MESH, (DimSharding((AxisRef("tp"),)), DimSharding((AxisRef("tp", 2, 2),)))
            ),
            "used twice",
        ),
        (lambda: NamedMapping.from_spec(("dp",), MESH, unreduced=("dp",)), "used twice"),
    ],
)
def test_validation(build, message) -> None:
    if message is None:
        build()  # disjoint sub-axes of one axis on two dims are fine
        return
    with pytest.raises(ShardingError, match=message):
        build()


def test_sub_axis_coordinates() -> None:
    mesh = DeviceMesh.create("m", {"x": 8})
    major = AxisRef("x", 1, 2)
    minor = AxisRef("x", 2, 4)
    # x = [pre=1 size 2][size 4]: device 5 = (1, 1)
    assert major.coordinate(mesh, 5) == 1
    assert minor.coordinate(mesh, 5) == 1
    assert [minor.coordinate(mesh, c) for c in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert major.overlaps(AxisRef("x"), mesh)
    assert not major.overlaps(minor, mesh)


def test_to_placements() -> None:
    m = NamedMapping.from_spec(
        (("dp", "tp"), None), MESH, unreduced=("pp",), unreduced_op=ReduceOp.MAX
    )
    assert m.to_placements() == (Sharded(0), Sharded(0), Partial(ReduceOp.MAX))
    back = PlacementMapping(MESH, m.to_placements()).to_named(2)
    assert back == m


def test_placements_to_named_round_trip() -> None:
    p = PlacementMapping(MESH, (Replicated(), Sharded(1), Partial()))
    named = p.to_named(2)
    assert named.text() == '<@mesh, [{}, {"tp"}], unreduced={"pp"}>'
    assert PlacementMapping.from_named(named) == p


@pytest.mark.parametrize(
    "mapping, message",
    [
        (NamedMapping.from_spec(("dp",), MESH, priorities=(1,)), "priorit"),
        (NamedMapping.from_spec((UNCONSTRAINED,), MESH), "open"),
        (NamedMapping(MESH, (DimSharding((AxisRef("tp", 1, 2),)),)), "sub-axis"),
        (NamedMapping.from_spec((("tp", "dp"),), MESH), "not in mesh order"),
    ],
)
def test_lossy_conversions_raise(mapping, message) -> None:
    with pytest.raises(ConversionError, match=message):
        mapping.to_placements()


def test_placement_errors() -> None:
    with pytest.raises(ShardingError, match="one placement per mesh axis"):
        PlacementMapping(MESH, (Replicated(),))
    with pytest.raises(ConversionError, match="out of range"):
        PlacementMapping(MESH, (Sharded(3), Replicated(), Replicated())).to_named(2)
    with pytest.raises(ConversionError, match="different reduce ops"):
        PlacementMapping(
            MESH, (Partial(ReduceOp.SUM), Partial(ReduceOp.MAX), Replicated())
        ).to_named(1)


def test_mesh_device_ids_and_coords() -> None:
    mesh = DeviceMesh.create("m", {"a": 2, "b": 3}, device_ids=[5, 4, 3, 2, 1, 0])
    assert mesh.device_id(0) == 5
    assert mesh.coords(4) == {"a": 1, "b": 1}
    assert mesh.position({"a": 1, "b": 1}) == 4
    assert DeviceMesh.create("m", {"a": 2}, device_ids=[0, 1]).device_ids is None
    with pytest.raises(ShardingError):
        DeviceMesh.create("m", {"a": 2}, device_ids=[0, 2])


def test_types_keep_one_object_per_distinct_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """A type's mapping is the interned one: equal mappings built apart become one object (so
    the passes compare them by identity), unequal ones stay apart, and a full table is emptied
    (interning is only a speed-up)."""
    import shardc.ir.mapping as mapping_module
    from shardc.ir.core import Value
    from shardc.ir.types import DistributedTensorType, TensorType, with_sharding

    mesh = DeviceMesh.create("m", {"x": 2, "y": 4})
    a = NamedMapping(mesh, (DimSharding((AxisRef("x"),)), DimSharding(())))
    b = NamedMapping(mesh, (DimSharding((AxisRef("x"),)), DimSharding(())))
    c = NamedMapping(mesh, (DimSharding(()), DimSharding((AxisRef("y"),))))
    assert a == b and a is not b
    ta = DistributedTensorType((4, 8), "f32", a)
    tb = with_sharding(TensorType((4, 8), "f32"), b)
    assert ta.mapping is tb.mapping
    assert DistributedTensorType((4, 8), "f32", c).mapping is not ta.mapping
    v = Value(TensorType((4, 8), "f32"), None, 0)
    v.set_mapping(b)
    assert v.mapping is ta.mapping
    monkeypatch.setattr(mapping_module._INTERNED, "limit", 1)
    mapping_module._INTERNED.clear()
    assert DistributedTensorType((4, 8), "f32", c).mapping is c
    assert len(mapping_module._INTERNED) == 1
    assert DistributedTensorType((4, 8), "f32", b).mapping is b  # the table was emptied
    assert len(mapping_module._INTERNED) == 1
