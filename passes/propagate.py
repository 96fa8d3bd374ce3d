"""`propagate`: decide every value's sharding with Shardy's semantics.

    shardc opt model.mlir -p propagate                      # user + op priorities, aggressive
    shardc opt model.mlir -p 'propagate{strategy=basic}'
    shardc opt model.mlir -p propagate --explain            # record each axis's origin

Shardy's pass names are aliases: `sdy-basic-propagate` and `sdy-aggressive-propagate` run one
propagation with no priorities; `sdy-op-priority-propagate` adds the op-priority stages;
`sdy-user-priority-propagate` is the whole stack (what `propagate` runs by default).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from shardc.ir.attributes import format_string
from shardc.ir.core import Module, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.manual import normalize as normalize_manual
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.origins import OriginTracker
from shardc.passes.propagation.priorities import run_op_priority, run_user_priorities
from shardc.passes.propagation.state import build_state
from shardc.passes.propagation.strategies import strategy_named


def annotation_label(v: Value) -> str:
    op = v.defining_op
    name = v.name_hint or "?"
    if op is not None and op.name == "sharding_constraint":
        return f"constraint %{name}"
    return f"%{name}"


@register_pass("propagate")
@dataclass(frozen=True)
class Propagate(Pass):
    """Decide every value's sharding (user priorities, op-priority stages, aggressive/basic)."""

    strategy: str = "aggressive"
    op_priority: bool = True
    user_priority: bool = True
    conservative: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        try:
            strategy = strategy_named(self.strategy)
        except (KeyError, ValueError):
            raise PassError(
                f"unknown propagation strategy '{self.strategy}' (expected aggressive or basic)"
            ) from None
        # Propagation builds many small long-lived objects; Python's full garbage collections
        # over them made the time per op grow with program size; what they would find is
        # collected once collection is back on.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._run(module, ctx, strategy)
        finally:
            if collecting:
                gc.enable()

    def _run(self, module: Module, ctx: PassContext, strategy) -> None:
        normalize_manual(module)  # manual_computation values carry its shardings (annotations)
        origins = OriginTracker()
        origins.seed(module, annotation_label, ctx.data.get("auto_shard_axes", {}))
        state = build_state(module, strategy, conservative=self.conservative, origins=origins)
        if self.user_priority:
            rounds = run_user_priorities(state, op_priority=self.op_priority)
        else:
            run_op_priority(state, self.op_priority, "")
            rounds = [0]
        ctx.data["origins"] = origins
        ctx.data["propagation"] = {"op_visits": state.visits, "priority_rounds": rounds}
        for name, op in sorted(state.no_rule.items()):
            if op.num_operands == 0:
                continue  # constants and iotas: nothing flows through them
            message = (
                f"'{name}' has no sharding rule: propagation does not pass through it and it "
                "computes on replicated operands"
            )
            if ctx.strict:
                raise PassError(message + " (--strict)", op.loc)
            ctx.warn(message, op.loc)
            ctx.data.setdefault("fallbacks", []).append(name)
        if ctx.explain:
            attach_origins(module, origins)


def attach_origins(module: Module, origins: OriginTracker) -> None:
    """Write each value's origins into the IR (`shardc.origin` attributes)."""
    for func in module.functions.values():
        for i, a in enumerate(func.args):
            text = origins.describe(a)
            if text:
                func.arg_attrs[i]["shardc.origin"] = text
        for i in range(len(func.result_types)):
            text = origins.describe_result(func, i)
            if text:
                func.res_attrs[i]["shardc.origin"] = text
        for op in func.body:
            texts = [origins.describe(r) for r in op.results]
            if any(texts):
                op.attributes["shardc.origin"] = (
                    texts[0]
                    if len(texts) == 1
                    else ("[" + ", ".join(format_string(t) for t in texts) + "]")
                )


register_alias(
    "sdy-basic-propagate", "propagate", strategy="basic", op_priority="false", user_priority="false"
)
register_alias("sdy-aggressive-propagate", "propagate", op_priority="false", user_priority="false")
register_alias("sdy-op-priority-propagate", "propagate", user_priority="false")
register_alias("sdy-user-priority-propagate", "propagate")


@register_pass("propagation-pipeline")
@dataclass(frozen=True)
class PropagationPipeline(Pass):
    """Shardy's import steps then `propagate`: drop size-1 axes, split constants, apply
    constraints, propagate (and close every dim with `close=true`)."""

    strategy: str = "aggressive"
    close: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.apply_sharding_constraints import apply_constraints
        from shardc.passes.remove_size_one_axes import remove_size_one_axes
        from shardc.passes.split_constants import split_function

        remove_size_one_axes(module)
        normalize_manual(module)
        for func in module.functions.values():
            split_function(func)
        apply_constraints(module)
        Propagate(strategy=self.strategy).run(module, ctx)
        if self.close:
            from shardc.passes.close_shardings import CloseShardings

            CloseShardings().run(module, ctx)


# `sdy-propagation-pipeline` (jaxlib's import + propagation + export, printed as Shardy prints
# it) is its own pass: passes/sdy_propagation_pipeline.py.
