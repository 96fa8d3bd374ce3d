"""`close-existing-shardings`: close every sharding there is and drop its replicated axes;
values without a sharding stay without (Shardy's `sdy-close-shardings`).

    <@mesh, [{"x", ?}, {?}], replicated={"y"}>  ->  <@mesh, [{"x"}, {}]>

shardc's own `close-shardings` (what `shardc compile` runs) also gives unannotated values a
replicated sharding and keeps replicated axes.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.passes.ingest.sharding_walk import transform_shardings
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def closed_like(m: NamedMapping) -> NamedMapping:
    """Shardy's `getClosedLike`: every dim closed (priorities dropped), no replicated axes."""
    return NamedMapping(m.mesh, tuple(DimSharding(d.axes, True) for d in m.dims), (),
                        m.unreduced, m.unreduced_op, m.memory_kind)


@register_pass("close-existing-shardings")
@dataclass(frozen=True)
class CloseExistingShardings(Pass):
    """Close every existing sharding, dropping replicated axes (sdy-close-shardings)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        transform_shardings(module, closed_like)


register_alias("sdy-close-shardings", "close-existing-shardings")
