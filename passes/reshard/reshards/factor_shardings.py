"""Factor shardings as Shardy's explicit-reshards code edits them: back to a tensor sharding
(`tensor_sharding`, Shardy's `createTensorShardingAttr`), one factor set on every tensor
(`update_factor`), and a reshape whose shardings overflow its factors (`reshape_with_overflow`:
the axes of its more sharded side are dealt out again over each side's factors, then both keep
what they have in common).

    reshape 6 -> 2x3 on ["x"=6], operand [{"x"}]: the operand's factors (2, 3) take "x":(1)2 and
    "x":(2)3, so both sides shard as [{"x"}] / [{"x":(1)2}, {"x":(2)3}]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.ir.axis_refs import prefix_of
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.sub_axes import add_or_merge
from shardc.passes.propagation.projection import ShardingProjection, TensorFactorShardings
from shardc.passes.propagation.rules.rule import OpShardingRule, TensorMapping
from shardc.passes.reshard.reshards.common_axes import AxesPerFactor, shardy_projection
from shardc.passes.reshard.reshards.insertion import equivalent


def tensor_sharding(
    t: TensorFactorShardings,
    mapping: TensorMapping,
    rule: OpShardingRule,
    mesh: DeviceMesh,
    original: NamedMapping | None,
) -> NamedMapping:
    """The sharding a tensor's factor shardings spell: per dim the factors' axes major to minor,
    stopping after a factor with overflow axes (kept) or one not fully sharded; a dim is closed
    when one of its factors is. Replicated and unreduced axes are the tensor's."""
    dims = []
    for dim in mapping:
        axes: list[AxisRef] = []
        closed = False
        for f in dim:
            fs = t.factors[f]
            closed |= fs.is_closed
            for k, a in enumerate(fs.axes):
                if k == 0:
                    add_or_merge(axes, a, mesh)
                else:
                    axes.append(a)
            sharded = math.prod(a.axis_size(mesh) for a in fs.axes)
            if fs.overflow:
                for k, a in enumerate(fs.overflow):
                    if k == 0:
                        add_or_merge(axes, a, mesh)
                    else:
                        axes.append(a)
                break
            if sharded < rule.factor_sizes[f]:
                break
        dims.append(DimSharding(tuple(axes), closed))
    op = original.unreduced_op if original is not None else None
    kwargs = {"unreduced_op": op} if op is not None else {}
    return NamedMapping(mesh, tuple(dims), t.replicated, t.unreduced, **kwargs)


def update_factor(
    projection: ShardingProjection, f: int, axes: Sequence[AxisRef],
    overflow: Sequence[AxisRef] = (),
) -> tuple[list[bool], list[bool]]:
    """Set factor `f` to `axes` (and `overflow`) on every tensor that has it; which operands and
    results changed."""

    def update(t: TensorFactorShardings) -> bool:
        fs = t.factors.get(f)
        if fs is None or (fs.axes == tuple(axes) and fs.overflow == tuple(overflow)):
            return False
        fs.axes, fs.overflow = tuple(axes), tuple(overflow)
        return True

    return [update(t) for t in projection.operands], [update(t) for t in projection.results]


def distribute_axes(
    sizes: Sequence[int], axes: Sequence[AxisRef], mesh: DeviceMesh
) -> tuple[list[list[AxisRef]], list[AxisRef]]:
    """Shardy's `distributeAxesAcrossFactors` over factors of `sizes`: each axis (or its part
    that shares a divisor with the factor) goes to the first factor with room; an axis no factor
    takes overflows, with every later one, into the last factor. Returns (axes per factor, the
    last factor's overflow axes)."""
    out: list[list[AxisRef]] = [[] for _ in sizes]
    overflow: list[AxisRef] = []
    if not sizes:
        return out, overflow
    remaining = list(sizes)
    index = 0
    current = (axes[0].pre, axes[0].axis_size(mesh)) if axes else None
    while current is not None:
        pre, size = current
        name = axes[index].name
        used = False
        for i in range(len(out)):
            if remaining[i] <= 1:
                continue
            g = math.gcd(remaining[i], size)
            if g == 1 and size != 1:
                continue
            used = True
            if size > g:
                add_or_merge(out[i], AxisRef(name, pre, g), mesh)
                pre, size = pre * g, size // g
                remaining[i] //= g
                current = (pre, size)
            else:
                add_or_merge(out[i], _ref(name, pre, size, axes[index], mesh), mesh)
                remaining[i] //= size
                index += 1
                current = (axes[index].pre, axes[index].axis_size(mesh)) if index < len(
                    axes) else None
                break
        if not used:
            while current is not None:
                add_or_merge(overflow, _ref(axes[index].name, current[0], current[1],
                                            axes[index], mesh), mesh)
                index += 1
                current = (axes[index].pre, axes[index].axis_size(mesh)) if index < len(
                    axes) else None
    return out, overflow


