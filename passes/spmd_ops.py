"""The per-device `spmd.*` ops now live in the IR (`ir/ops/spmd.py`), so native text can use them
inside a `manual_computation` body; this module keeps the old import path working."""

from shardc.ir.ops.spmd import ALL_REDUCE_KINDS, SPMD_OPS, group_size

__all__ = ["ALL_REDUCE_KINDS", "SPMD_OPS", "group_size"]
