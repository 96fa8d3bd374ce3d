"""Projection of tensor shardings onto an op's factors, and back (Shardy's `ShardingProjection`).

Projection walks each dim's axes major to minor over the dim's factors: a non-minor factor takes
`gcd(remaining factor size, axis size)` of each axis (splitting the axis into sub-axes
`"x":(pre)size` when it is larger) until it is full; the minor-most factor takes the rest. If a
non-minor factor is not full and the next axis shares no divisor with it, the remaining axes are
the factor's *overflow* axes and every later factor of that dim is closed and empty.

API:

- `FactorSharding(axes, is_closed, is_minor_most, overflow)` — one factor of one tensor (mutable;
  propagation replaces `axes`).
- `TensorFactorShardings(factors, replicated, unreduced)` — `factors[f]` for every factor the tensor
  has; `replicated`/`unreduced` are the axes propagation must not add to this tensor.
- `ShardingProjection.build(operand_mappings, result_mappings, rule, mesh)` — mappings may be
  `None` (a value with no sharding: fully open, or closed with `closed_if_missing`).
- `projection.to_mappings(operand_mappings, result_mappings, rule, mesh)` — the inverse: updated
  `NamedMapping`s (the same object where nothing changed). Axes are only appended to open dims and
  adjacent sub-axes of one axis are merged back (`"x":(1)2, "x":(2)2` -> `"x"`).
- `project_tensor` / `dims_from_factors` / `update_mapping` do the same for one tensor.
- The axis-ref algebra it uses (`prefix_status`, `prefix_of`, `contains`, `overlaps`,
  `add_or_merge`, ...) is Shardy's `AxisRefAttr` methods: `shardc.ir.axis_refs`.

Example (reshape 8 -> 2x4, rule `([ij])->([i, j]) {i=2, j=4}`, mesh `["a"=4, "b"=2]`)::

    [{"a", "b"}]  projects to  i: ["a":(1)2]   j: ["a":(2)2, "b"]   (both closed)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from shardc.ir.axis_refs import PrefixStatus, add_or_merge, axis_size, prefix_status
from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.propagation.rules.rule import OpShardingRule, TensorMapping

# ----- projection data ----------------------------------------------------------------------


@dataclass(slots=True)
class FactorSharding:
    """The axes sharding one factor of one tensor.

    `is_closed`: propagation may not add axes. `is_minor_most`: the factor is the last of its dim,
    so it may take axes that do not divide it (padding). `overflow`: axes of the dim that could not
    be assigned to this non-minor factor (they block propagation along it).
    """

    axes: tuple[AxisRef, ...] = ()
    is_closed: bool = False
    is_minor_most: bool = False
    overflow: tuple[AxisRef, ...] = ()


@dataclass(slots=True)
class TensorFactorShardings:
    """One tensor projected onto factors: `factors[f]` for every factor the tensor has."""

    factors: dict[int, FactorSharding] = field(default_factory=dict)
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()

    def axes_of(self, factor: int) -> tuple[AxisRef, ...]:
        fs = self.factors.get(factor)
        return fs.axes if fs is not None else ()

    def blocked_axes(self) -> tuple[AxisRef, ...]:
        """Axes that may not be added to this tensor: its replicated and unreduced axes."""
        return self.replicated + self.unreduced

    def used_axes(self) -> list[AxisRef]:
        """Every axis this tensor's factors use (including overflow axes)."""
        return [a for fs in self.factors.values() for a in (*fs.axes, *fs.overflow)]