def _ref(name: str, pre: int, size: int, original: AxisRef, mesh: DeviceMesh) -> AxisRef:
    if pre == original.pre and size == original.axis_size(mesh):
        return original
    if pre == 1 and size == mesh.axis_size(name):
        return AxisRef(name)
    return AxisRef(name, pre, size)


def _redistribute(t: TensorFactorShardings, mapping: TensorMapping, rule: OpShardingRule,
                  mesh: DeviceMesh, axes: Sequence[AxisRef]) -> None:
    flat = [f for dim in mapping for f in dim if f in t.factors]
    per_factor, overflow = distribute_axes([rule.factor_sizes[f] for f in flat], axes, mesh)
    for k, f in enumerate(flat):
        t.factors[f].axes = tuple(per_factor[k])
        t.factors[f].overflow = tuple(overflow) if k == len(flat) - 1 else ()


def greatest_common_prefix_axes(projection: ShardingProjection, n: int) -> AxesPerFactor:
    """Per factor, the longest prefix every tensor's sharding of it shares."""
    out: AxesPerFactor = [() for _ in range(n)]
    seen = [False] * n
    for t in projection.tensors:
        for f, fs in t.factors.items():
            if not seen[f]:
                out[f], seen[f] = fs.axes, True
                continue
            common: list[AxisRef] = []
            for a, b in zip(out[f], fs.axes, strict=False):
                if a == b:
                    common.append(a)
                    continue
                if prefix_of(a, b):
                    common.append(a)
                elif prefix_of(b, a):
                    common.append(b)
                break
            out[f] = tuple(common)
    return out


def reshape_with_overflow(
    projection: ShardingProjection, ins: list[NamedMapping | None],
    outs: list[NamedMapping | None], rule: OpShardingRule, mesh: DeviceMesh,
) -> tuple[AxesPerFactor, list[bool], list[bool]]:
    """Shardy's `processReshapeWithOverflowAxes` (see the module docstring): the common axes per
    factor, and whether the operand and the result need a reshard."""
    operand, result = projection.operands[0], projection.results[0]

    def sharded(t: TensorFactorShardings) -> int:
        return math.prod(a.axis_size(mesh) for fs in t.factors.values()
                         for a in (*fs.axes, *fs.overflow))

    best = operand if sharded(operand) >= sharded(result) else result
    axes = [a for f in range(rule.num_factors) if f in best.factors
            for a in (*best.factors[f].axes, *best.factors[f].overflow)]
    _redistribute(operand, rule.operands[0], rule, mesh, axes)
    _redistribute(result, rule.results[0], rule, mesh, axes)
    built_in = tensor_sharding(operand, rule.operands[0], rule, mesh, ins[0])
    built_out = tensor_sharding(result, rule.results[0], rule, mesh, outs[0])
    legal = shardy_projection([built_in], [built_out], rule, mesh)
    common = greatest_common_prefix_axes(legal, rule.num_factors)
    for f in range(rule.num_factors):
        update_factor(projection, f, common[f])
    update_in = [not equivalent(ins[0], tensor_sharding(operand, rule.operands[0], rule, mesh,
                                                        ins[0]))]
    update_out = [not equivalent(tensor_sharding(result, rule.results[0], rule, mesh, outs[0]),
                                 outs[0])]
    return common, update_in, update_out
