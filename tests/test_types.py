"""Shard shapes, uneven shards, and their inverse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.types import (
    DistributedTensorType,
    TensorType,
    global_shape_from_local,
    local_shard_shape_from_global,
    shard_bounds,
    shard_shape,
)

MESH = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})


def test_even_shards() -> None:
    m = NamedMapping.from_spec(("dp", "tp"), MESH)
    assert shard_shape((16, 64), m) == (8, 16)
    locals_ = local_shard_shape_from_global((16, 64), m)
    assert set(locals_.values()) == {(8, 16)}
    assert global_shape_from_local(locals_, m) == (16, 64)


def test_uneven_shards_pad_at_the_end() -> None:
    m = NamedMapping.from_spec(("tp",), MESH)
    assert shard_shape((10,), m) == (3,)
    locals_ = local_shard_shape_from_global((10,), m)
    # device position p has tp coordinate p % 4
    assert [locals_[p][0] for p in range(4)] == [3, 3, 3, 1]
    tiny = local_shard_shape_from_global((5,), m)
    assert [tiny[p][0] for p in range(4)] == [2, 2, 1, 0]


def test_multi_axis_dim_order_is_major_to_minor() -> None:
    m = NamedMapping.from_spec(((("tp", "dp")),), MESH)
    # position p = dp*4 + tp; shard index = tp*2 + dp
    assert [m.shard_index(0, p) for p in range(8)] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert shard_bounds((16,), m, 1) == ((4, 6),)


def test_device_ids_map_positions_to_devices() -> None:
    mesh = DeviceMesh.create("r", {"x": 4}, device_ids=[3, 2, 1, 0])
    m = NamedMapping.from_spec(("x",), mesh)
    locals_ = local_shard_shape_from_global((10,), m)
    assert locals_[3] == (3,) and locals_[0] == (1,)


def test_type_text() -> None:
    m = NamedMapping.from_spec(("dp", None), MESH)
    assert (
        DistributedTensorType((8, 4), "f32", m).text() == 'tensor<8x4xf32, <@mesh, [{"dp"}, {}]>>'
    )
    assert TensorType((), "bf16").text() == "tensor<bf16>"
    assert DistributedTensorType((8,), "f32").nbytes == 32


@st.composite
def mesh_and_mapping(draw):
    n_axes = draw(st.integers(1, 3))
    sizes = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(n_axes)]
    mesh = DeviceMesh.create("m", {f"a{i}": s for i, s in enumerate(sizes)})
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 13)) for _ in range(rank))
    axes = draw(st.permutations([f"a{i}" for i in range(n_axes)]))
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    for name in axes:
        target = draw(st.integers(-1, rank - 1))
        if target >= 0:
            size = mesh.axis_size(name)
            if size == 4 and draw(st.booleans()):
                dims[target].append(AxisRef(name, draw(st.sampled_from([1, 2])), 2))
            else:
                dims[target].append(AxisRef(name))
    return shape, NamedMapping(mesh, tuple(DimSharding(tuple(d)) for d in dims))


@settings(max_examples=300, deadline=None)
@given(mesh_and_mapping())
def test_global_shape_from_local_inverts_local_shapes(case) -> None:
    shape, mapping = case
    locals_ = local_shard_shape_from_global(shape, mapping)
    assert global_shape_from_local(locals_, mapping) == shape
    padded = shard_shape(shape, mapping)
    for local in locals_.values():
        assert all(0 <= l <= p for l, p in zip(local, padded))


@settings(max_examples=200, deadline=None)
@given(mesh_and_mapping())
def test_shards_tile_the_global_tensor(case) -> None:
    shape, mapping = case
    mesh = mapping.mesh
    per_dim_bounds = [set() for _ in shape]
    for p in range(mesh.num_devices):
        for d, bounds in enumerate(shard_bounds(shape, mapping, p)):
            per_dim_bounds[d].add(bounds)
    for d, n in enumerate(shape):
        covered = sorted(per_dim_bounds[d])
        assert sum(b - a for a, b in covered) == n
        for (_a0, b0), (a1, _b1) in zip(covered, covered[1:]):
            assert b0 <= a1
