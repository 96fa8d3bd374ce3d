"""`lower-collectives`: each `reshard` becomes the cheapest sequence of collectives.

    shardc opt model.mlir -p insert-reshards,lower-collectives
    shardc opt model.mlir -p 'lower-collectives{cost=bytes}'        # plan by buffer bytes
    shardc opt model.mlir -p 'lower-collectives{planner=greedy}'    # the obvious plan
    shardc opt model.mlir -p 'lower-collectives{planner=shardy}'    # Shardy's algorithm
    shardc opt model.mlir -p 'lower-collectives{budget=500000}'     # search longer

    %1 = reshard %0 : tensor<16x64xf32, <@m, [{}, {"x"}]>>          # %0: [{"x"}, {}]
  becomes
    %1 = all_to_all %0 {params = [{"x"}: 0->1]} : tensor<16x64xf32, <@m, [{}, {"x"}]>>

The plan comes from `shardc.passes.analysis.collectives.plan_reshard` (A* over layouts, ring-model
bytes per device; SEMANTICS.md §5) within `budget` edges (about 0.3 s: when the budget cuts the
search the plan is the cheapest found, never worse than the greedy one, the pass warns, and the
reshard is listed under `planner_fallbacks` in the compile report), or with `planner=shardy` from
Shardy's reshard algorithm (`analysis/collectives/shardy_plan.py`, after an `all_reduce` of the
unreduced axes the target drops). Each reshard's plan under the other algorithm is costed too
(`ctx.data["reshard_plans"]`, the report's `reshard_plans`), when the report is built
(`finish_reshard_plans`). Every emitted collective carries the
sharding it produces in its result type, so the op verifiers check each step. A reshard whose
operand is unreduced plans the reduction too (`all_reduce`, or `reduce_scatter` when the target
shards a dim on those axes).

A reshard the planner cannot express (different meshes, sub-axes without a common
decomposition, or steps the IR's collective ops cannot spell) stays a `reshard` and is reported
with `ctx.warn`; a reshard that asks for something impossible (creating unreduced axes) is a
located `PassError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import verify_operation
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives import (
    AllReduce,
    Plan,
    Step,
    greedy_plan,
    plan_reshard,
)
from shardc.passes.analysis.collectives.op_steps import step_op
from shardc.passes.analysis.collectives.planner import COST_MODELS, DEFAULT_BUDGET
from shardc.passes.analysis.collectives.shardy_plan import plan_costs, shardy_plan
from shardc.passes.analysis.collectives.sub_axes import set_difference
from shardc.passes.manager import Pass, PassContext, register_pass

PLANNERS = ("optimal", "greedy", "shardy")


def shardy_reshard(
    shape, dtype: str, src: NamedMapping, dst: NamedMapping, *, cost: str = "ring"
) -> Plan:
    """Shardy's plan: an `all_reduce` of the unreduced axes `dst` does not keep (Shardy's
    insert-explicit-reshards puts it before the reshard), then Shardy's reshard algorithm."""
    steps: list[Step] = []
    layouts = [src]
    mesh = src.mesh
    reduced = tuple(set_difference(src.unreduced, dst.unreduced, mesh))
    if reduced:
        steps.append(AllReduce(reduced))
        layouts.append(src.replace(
            unreduced=tuple(set_difference(src.unreduced, reduced, mesh))))
    inner = shardy_plan(shape, dtype, layouts[-1], dst)
    steps.extend(inner.steps)
    layouts.extend(inner.layouts[1:])
    if steps:
        layouts[-1] = dst
    ring, comm = plan_costs(tuple(shape), dtype, steps, layouts)
    return Plan(tuple(shape), dtype, tuple(steps), tuple(layouts), ring if cost == "ring" else
                comm, cost, ring, comm)


def record_plans(ctx: PassContext, v: Value, src: NamedMapping, dst: NamedMapping, chosen: Plan,
                 planner: str, cost: str) -> None:
    """Both plans of a reshard, side by side, for the cost report (`reshard_plans`). The other
    algorithm's plan is made when the report asks (`finish_reshard_plans`): nothing else reads
    it, and planning every reshard twice was half of this pass on a 32-layer Llama step, which
    `shardc.jit` compiles without building the report."""
    other_name = "shardy" if planner != "shardy" else "optimal"
    entry = {"value": v.label, "shape": list(v.type.shape), "from": src.text(), "to": dst.text()}
    entry[planner] = _summary(chosen)
    entry[other_name] = None  # (filled in by finish_reshard_plans; keeps the keys' order)
    ctx.data.setdefault("reshard_plans", []).append(entry)
    ctx.data.setdefault(_PENDING, []).append(
        (entry, other_name, tuple(v.type.shape), v.type.dtype, src, dst, cost))


_PENDING = "reshard_plans_pending"  # (compiler/report.py looks for it)


def finish_reshard_plans(data: dict[str, Any]) -> None:
    """Cost the reshards recorded in `data` (a `PassContext.data`) under their other algorithm,
    into their `reshard_plans` entries."""
    for entry, other_name, shape, dtype, src, dst, cost in data.pop(_PENDING, ()):
        try:
            other: Plan | None = (shardy_reshard if other_name == "shardy" else plan_reshard)(
                shape, dtype, src, dst, cost=cost)
        except ShardcError:
            other = None
        entry[other_name] = _summary(other)


