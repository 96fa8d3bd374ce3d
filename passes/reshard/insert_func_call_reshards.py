"""`insert-func-call-reshards`: a `call` produces what its callee's results are sharded as; where
the call's own result sharding differs, a `reshard` back to it follows the call (Shardy's
`sdy-insert-func-call-reshards`).

    %0 = call @f(%x) {sdy.sharding = <@m, [{"y"}]>}   # @f returns <@m, [{"x"}]>
  becomes
    %0 = call @f(%x) {sdy.sharding = <@m, [{"x"}]>}
    %1 = sdy.reshard %0 <@m, [{"y"}]>

A callee whose results have no sharding counts as closed replicated on the call's mesh.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.ingest.call_graph import callee, calls, result_shardings
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.reshard.reshards.insertion import Cursor, closed_replicated, equivalent


@register_pass("insert-func-call-reshards")
@dataclass(frozen=True)
class InsertFuncCallReshards(Pass):
    """Make each call produce its callee's result shardings, resharding back where the call's
    differ (sdy-insert-func-call-reshards)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in calls(module):
            targets = result_shardings(callee(module, op))
            if targets is None:
                if all(r.mapping is None for r in op.results):
                    continue
                like = next(r.mapping for r in op.results if r.mapping is not None)
                targets = tuple(closed_replicated(r.mapping or like, r.type.rank)
                                for r in op.results)
            for r, target in zip(op.results, targets, strict=True):
                mine = r.mapping
                if not equivalent(target, mine):
                    back = mine if mine is not None else closed_replicated(target)
                    v = Cursor.after(op).create("reshard", r, back, {}, op)
                    new_op = v.defining_op
                    r.replace_uses_if(v, lambda use, new_op=new_op: use.op is not new_op)
            for r, target in zip(op.results, targets, strict=True):
                r.set_mapping(target)


register_alias("sdy-insert-func-call-reshards", "insert-func-call-reshards")
