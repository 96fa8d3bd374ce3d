"""`import-pipeline` (Shardy's `sdy-import-pipeline`): Shardy's import passes, in its order.

    symbol-dce, lift-inlined-meshes, remove-size-one-axes, propagate-sharding-from-func-to-call,
    sdy-constant-or-scalar-splitter
    (sdy-constant-or-scalar-splitter), symbol-dce, manual-axes-cleanup, add-data-flow-edges

and with `dedup-functions-fully=true` then apply-sharding-constraints and sharding-group-import
(so a group's members already carry their constraints' shardings).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.manager import (
    Pass,
    PassContext,
    PassManager,
    parse_pipeline,
    register_alias,
    register_pass,
)

STEPS = (
    "symbol-dce",
    "lift-inlined-meshes",
    "remove-size-one-axes",
    "propagate-sharding-from-func-to-call",
    "sdy-constant-or-scalar-splitter",
    "symbol-dce",
    "manual-axes-cleanup",
    "add-data-flow-edges",
)
DEDUP_STEPS = ("apply-sharding-constraints", "sharding-group-import")


@register_pass("import-pipeline")
@dataclass(frozen=True)
class ImportPipeline(Pass):
    """Shardy's import passes in order (`sdy-import-pipeline`)."""

    dedup_functions_fully: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        steps = STEPS + (DEDUP_STEPS if self.dedup_functions_fully else ())
        PassManager(parse_pipeline(",".join(steps)), verify_each=ctx.verify_each).run(module, ctx)


register_alias("sdy-import-pipeline", "import-pipeline")