def _summary(plan: Plan | None) -> dict[str, Any] | None:
    return None if plan is None else {
        "collectives": list(plan.kinds), "ring_bytes": plan.ring_bytes,
        "comm_bytes": plan.comm_bytes,
    }


@register_pass("lower-collectives")
@dataclass(frozen=True)
class LowerCollectives(Pass):
    """Lower every reshard to its cheapest sequence of collectives (Shardy's
    sdy-reshard-to-collectives)."""

    cost: str = "ring"
    planner: str = "optimal"
    budget: int = DEFAULT_BUDGET

    def run(self, module: Module, ctx: PassContext) -> None:
        if self.cost not in COST_MODELS:
            raise PassError(f"lower-collectives: cost must be one of {', '.join(COST_MODELS)}")
        if self.planner not in PLANNERS:
            raise PassError(f"lower-collectives: planner must be one of {', '.join(PLANNERS)}")
        if self.budget < 1:
            raise PassError(f"lower-collectives: budget must be at least 1, not {self.budget}")
        stats = ctx.data.setdefault(
            "lower_collectives", {"reshards": 0, "collectives": 0, "kept": 0, "ring_bytes": 0}
        )
        for func in module.functions.values():
            for op in list(func.body):
                if op.name != "reshard" or op.parent is None:
                    continue
                plan = self.plan(op, ctx)
                if plan is None:
                    stats["kept"] += 1
                    continue
                if self.rewrite(op, plan, ctx):
                    stats["reshards"] += 1
                    stats["collectives"] += len(plan.steps)
                    stats["ring_bytes"] += plan.ring_bytes
                else:
                    stats["kept"] += 1

    def plan(self, op: Operation, ctx: PassContext) -> Plan | None:
        v, dst = op.operand(0), op.result.mapping
        src = v.mapping
        if src is None:  # no mapping: replicated
            src = NamedMapping.fully_replicated(dst.mesh, v.type.rank)
            v.set_mapping(src)
        if src.unreduced and dst.unreduced and src.unreduced_op != dst.unreduced_op:
            raise PassError(
                f"'reshard' of {v.label} turns unreduced {src.unreduced_op.value} partials into "
                f"{dst.unreduced_op.value} partials; no collective does that",
                op.loc,
            )
        missing = [a for a in dst.unreduced if a not in src.unreduced]
        if missing:
            raise PassError(
                f"'reshard' of {v.label} to {dst} asks for unreduced axes its operand {src} "
                "does not have; a reshard cannot create partial values",
                op.loc,
            )
        try:
            if self.planner == "optimal":
                plan = plan_reshard(
                    v.type.shape, v.type.dtype, src, dst, cost=self.cost, budget=self.budget
                )
            else:
                chosen = greedy_plan if self.planner == "greedy" else shardy_reshard
                plan = chosen(v.type.shape, v.type.dtype, src, dst, cost=self.cost)
            record_plans(ctx, v, src, dst, plan, self.planner, self.cost)
        except ShardcError as e:
            ctx.warn(
                f"'reshard' of {v.label} from {src} to {dst} is kept: the planner cannot "
                f"express it ({e.message})",
                op.loc,
            )
            return None
        if plan.search == "bounded":
            self.report_cut(op, plan, ctx)
        return plan

    def report_cut(self, op: Operation, plan: Plan, ctx: PassContext) -> None:
        """Warn and record (report key `planner_fallbacks`) a plan the budget kept from being
        proven cheapest."""
        v = op.operand(0)
        ctx.warn(
            f"'reshard' of {v.label} from {plan.src} to {plan.dst}: the search for the cheapest "
            f"plan stopped at its budget of {self.budget} edges; using the cheapest plan found "
            f"({plan.cost} bytes per device, greedy {plan.greedy_cost}); "
            "lower-collectives{budget=N} searches further",
            op.loc,
        )
        ctx.data.setdefault("planner_fallbacks", []).append({
            "value": v.label,
            "location": str(op.loc) if op.loc is not None else "",
            "from": plan.src.text(),
            "to": plan.dst.text(),
            "cost": plan.cost,
            "greedy_cost": plan.greedy_cost,
            "edges_searched": plan.searched,
            "budget": self.budget,
        })

    def rewrite(self, op: Operation, plan: Plan, ctx: PassContext) -> bool:
        """Replace `op` by the plan's collectives; False (and a warning) if the IR's collective
        ops cannot spell a step."""
        source = op.operand(0)
        if not plan.steps:
            op.result.replace_all_uses_with(source)
            op.erase()
            return True
        shape, dtype = source.type.shape, source.type.dtype
        built: list[Operation] = []
        value: Value = source
        block = op.parent
        assert block is not None
        try:
            for step, layout in zip(plan.steps, plan.layouts[1:], strict=True):
                name, attrs = step_op(step)
                result = DistributedTensorType(shape, dtype, layout)
                new = block.insert_before(op, Operation.at(op, name, [value], [result], attrs))
                built.append(new)
                verify_operation(new)
                value = new.result
        except ShardcError as e:
            for new in reversed(built):
                new.erase()
            ctx.warn(
                f"'reshard' of {source.label} is kept: step '{step.kind}' of its plan "
                f"({', '.join(plan.kinds)}) cannot be written as an IR op ({e.message})",
                op.loc,
            )
            return False
        value.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(value)
        op.erase()
        return True