@dataclass(slots=True)
class ShardingProjection:
    """An op's operands and results projected onto its rule's factors. Scratch state per visit."""

    operands: list[TensorFactorShardings]
    results: list[TensorFactorShardings]

    @property
    def tensors(self) -> list[TensorFactorShardings]:
        """Operands then results (the tensor order of tensor indices and tensor sizes)."""
        return self.operands + self.results

    @classmethod
    def build(
        cls,
        operand_mappings: Sequence[NamedMapping | None],
        result_mappings: Sequence[NamedMapping | None],
        rule: OpShardingRule,
        mesh: DeviceMesh | None = None,
        *,
        closed_if_missing: bool = False,
    ) -> ShardingProjection:
        """Project every operand and result mapping (None: no sharding yet) onto `rule`."""
        if len(operand_mappings) != rule.num_operands or len(result_mappings) != rule.num_results:
            raise ShardingError(
                f"sharding rule has {rule.num_operands} operands and {rule.num_results} results, "
                f"got {len(operand_mappings)} and {len(result_mappings)} shardings"
            )
        mesh = mesh if mesh is not None else common_mesh((*operand_mappings, *result_mappings))
        sizes = rule.factor_sizes
        return cls(
            [
                project_tensor(m, tm, sizes, mesh, closed_if_missing)
                for m, tm in zip(operand_mappings, rule.operands, strict=True)
            ],
            [
                project_tensor(m, tm, sizes, mesh, closed_if_missing)
                for m, tm in zip(result_mappings, rule.results, strict=True)
            ],
        )

    @classmethod
    def from_factor_axes(
        cls, axes_per_factor: Sequence[Sequence[AxisRef]], rule: OpShardingRule
    ) -> ShardingProjection:
        """Every tensor sharded along each of its factors by `axes_per_factor[f]`, all closed."""

        def tensor(mapping: TensorMapping) -> TensorFactorShardings:
            return TensorFactorShardings(
                {
                    f: FactorSharding(tuple(axes_per_factor[f]), True, i == len(dim) - 1)
                    for dim in mapping
                    for i, f in enumerate(dim)
                }
            )

        return cls([tensor(m) for m in rule.operands], [tensor(m) for m in rule.results])

    def to_mappings(
        self,
        operand_mappings: Sequence[NamedMapping | None],
        result_mappings: Sequence[NamedMapping | None],
        rule: OpShardingRule,
        mesh: DeviceMesh | None = None,
        *,
        changed_operands: Sequence[bool] | None = None,
        changed_results: Sequence[bool] | None = None,
    ) -> tuple[list[NamedMapping | None], list[NamedMapping | None]]:
        """The updated mappings; an entry is the very object passed in when it did not change.

        `changed_*` (e.g. from `TensorUpdates`) skip rebuilding tensors known to be unchanged.
        """
        mesh = mesh if mesh is not None else common_mesh((*operand_mappings, *result_mappings))
        sizes = rule.factor_sizes
        operands = list(operand_mappings)
        for i, (t, tm) in enumerate(zip(self.operands, rule.operands, strict=True)):
            if changed_operands is None or changed_operands[i]:
                operands[i] = update_mapping(operands[i], t, tm, sizes, mesh)
        results = list(result_mappings)
        for i, (t, tm) in enumerate(zip(self.results, rule.results, strict=True)):
            if changed_results is None or changed_results[i]:
                results[i] = update_mapping(results[i], t, tm, sizes, mesh)
        return operands, results


def common_mesh(mappings: Sequence[NamedMapping | None]) -> DeviceMesh | None:
    """The mesh the given mappings share, as Shardy's `getCommonMeshOrRef` finds it: an empty
    mesh (`<[]>`, no axes and no device ids) goes with any other; meshes equal up to their names
    (same axes, same device order) are one mesh, the first one named; any other difference (a
    different shape, device order, or a maximal mesh next to another) means there is none.
    None also when no mapping has a mesh."""
    mesh: DeviceMesh | None = None
    for m in mappings:
        if m is None:
            continue
        if mesh is None or mesh.is_empty:
            mesh = m.mesh
        elif m.mesh.is_empty or m.mesh is mesh:
            continue
        elif not m.mesh.same_devices(mesh):
            return None
    return mesh


# ----- tensor -> factors --------------------------------------------------------------------


def project_tensor(
    mapping: NamedMapping | None,
    tensor_mapping: TensorMapping,
    factor_sizes: Sequence[int],
    mesh: DeviceMesh | None,
    closed_if_missing: bool = False,
) -> TensorFactorShardings:
    """Project one tensor's sharding onto its factors (see the module docstring)."""
    result = TensorFactorShardings()
    if mapping is None:
        for dim in tensor_mapping:
            last = len(dim) - 1
            for i, f in enumerate(dim):
                result.factors[f] = FactorSharding((), closed_if_missing, i == last)
        return result
    if mapping.rank != len(tensor_mapping):
        raise ShardingError(
            f"sharding {mapping} has rank {mapping.rank} but the op's sharding rule expects "
            f"rank {len(tensor_mapping)}"
        )
    mesh = mapping.mesh
    for dim_sharding, dim in zip(mapping.dims, tensor_mapping, strict=True):
        _project_dim(result.factors, dim_sharding, dim, factor_sizes, mesh)
    result.replicated = mapping.replicated
    result.unreduced = mapping.unreduced
    return result


