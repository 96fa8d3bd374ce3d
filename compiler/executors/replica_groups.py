"""StableHLO's collectives by replica groups (`xla.*`) and `partition_id`/`replica_id` in
per-device code (an SPMD program, a manual computation's body) on batched values.

    run = replica_runner(op, layout)      # run(*batched operands), or None: not one of these

The groups are device ids of the layout's mesh (as `use_global_device_ids` means them, and as
`sdy-convert-global-to-local` writes them with one replica or one partition); each group runs
its collective on its members' blocks (`batched_collectives.grouped`). `partition_id` and
`replica_id` give each device its id, so the tables convert-global-to-local indexes by them
select each device's row. A variadic collective, a reduction given by a body shardc does not
recognise, or groups that do not cover the mesh are a located error. In a global program (one
copy) these ops run only for groups of one (kernels/replica_collectives.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shardc.executors.batched_collectives import grouped, permute
from shardc.executors.device_layout import DeviceLayout
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.replica_collectives import REPLICA_COLLECTIVES

DEVICE_IDS = ("partition_id", "replica_id")
_WHAT = {"xla.all_gather": "all_gather", "xla.all_to_all": "all_to_all",
         "xla.reduce_scatter": "reduce_scatter", "xla.all_reduce": "all_reduce"}


def _device_ids(layout: DeviceLayout) -> Callable[[], np.ndarray]:
    ids = np.array(layout.mesh.all_device_ids(), dtype=np.uint32)
    value = layout.from_positions(ids)
    value.flags.writeable = False
    return lambda: value


def replica_runner(op: Operation, layout: DeviceLayout) -> Callable | None:
    """The op as a function of batched values, or None when it is not one of these ops."""
    name = op.name
    if name in DEVICE_IDS:
        return _device_ids(layout)
    if name == "xla.collective_permute":  # the pairs are device ids
        return permute(op, layout, "source_target_pairs")
    if name not in REPLICA_COLLECTIVES:
        return None
    if len(op.operands) != 1:
        raise ExecutionError(f"'{name}' op with {len(op.operands)} operands: shardc runs "
                             "per-device collectives of one operand only", op.loc)
    kind = op.attributes.get("kind")
    if name in ("xla.all_reduce", "xla.reduce_scatter") and kind is None:
        raise ExecutionError(f"'{name}' op: its reduction body is not one shardc recognises "
                             "(add, max, min, ...)", op.loc)
    groups = [list(g) for g in attr(op, "replica_groups")]
    return grouped(op, layout, groups, _WHAT[name], kind=kind.word if kind else "add",
                   dim=op.attributes.get("all_gather_dim", op.attributes.get("scatter_dimension")),
                   split=op.attributes.get("split_dimension"),
                   concat=op.attributes.get("concat_dimension"))
