"""Ops that compute locally: checked against their factor rule (locality.py), then adjusted
where a device's block needs it, by op family (`LOCAL_FIXES`)."""

from __future__ import annotations

from collections.abc import Callable

from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering import contraction, indexing, random, shape, window
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering
from shardc.passes.spmd.lowering.locality import check_local, global_rule

LocalFix = Callable[[FunctionLowering, Operation, OpShardingRule], None]

# op name -> what its per-device code needs besides the op itself on local blocks.
LOCAL_FIXES: dict[str, LocalFix] = {
    "dot_general": contraction.fix_dot_general,
    "dot": contraction.fix_dot_general,
    "reduce": contraction.fix_reduce,
    "slice": shape.fix_slice,
    "gather": indexing.fix_gather,
    "scatter": indexing.fix_scatter,
    "sort": shape.check_sort,
    "dynamic_slice": window.fix_dynamic_slice,
    "dynamic_update_slice": window.fix_dynamic_update_slice,
    "convolution": window.fix_convolution,
    "rng_bit_generator": random.fix_rng_bit_generator,
}


def lower_local(low: FunctionLowering, op: Operation) -> None:
    """Check the op computes locally under its sharding rule, then mask/adjust as it needs."""
    if op.name == "return":  # checked with the signature (spmd.py)
        return
    rule = global_rule(low, op)
    if rule is None:
        for v in (*op.operands, *op.results):
            m = low.mapping(v)
            if m is not None and not m.is_fully_replicated:
                raise PassError(
                    f"'{op.name}' op has no sharding rule, so it must be replicated, but it "
                    f"has sharding {m}",
                    op.loc,
                )
        return
    check_local(low, op, rule)
    fix = LOCAL_FIXES.get(op.name)
    if fix is not None:
        fix(low, op, rule)