def _project_dim(
    out: dict[int, FactorSharding],
    dim_sharding: DimSharding,
    dim: tuple[int, ...],
    factor_sizes: Sequence[int],
    mesh: DeviceMesh,
) -> None:
    axes = dim_sharding.axes
    closed = dim_sharding.is_closed
    last = len(dim) - 1
    if len(dim) == 1:  # fast path: one factor takes the whole dim
        out[dim[0]] = FactorSharding(axes, closed, True)
        return
    # The axis being consumed: its index, name, current pre-size and remaining size.
    index = 0
    pre, size = _axis_state(axes, 0, mesh)
    overflowed = False
    for i, f in enumerate(dim):
        if overflowed:
            # A previous factor overflowed: every later factor of the dim is closed and empty.
            out[f] = FactorSharding((), True, i == last)
            continue
        fs = FactorSharding((), closed, i == last)
        out[f] = fs
        taken: list[AxisRef] = []
        if i == last:
            while index < len(axes):
                add_or_merge(taken, _make_ref(axes[index], pre, size, mesh), mesh)
                index += 1
                pre, size = _axis_state(axes, index, mesh)
            fs.axes = tuple(taken)
            break
        remaining = factor_sizes[f]
        while index < len(axes):
            g = math.gcd(remaining, size)
            if size != 1 and g == 1:
                break
            if size > g:  # split: the factor takes the major `g` part of the axis
                taken.append(AxisRef(axes[index].name, pre, g))
                pre *= g
                size //= g
                remaining //= g
            else:
                taken.append(_make_ref(axes[index], pre, size, mesh))
                remaining //= size
                index += 1
                pre, size = _axis_state(axes, index, mesh)
        fs.axes = tuple(taken)
        if remaining > 1 and index < len(axes):
            # The factor and the next axis are relatively prime: the rest overflows.
            overflowed = True
            rest: list[AxisRef] = []
            while index < len(axes):
                add_or_merge(rest, _make_ref(axes[index], pre, size, mesh), mesh)
                index += 1
                pre, size = _axis_state(axes, index, mesh)
            fs.overflow = tuple(rest)


def _axis_state(axes: Sequence[AxisRef], index: int, mesh: DeviceMesh) -> tuple[int, int]:
    if index >= len(axes):
        return 1, 1
    ref = axes[index]
    return ref.pre, axis_size(ref, mesh)


def _make_ref(original: AxisRef, pre: int, size: int, mesh: DeviceMesh) -> AxisRef:
    """The ref for what is left of `original`: itself if untouched, else a sub-axis."""
    if pre == original.pre and (original.size is None or original.size == size):
        return original
    if pre == 1 and size == mesh.axis_size(original.name):
        return AxisRef(original.name)
    return AxisRef(original.name, pre, size)


# ----- factors -> tensor --------------------------------------------------------------------


def dims_from_factors(
    tensor: TensorFactorShardings,
    tensor_mapping: TensorMapping,
    factor_sizes: Sequence[int],
    mesh: DeviceMesh | None,
) -> list[list[AxisRef]]:
    """Per dim, the axes the factor shardings give (Shardy's `createTensorShardingAttr`).

    Factors are concatenated major to minor, merging sub-axes at factor boundaries. A factor with
    overflow axes contributes them and ends the dim; a non-minor factor that is not fully sharded
    also ends it (later factors would need a strided view, so their axes are dropped).
    """
    dims: list[list[AxisRef]] = []
    for dim in tensor_mapping:
        axes: list[AxisRef] = []
        for f in dim:
            fs = tensor.factors[f]
            sharded = 1
            for ref in fs.axes:
                sharded *= axis_size(ref, mesh)
                add_or_merge(axes, ref, mesh)
            if fs.overflow:
                for ref in fs.overflow:
                    add_or_merge(axes, ref, mesh)
                break
            if sharded < factor_sizes[f]:
                break
        dims.append(axes)
    return dims


def update_mapping(
    old: NamedMapping | None,
    tensor: TensorFactorShardings,
    tensor_mapping: TensorMapping,
    factor_sizes: Sequence[int],
    mesh: DeviceMesh | None,
) -> NamedMapping | None:
    """`old` with the axes the projection added appended to its open dims.

    Returns `old` itself when nothing changed (also when only dropped strided-view axes changed).
    Closed dims and priorities are kept as they are; a dim that gains axes stays open.
    """
    new_dims = dims_from_factors(tensor, tensor_mapping, factor_sizes, mesh)
    if old is None:
        if not any(new_dims):
            return None
        if mesh is None:
            raise ShardingError("cannot create a sharding for an unsharded value without a mesh")
        return NamedMapping(mesh, tuple(DimSharding(tuple(a), False) for a in new_dims))
    dims: list[DimSharding] | None = None
    for d, (dim, axes) in enumerate(zip(old.dims, new_dims, strict=True)):
        if dim.is_closed or tuple(axes) == dim.axes:
            continue
        # Propagation only appends: the old axes must be a prefix of the new ones.
        assert prefix_status(dim.axes, axes) is not PrefixStatus.NOT_A_PREFIX, (dim, axes)
        if prefix_status(dim.axes, axes) is PrefixStatus.EQUAL:
            continue
        if dims is None:
            dims = list(old.dims)
        dims[d] = DimSharding(tuple(axes), False, dim.priority)
    if dims is None:
        return old
    # An updated sharding names the op's common mesh (an empty-mesh sharding takes it on).
    target = mesh if mesh is not None else old.mesh
    return NamedMapping(
        target, tuple(dims), old.replicated, old.unreduced, old.unreduced_op, old.memory_kind
    )
