"""`manual_computation` in the reference interpreter: the body run on every device at once.

    outputs = run_manual_computation(module, op, [x, w])       # global arrays in and out

Each device gets its block of every operand cut by the manual axes of `in_shardings` (the free
axes split nothing here: the reference computes whole tensors), the body runs as per-device code
on all devices together with the numpy SPMD executor's batched values (so its `spmd.*`
collectives mean exactly what they mean in an SPMD program), and the results are put together
from the blocks by the manual axes of `out_shardings`; a manual axis a result does not use holds
copies, and the first one is taken (shard_map's `out_specs` without that axis).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shardc.executors.device_layout import DeviceLayout, from_batched, to_batched
from shardc.executors.numpy_exec import NumpyExecutor
from shardc.ir.core import Module, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.manual import body_of, manual_names
from shardc.ir.ops.registry import attr


def _manual_only(m: NamedMapping, manual: Sequence[str]) -> NamedMapping:
    """`m` with only the manual axes of each dim (the layout of the body's blocks)."""
    dims = []
    for d in m.dims:
        n = 0
        while n < len(d.axes) and d.axes[n].name in manual:
            n += 1
        dims.append(DimSharding(d.axes[:n], True))
    return NamedMapping(m.mesh, tuple(dims))


def run_manual_computation(
    module: Module, op: Operation, operands: Sequence[np.ndarray], limits: Limits = DEFAULT_LIMITS
) -> list[np.ndarray]:
    """Run `op` (a manual_computation of `module`) on global operands; global results."""
    body = body_of(op)
    if body is None:
        raise ExecutionError(f"body @{attr(op, 'body').name} is not in the module", op.loc)
    manual = manual_names(op)
    ins = [_manual_only(m, manual) for m in attr(op, "in_shardings")]
    outs = [_manual_only(m, manual) for m in attr(op, "out_shardings")]
    if not ins and not outs:
        return []  # no operands and no results: nothing the body computes is observable
    mesh = (ins or outs)[0].mesh
    # The layout splits the manual axes where the shardings use parts of them (sub-axes).
    refs = [AxisRef(name) for name in manual] + [a for m in (*ins, *outs) for a in m.used_axes()]
    for inner in body.body:
        if inner.name.startswith("spmd.") and "axes" in inner.attributes:
            refs.extend(attr(inner, "axes"))
    layout = DeviceLayout.build(mesh, refs)
    args = [to_batched(np.asarray(x), m, layout) for x, m in zip(operands, ins)]
    with np.errstate(all="ignore"):
        results = NumpyExecutor.on_layout(module, layout, limits).call(body, args)
    return [
        from_batched(x, r.type.shape, m, layout) for x, r, m in zip(results, op.results, outs)
    ]
