"""`insert-reshards`: make every op compute locally; data movement becomes explicit `reshard`s.

    shardc opt model.mlir -p propagate,insert-reshards
    shardc opt model.mlir -p 'sdy-insert-explicit-reshards{enable-full-version=true}'

After propagation every value has a sharding, but an op's operands and results may disagree under
its factor rule (SEMANTICS.md §3, §5). For each op this pass picks one sharding per factor under
which the op computes locally, and inserts `reshard` ops on the operands that differ::

    %0 = dot_general %x, %w ... : tensor<8x16xf32, <@m, [{"x"}, {}]>>     # %w: [{"y"}, {}]
    # %x: [{"x"}, {}]  ->  k is sharded on "y" for %w only; the larger source wins
    %r = reshard %x : tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>
    %0 = dot_general %r, %w ... : tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>

A sharded reduction factor leaves the result `unreduced` on its axes. The reduction is not
inserted after the op (Shardy inserts an `all_reduce` there) but where a consumer needs a reduced
value: each consumer reshards the unreduced value straight to the layout it wants, so the reshard
planner picks `all_reduce`, `reduce_scatter` or anything cheaper (NOTE: differs from Shardy, which
would emit `all_reduce` then a second reshard). When several consumers want different layouts and
one shared reduction is cheaper, they reshard from it instead (shared_reductions.py). Likewise,
when an op's result must differ from the value's decided sharding, each consumer reshards from
what the op produced to what it needs.

The invariant this pass guarantees (checked by `check_locally_computable`, relied on by `spmd`):
see that function's docstring (reshards/invariant.py).

The parts, in `passes/reshard/reshards/`: the factor shardings an op computes under
(passes/propagation/factor_axes.py), the function signatures and region values fixed first
(signatures.py), the walk that rewrites each op (rewriter.py), `sort` and `reduce` with a body
(scalar_bodies.py), what spmd cannot lower (unlowerable.py), one reduction for several consumers
(shared_reductions.py), and the invariant (invariant.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.reshard.reshards.rewriter import FunctionRewriter
from shardc.passes.reshard.reshards.shared_reductions import share_reductions
from shardc.passes.reshard.reshards.signatures import close_regions, close_signatures
from shardc.passes.reshard.reshards.single_device import replicate_single_device


@register_pass("insert-reshards")
@dataclass(frozen=True)
class InsertReshards(Pass):
    """Insert explicit reshards so that every op computes locally (Shardy's
    sdy-insert-explicit-reshards, full version)."""

    enable_full_version: bool = True

    def run(self, module: Module, ctx: PassContext) -> None:
        if not self.enable_full_version:
            raise PassError(
                "insert-reshards implements only Shardy's full version "
                "(enable-full-version=true); drop the option or set it to true "
                "(insert-explicit-reshards is Shardy's pass with both versions)"
            )
        replicate_single_device(module, ctx.warn)
        close_regions(module)
        close_signatures(module)
        inserted = 0
        for func in list(module.functions.values()):
            rewriter = FunctionRewriter(module, func, ctx)
            rewriter.run()
            inserted += rewriter.inserted + share_reductions(func, rewriter.builder)
        stats = ctx.data.setdefault("insert_reshards", {"reshards": 0})
        stats["reshards"] += inserted

