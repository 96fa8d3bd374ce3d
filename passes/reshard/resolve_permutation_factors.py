"""`resolve-permutation-factors` (Shardy's `sdy-resolve-permutation-factors`): no op computes
with a sharded permutation factor (a dim that pad, slice, reverse or a window moves data
along) afterwards.

    %0 = stablehlo.pad %arg0, %c, low = [1, 0], ... {sdy.sharding = <@m, [{"a"}, {"b"}]>}
 -> %r = sdy.reshard %arg0 <@m, [{}, {"b"}]>
    %0 = stablehlo.pad %r, %c, low = [1, 0], ... {sdy.sharding = <@m, [{}, {"b"}]>}
    %1 = sdy.reshard %0 <@m, [{"a"}, {"b"}]>          (the pad's users read %1)

Each permutation factor of an op is made replicated on every tensor of the op (a slice dim
that starts at 0 with stride 1 and keeps the shard size is left alone: each device already
holds its part) and the operands and results that change are resharded, as
`sdy-insert-explicit-reshards` does (`reshards/explicit_walk.py`).

With `enable-halo-exchange=true` (the default) a `reverse` whose reversed dims are sharded and
divide evenly is resolved without replication: its operand is resharded onto a copy of the mesh
whose device order is reversed along the axes sharding those dims (`@m_reversed`, inserted
first), so that the local reverse on each device is the global one:

    %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = <@m, [{"a"}, {}]>}
 -> %r = sdy.reshard %arg0 <@m_reversed, [{"a"}, {}]>      (@m_reversed = <["a"=2],
    %0 = stablehlo.reverse %r, dims = [0] {sdy.sharding = <@m, [{"a"}, {}]>}  device_ids=[1, 0]>)

The result takes the operand's sharding. A reversed dim its shard count does not divide, when
the padding fits in one shard, takes a halo exchange first (`halo_exchange.py`): the
operand is padded at the high end, a manual computation over the axes of the padded dims moves
the padding to the low end with `collective_permute`s, the reverse runs on the padded type after
the reshard and a slice gives back the original size:

    %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = <@m, [{"a"}, {}]>} : tensor<14x8xf32>
 -> %p = stablehlo.pad %arg0, %cst, high = [2, 0]           %h = sdy.manual_computation(%p) ...
    %r = sdy.reshard %h <@m_reversed, [{"a"}, {}]>          %0 = stablehlo.reverse %r, dims = [0]
    %1 = stablehlo.slice %0 [0:14, 0:8]                       (the reverse's users read %1)

A larger padding replicates the dims, as `enable-halo-exchange=false` does for every indivisible
reverse. This is the pass as jaxlib 0.10.2 ships it (Shardy 4831393c): Shardy's later halo
exchanges (pad, slice and reshape, multi-hop shifts, `replica-count`/`partition-count`) are not
in it, and neither here; its `collective_permute` pairs are device ids of the whole mesh, as
Shardy writes them since d83d34d2, not that version's (docs/interop.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.data_flow import _SDY_OPS
from shardc.ir.types import DistributedTensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.rules.registry import rule_for
from shardc.passes.propagation.rules.rule import FactorKind
from shardc.passes.reshard import halo_exchange as halo
from shardc.passes.reshard.reshards import factor_shardings as fsh
from shardc.passes.reshard.reshards.common_axes import shardy_projection
from shardc.passes.reshard.reshards.explicit_walk import (
    ExplicitReshards,
    Regions,
    common_mesh_ignoring_device_order,
)
from shardc.passes.reshard.reshards.insertion import Cursor, dims_replicated

# Ops that are not StableHLO's (Shardy's pass visits StableHLO ops only).
_NOT_STABLEHLO = _SDY_OPS | {"return", "call", "named_computation", "manual_computation"}


def reversed_mesh_ids(mesh: DeviceMesh, axes: list[AxisRef]) -> tuple[int, ...]:
    """Shardy's `getMeshWithReversedAxes`: the device at each position of `mesh`, with the
    coordinate along each of `axes` (sub-axes too) flipped."""
    ids = mesh.all_device_ids()
    out = []
    for p in range(mesh.num_devices):
        coords = mesh.coords(p)
        new = dict(coords)
        for a in axes:
            size = a.axis_size(mesh)
            post = mesh.axis_size(a.name) // (a.pre * size)
            sub = (coords[a.name] // post) % size
            new[a.name] += (size - 1 - 2 * sub) * post
        out.append(ids[mesh.position(new)])
    return tuple(out)


def is_communication_free_slice_dim(op: Operation, dim: int, sharding: NamedMapping | None
                                    ) -> bool:
    """Shardy's `isCommunicationFreeSliceDim`: the dim is not sharded, or the slice starts at 0
    with stride 1 and each shard keeps its size (ceil division by the shard count)."""
    count = 1 if sharding is None else math.prod(
        a.axis_size(sharding.mesh) for a in sharding.dims[dim].axes)
    if count <= 1:
        return True
    strides = attr(op, "strides")
    if attr(op, "start_indices")[dim] != 0 or (strides is not None and strides[dim] != 1):
        return False
    n_in, n_out = op.operand(0).type.shape[dim], op.results[0].type.shape[dim]
    return -(-n_in // count) == -(-n_out // count)


class Resolver:
    """The pass over one module: new meshes are named as MLIR's symbol table names them (`_0`,
    `_1`, ... from one counter) and inserted before every other mesh."""

    def __init__(self, module: Module, halo: bool):
        self.module = module
        self.halo = halo
        self.regions = Regions(module)
        self.reshards = ExplicitReshards(module, self.regions, True)
        self.counter = 0

    def run(self) -> None:
        for func in list(self.module.functions.values()):
            if func.name not in self.regions.owner:
                self.walk(func)

    def walk(self, func: Function) -> None:
        for op in list(func.body):
            if op.parent is None:
                continue
            for region in self.regions.functions(op):
                self.walk(region)
            if op.name not in _NOT_STABLEHLO:
                self.visit(op)

    def visit(self, op: Operation) -> None:
        rule = rule_for(op)
        if rule is None or rule.is_custom:
            return
        factors = [f for f, k in enumerate(rule.kinds) if k is FactorKind.PERMUTATION]
        if not factors:
            return
        if self.halo and op.name == "reverse" and self.reverse(op):
            return
        self.replicate(op, rule, factors)

    def replicate(self, op: Operation, rule, factors: list[int]) -> None:
        ins = [self.regions.sharding(v) for v in op.operands]
        outs = [r.mapping for r in op.results]
        mesh = common_mesh_ignoring_device_order([*ins, *outs])
        if mesh is None or mesh.is_maximal:
            return
        projection = shardy_projection(ins, outs, rule, mesh)
        update_in = [False] * len(ins)
        update_out = [False] * len(outs)
        for f in factors:
            if op.name == "slice":
                if ins[0] != outs[0]:
                    raise PassError(
                        "'slice' op: its operand and result shardings differ (Shardy requires "
                        "them equal here; run sdy-insert-explicit-reshards first)", op.loc)
                if is_communication_free_slice_dim(op, f, ins[0]):
                    continue
            changed_in, changed_out = fsh.update_factor(projection, f, ())
            update_in = [x or y for x, y in zip(update_in, changed_in, strict=True)]
            update_out = [x or y for x, y in zip(update_out, changed_out, strict=True)]
        if any(update_in) or any(update_out):
            self.reshards.insert_reshards(op, projection, ins, outs, update_in, update_out,
                                          rule, mesh)

    def reverse(self, op: Operation) -> bool:
        """Shardy's `handleReverseOp`; False when the padding of an indivisible dim exceeds a
        shard (then the dims are replicated)."""
        source = self.regions.sharding(op.operand(0))
        if source is None or dims_replicated(source) or source.mesh.is_maximal:
            return True
        mesh = source.mesh
        shape = op.operand(0).type.shape
        padded = list(shape)
        reversed_dims = set(attr(op, "dimensions"))
        to_reverse: list[AxisRef] = []
        manual: set[str] = set()
        for d, dim in enumerate(source.dims):
            count = math.prod(a.axis_size(mesh) for a in dim.axes)
            if d not in reversed_dims or count <= 1:
                continue
            to_reverse.extend(dim.axes)
            if shape[d] % count:
                manual.update(a.name for a in dim.axes)
                padded[d] = -(-shape[d] // count) * count
                if padded[d] - shape[d] > padded[d] // count:
                    return False
        if not to_reverse:
            return True
        v = op.operand(0)
        if manual:
            shifts = [(d, padded[d] - n) for d, n in enumerate(shape)
                      if d in reversed_dims and padded[d] > n]
            v = halo.pad_high(op, v, tuple(padded), source)
            v = halo.shift_padding_low(op, v, source, manual, shifts)
        target = self.mesh_like(mesh, reversed_mesh_ids(mesh, to_reverse),
                                f"{source.mesh.name}_reversed")
        v = Cursor.before(op).create("reshard", v, source.replace(mesh=target), {}, op)
        op.set_operand(0, v)
        result = op.results[0]
        result.type = DistributedTensorType(v.type.shape, v.type.dtype, source)
        if manual:
            trimmed = halo.slice_to(op, result, shape, source)
            result.replace_uses_if(trimmed, lambda use: use.op is not trimmed.defining_op)
        return True

    def mesh_like(self, mesh: DeviceMesh, ids: tuple[int, ...], name: str) -> DeviceMesh:
        """Shardy's `getOrCreateMesh`: the module's mesh with these axes and device ids, or a new
        one named `name` (made unique) placed first."""
        probe = DeviceMesh(name, mesh.axes, ids)
        for m in self.module.meshes.values():
            if m.same_devices(probe):
                return m
        while name in self.module.meshes or name in self.module.functions:
            name = f"{probe.name}_{self.counter}"
            self.counter += 1
        new = DeviceMesh(name, mesh.axes, probe.device_ids)
        meshes = dict(self.module.meshes)
        locs = dict(self.module.mesh_locs)
        self.module.meshes.clear()
        self.module.mesh_locs.clear()
        self.module.add_mesh(new)
        for n, m in meshes.items():
            self.module.add_mesh(m, locs.get(n))
        return new


@register_pass("resolve-permutation-factors")
@dataclass(frozen=True)
class ResolvePermutationFactors(Pass):
    """Replicate every sharded permutation factor (a reverse: reshard onto a device-reversed
    mesh instead)."""

    enable_halo_exchange: bool = True

    def run(self, module: Module, ctx: PassContext) -> None:
        Resolver(module, self.enable_halo_exchange).run()


register_alias("sdy-resolve-permutation-factors", "resolve-permutation-factors")
