"""`rng_bit_generator` per device: the bits must be the global tensor's block, so every device
draws the whole tensor from the (replicated) state and keeps its own block (no communication;
the draw costs what the unsharded program's does)::

    %s, %b = rng_bit_generator %state : tensor<2xui64>, tensor<8x4xui32>   # global bits
    %local = spmd.all_slice %b {axes = ["x"], dim = 0, ...}                  # this device's rows
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.shards import chunk
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering.collectives import all_slice
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering


def fix_rng_bit_generator(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    bits = op.results[1]
    m = low.mapping(bits)
    if m is None or all(n == 1 for n in m.shard_counts()):
        return
    state_t, bits_t = op.results[0].type, bits.type
    whole = Operation.at(
        op, op.name, [op.operand(0)],
        [DistributedTensorType(state_t.shape, state_t.dtype),
         DistributedTensorType(bits_t.shape, bits_t.dtype)],
        dict(op.attributes),
    )
    assert op.parent is not None
    op.parent.insert_before(op, whole)
    low.new.update(id(r) for r in whole.results)
    local = whole.results[1]
    for d, dim in enumerate(m.dims):
        if dim.axes:
            local = all_slice(low, local, d, dim.axes, chunk(bits_t.shape[d], m.num_shards(d)))
    for old, new in zip(op.results, (whole.results[0], local)):
        old.replace_all_uses_with(new)
        low.replaced[id(new)] = old
    op.erase()
