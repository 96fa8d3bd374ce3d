"""`sdy-convert-global-to-local`: Shardy's own SPMD lowering, op for op as Shardy writes it.

    shardc opt model.mlir -p sdy-convert-global-to-local
    shardc opt model.mlir -p 'sdy-convert-global-to-local{per-dim-all-gather=true}'

The input is a global program whose data moves only through explicit sdy collectives (after
`sdy-reshard-to-collectives`); the output has local (per-device) types: each value's type is its
global type split by its sharding, which stays written on it. The sdy collectives become
StableHLO's (`"stablehlo.all_gather"(...) <{replica_groups = ..., channel_handle = ...,
use_global_device_ids}>`, `passes/spmd/global_to_local/collectives.py`); `sdy.constant`s, sharded
iotas, slices, pads, convolutions, reduce_windows, dots and manual/named computations are
rewritten as Shardy does (`passes/spmd/global_to_local/ops.py`), and gathers of sharded operands
(`gather.py`) and scatters (`scatter.py`).

Options, Shardy's: `per-dim-all-gather` (one all_gather per dim), `combine-multi-dimension-
reduce-scatter`, `replica-count`/`partition-count` (the device id is `replica_id` when there are
several replicas), `enable-rgv3` (replica groups written as mesh axes,
`#stablehlo.replica_group_mesh_axes<...>`, where no sub-axis takes part). Not supported (an
error says so): a variadic scatter of sharded operands.

shardc's own `spmd` pass lowers the same input to its `spmd.*` collectives, pads uneven shards
and masks padding; this pass, like Shardy's, needs every sharded dim to divide evenly.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.ops.registry import attr
from shardc.ir.types import TensorType, with_sharding
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.spmd.global_to_local import collectives, gather, ops, scatter
from shardc.passes.spmd.global_to_local.state import Localizer, local_shape


@register_pass("convert-global-to-local")
@dataclass(frozen=True)
class ConvertGlobalToLocal(Pass):
    """Global shapes and sdy collectives -> local shapes and StableHLO collectives
    (sdy-convert-global-to-local)."""

    per_dim_all_gather: bool = False
    combine_multi_dimension_reduce_scatter: bool = False
    enable_rgv3: bool = False
    replica_count: int = 1
    partition_count: int = 1

    def run(self, module: Module, ctx: PassContext) -> None:
        if self.replica_count > 1 and self.partition_count > 1:
            raise PassError("convert_global_to_local does not support both replica-count > 1 "
                            "and partition-count > 1")
        lz = Localizer(module, self)
        bodies = {attr(op, "body").name: op.name for f in module.functions.values()
                  for op in f.body if op.name in ("manual_computation", "named_computation")}
        for func in list(module.functions.values()):
            if func.name not in bodies:
                convert_function(lz, func)
        for name, kind in bodies.items():
            if kind == "manual_computation" and name in module.functions:
                del module.functions[name]


def convert_function(lz: Localizer, func: Function) -> None:
    """Give `func`'s signature and ops local types, rewriting the ops Shardy rewrites."""
    for a in func.args:
        lz.localize(a, None, func.loc)
    func.result_types = [
        with_sharding(TensorType(local_shape(t.shape, getattr(t, "mapping", None), None,
                                             func.loc), t.dtype), getattr(t, "mapping", None))
        for t in func.result_types
    ]
    for op in list(func.body):
        if op.parent is None:
            continue
        lz.anchor = op
        try:
            convert_op(lz, op)
        except PassError:
            raise
        except ShardcError as e:
            raise PassError(f"'{op.name}' op: {e.message}", e.loc or op.loc) from None


def convert_op(lz: Localizer, op: Operation) -> None:
    name = op.name
    if name in collectives.HANDLERS:
        return collectives.HANDLERS[name](lz, op)
    if name == "constant":
        return ops.constant(lz, op)
    if name == "iota":
        return ops.iota(lz, op)
    if name == "slice":
        return ops.slice_op(lz, op, lz.global_shape(op.operand(0)))
    if name in ("reduce_window", "select_and_scatter"):
        return ops.windowed(lz, op)
    if name == "scatter":
        return scatter.scatter(lz, op)
    if name == "gather":
        return gather.gather(lz, op)
    if name == "convolution":
        return ops.convolution(lz, op)
    if name == "pad":
        return ops.pad(lz, op)
    if name == "concatenate":
        return ops.concatenate(lz, op)
    if name in ("dot", "dot_general"):
        return ops.dot(lz, op)
    if name in ("manual_computation", "named_computation"):
        body = lz.module.lookup_function(attr(op, "body").name)
        if body is None:
            raise PassError(f"'{name}' op names no body function", op.loc)
        anchor = lz.anchor
        convert_function(lz, body)
        lz.anchor = anchor
        if name == "named_computation":
            return ops.generic(lz, op)
        return ops.inline_body(lz, op, list(body.body), list(body.args))
    return ops.generic(lz, op)


register_alias("sdy-convert-global-to-local", "convert-global-to-local")
