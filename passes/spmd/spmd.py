"""`spmd`: the global-view program -> the per-device (SPMD) program. See docs/spmd.md.

Input: every value has a closed sharding, data moves only through the six global collectives, and
every other op computes locally under its sharding rule. Output: the same function with local
types (each device's padded block), the global collectives turned into `spmd.*` ops with explicit
device groups (`ir/ops/spmd.py`), and the facts executors need recorded on the function::

    func @main(%x: tensor<3x8xf32>) -> tensor<8xf32> attributes {mesh = @m,
        in_shapes = [[10, 8]], in_shardings = [<@m, [{"x"}, {}]>],
        out_shapes = [[8]], out_shardings = [<@m, [{}]>]} { ... }

Uneven shards are padded at the end (ceil(n/k) per device). Padding holds unspecified values, so
the pass masks it (a `select` on an iota-based predicate) where a contraction or a reduction
would read it, and pads/slices around collectives so only padding ever lands in padding.

This module walks each function and records its per-device signature; how each op is lowered is
in `passes/spmd/lowering/`, by op family: the shared state (function_lowering.py), padding and
masks (padding.py), the collectives, sharding ops, manual_computation, while/case, ops that
create data (sources.py), and ops that compute locally (local.py: the check in locality.py, the
adjustments in contraction.py, shape.py, indexing.py and window.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops.manual import body_of, manual_computations
from shardc.ir.ops.registry import attr
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.spmd.lowering import collectives, regions, shape, sharding_ops, sources
from shardc.passes.spmd.lowering.function_lowering import (
    FunctionLowering,
    closed_layout,
    is_spmd,
)
from shardc.passes.spmd.lowering.local import lower_local
from shardc.passes.spmd.lowering.manual import inline_manual


@register_pass("spmd")
@dataclass(frozen=True)
class Spmd(Pass):
    """Lower the global-view program to the per-device (SPMD) program."""

    def run(self, module: Module, ctx: PassContext) -> None:
        # manual_computation bodies are lowered when their op is, and inlined there.
        bodies = {attr(op, "body").name for op in manual_computations(module)}
        for func in list(module.functions.values()):
            if is_spmd(func) or func.name in bodies:
                continue
            lower_function(module, func)
        for name in bodies - {attr(op, "body").name for op in manual_computations(module)}:
            del module.functions[name]


def lower_function(module: Module, func: Function, outer_mesh: DeviceMesh | None = None) -> None:
    """Rewrite `func` in place into its per-device form (a manual body: on `outer_mesh` when it
    names no mesh itself)."""
    low = FunctionLowering(module, func)
    if outer_mesh is not None:
        low.mesh = low.mesh or outer_mesh
    for op in list(func.body):
        low.anchor = op
        try:
            handler = _HANDLERS.get(op.name, lower_local)
            handler(low, op)
        except PassError:
            raise
        except ShardcError as e:
            raise PassError(f"'{op.name}' op: {e.message}", e.loc or op.loc) from None
    _record_signature(low)


def _lower_manual(low: FunctionLowering, op: Operation) -> None:
    """Lower the body on its own first (once), then inline it (manual.py)."""
    body = body_of(op)
    assert body is not None, "the verifier checks the body exists"
    if not is_spmd(body):
        lower_function(low.module, body, low.mesh)
    inline_manual(low, op)


def _record_signature(low: FunctionLowering) -> None:
    """The per-device signature: local types, and the global facts executors need."""
    func, mesh = low.func, low.mesh
    ret = func.return_op
    returned = list(ret.operands) if ret is not None else []
    attrs: dict[str, Any] = {}
    if mesh is not None:
        attrs["mesh"] = Symbol(mesh.name)
    attrs["in_shapes"] = tuple(tuple(a.type.shape) for a in func.args)
    if mesh is not None:
        attrs["in_shardings"] = tuple(low.layout(a) for a in func.args)
    out_shapes, out_shardings = [], []
    for i, v in enumerate(returned):
        out_shapes.append(tuple(low.global_shape(v)))
        if mesh is None:
            continue
        declared = getattr(func.result_types[i], "mapping", None)
        layout = low.layout(v)
        if declared is not None and not same_layout(closed_layout(declared), layout):
            raise PassError(
                f"result {i} of @{func.name} is laid out as {layout} but declared "
                f"{declared}; run insert-reshards before spmd",
                func.loc,
            )
        out_shardings.append(layout)
    attrs["out_shapes"] = tuple(out_shapes)
    if mesh is not None:
        attrs["out_shardings"] = tuple(out_shardings)
    func.attributes.update(attrs)
    func.result_types = [
        DistributedTensorType(low.local_shape(v), v.type.dtype) for v in returned
    ]
    values = list(func.args) + [r for op in func.body for r in op.results]
    local = [low.local_shape(v) for v in values]
    # (types are immutable: the values of one local shape and element type share one)
    made: dict[tuple[tuple[int, ...], str], DistributedTensorType] = {}
    for v, local_shape in zip(values, local):
        key = (local_shape, v.type.dtype)
        t = made.get(key)
        if t is None:
            t = made[key] = DistributedTensorType(local_shape, v.type.dtype)
        v.type = t


# op name -> its lowering; every other op computes locally (local.py).
_HANDLERS: dict[str, Callable[[FunctionLowering, Operation], None]] = {
    "call": regions.lower_call,
    "while": regions.lower_region_op,
    "case": regions.lower_region_op,
    "all_gather": collectives.lower_all_gather,
    "all_slice": collectives.lower_all_slice,
    "all_to_all": collectives.lower_all_to_all,
    "collective_permute": collectives.lower_collective_permute,
    "all_reduce": collectives.lower_all_reduce,
    "reduce_scatter": collectives.lower_reduce_scatter,
    "sharded_to_unreduced": collectives.lower_sharded_to_unreduced,
    "replicated_to_unreduced": collectives.lower_replicated_to_unreduced,
    "reshard": sharding_ops.lower_identity,
    "sharding_constraint": sharding_ops.lower_identity,
    "propagation_barrier": sharding_ops.lower_identity,
    "optimization_barrier": sharding_ops.lower_optimization_barrier,
    "sharding_group": sharding_ops.lower_sharding_group,
    "manual_computation": _lower_manual,
    "constant": sources.lower_constant,
    "iota": sources.lower_iota,
    "top_k": shape.check_top_k,
}
