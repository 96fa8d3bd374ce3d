"""Every sharding of a module, as Shardy's sharding walker visits them, for passes that rewrite
each one (`transform_shardings(module, fn)`):

- function argument and result shardings (of every function, region functions included);
- op result shardings; an op's results share one `sdy.sharding_per_value` attribute, so a result
  without a sharding next to one with a sharding is fully open (`{?}`) there and is rewritten too;
- `manual_computation` in/out shardings (the body's values follow them).
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.ir.core import Module
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.manual import fill_all, manual_computations, sync_all
from shardc.ir.types import DistributedTensorType

ShardingFn = Callable[[NamedMapping], NamedMapping]


def transform_shardings(module: Module, fn: ShardingFn) -> None:
    for op in manual_computations(module):
        for key in ("in_shardings", "out_shardings"):
            op.attributes[key] = tuple(fn(m) for m in op.attributes[key])
    fill_all(module)
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(fn(a.mapping))
        for i, t in enumerate(func.result_types):
            if isinstance(t, DistributedTensorType) and t.mapping is not None:
                func.result_types[i] = DistributedTensorType(t.shape, t.dtype, fn(t.mapping))
        for op in func.body:
            if op.name == "manual_computation":
                continue
            mesh = next((r.mapping.mesh for r in op.results if r.mapping is not None), None)
            for r in op.results:
                if r.mapping is not None:
                    r.set_mapping(fn(r.mapping))
                elif mesh is not None:
                    r.set_mapping(fn(NamedMapping.fully_open(mesh, r.type.rank)))
    sync_all(module)
