"""`propagate`: decide every value's sharding with Shardy's semantics.

    shardc opt model.mlir -p propagate                      # user + op priorities, aggressive
    shardc opt model.mlir -p 'propagate{strategy=basic}'
    shardc opt model.mlir -p propagate --explain            # record each axis's origin

Each call site is propagated on its own, as Shardy's pipeline does it: the calls are flattened
(every call site gets its own copy of its callee), turned into named computations, propagated,
and turned back into calls of functions, one per callee and sharding (`@relu`, `@relu_0`, ...;
passes/ingest/call_graph.py and the passes named below). Shardy's own propagation passes
(`sdy-basic-propagate`, ...: sdy_propagate.py) leave calls alone, as jaxlib's do.

`propagation-pipeline` runs Shardy's import steps first (drop size-1 axes, split constants,
apply sharding constraints) and is what `shardc compile` uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shardc.ir.attributes import OpaqueAttr, format_string
from shardc.ir.collector import long_lived
from shardc.ir.core import Module, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.manual import normalize as normalize_manual
from shardc.passes.manager import Pass, PassContext, register_pass, run_passes
from shardc.passes.propagation.origins import OriginTracker
from shardc.passes.propagation.priorities import run_op_priority, run_user_priorities
from shardc.passes.propagation.rules.registry import lowering_rule
from shardc.passes.propagation.state import PropagationState, build_state, rule_for
from shardc.passes.propagation.strategies import strategy_named

if TYPE_CHECKING:  # (Shardy's debugging options' recorder: imported by the passes that ask)
    from shardc.passes.propagation.shardy_debug import ShardyDebugInfo

RULE_ATTR = "sdy.sharding_rule"


def annotation_label(v: Value) -> str:
    op = v.defining_op
    name = v.name_hint or "?"
    if op is not None and op.name == "sharding_constraint":
        return f"constraint %{name}"
    return f"%{name}"


@dataclass(frozen=True)
class PropagationOptions:
    """What one propagation does (the options of `propagate` and of Shardy's passes)."""

    strategy: str = "aggressive"
    op_priority: bool = True
    user_priority: bool = True
    conservative: bool = False
    keep_sharding_rules: bool | None = None  # None: leave `sdy.sharding_rule`s as they are


def run_propagation(
    module: Module,
    ctx: PassContext,
    options: PropagationOptions,
    debug: ShardyDebugInfo | None = None,
) -> None:
    """One propagation over `module` (calls are opaque; see `propagate` for call sites), its
    steps recorded in `debug` (Shardy's debugging options) if given."""
    try:
        strategy = strategy_named(options.strategy)
    except (KeyError, ValueError):
        raise PassError(
            f"unknown propagation strategy '{options.strategy}' (expected aggressive or basic)"
        ) from None
    # Propagation builds many small long-lived objects (types, mappings, the origins' records)
    # that collections would only scan (ir/collector.py).
    with long_lived():
        _run(module, ctx, strategy, options, debug)


def _run(
    module: Module,
    ctx: PassContext,
    strategy,
    options: PropagationOptions,
    debug: ShardyDebugInfo | None,
) -> None:
    normalize_manual(module)  # manual_computation values carry its shardings (annotations)
    origins = OriginTracker()
    origins.seed(module, annotation_label, ctx.data.get("auto_shard_axes", {}))
    state = build_state(
        module, strategy, conservative=options.conservative, origins=origins, debug=debug
    )
    # compiler/explain/whatif/ asks whether this run made choices (audit.py).
    state.audit = ctx.data.get("propagation_audit")
    try:
        _propagate(module, state, ctx, options)
    finally:
        state.release()


def _propagate(
    module: Module, state: PropagationState, ctx: PassContext, options: PropagationOptions
) -> None:
    origins = state.origins
    for gid, op in state.group_conflicts:
        if state.audit is not None:
            state.audit.escaped("a sharding group with two shardings")
        ctx.warn(
            f"the initial shardings of sharding group {gid} do not match: each member gets an "
            "open sharding constraint (as Shardy does; e.g. shard_alike of values with "
            "different constraints)",
            op.loc,
        )
    if options.user_priority:
        rounds = run_user_priorities(state, op_priority=options.op_priority)
    else:
        run_op_priority(state, options.op_priority, "")
        rounds = [0]
    ctx.data["origins"] = origins
    ctx.data["propagation"] = {"op_visits": state.visits, "priority_rounds": rounds}
    for name, op in sorted(state.no_rule.items()):
        if op.num_operands == 0:
            continue  # constants and iotas: nothing flows through them
        if lowering_rule(op) is not None:
            continue  # no rule as in Shardy (chlo.square), but computed where it stands
        computes = (
            "its operand as it is sharded (each row, a sharded last dim as a tree)"
            if name == "top_k"
            else "replicated operands"
        )
        message = (
            f"'{name}' has no sharding rule: propagation does not pass through it and it "
            f"computes on {computes}"
        )
        if ctx.strict:
            raise PassError(message + " (--strict)", op.loc)
        ctx.warn(message, op.loc)
        ctx.data.setdefault("fallbacks", []).append(name)
    if options.keep_sharding_rules is not None:
        _sharding_rules(module, options.keep_sharding_rules, state.erased)
    if ctx.explain:
        attach_origins(module, origins)


def _sharding_rules(module: Module, keep: bool, erased: set[int]) -> None:
    """As Shardy's propagation leaves them: with `keep`, every op it visited carries its rule;
    otherwise only custom rules (`..., custom>`) stay."""
    for op in module.walk():
        if keep:
            if id(op) not in erased and RULE_ATTR not in op.attributes:
                rule = rule_for(op)
                if rule is not None:
                    op.attributes[RULE_ATTR] = OpaqueAttr(rule.text())
            continue
        given = op.attributes.get(RULE_ATTR)
        if given is not None:
            text = given.text if isinstance(given, OpaqueAttr) else str(given)
            if not text.rstrip().endswith(", custom>"):
                del op.attributes[RULE_ATTR]


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


def import_call_sites(module: Module) -> bool:
    """Shardy's call-site import: function result shardings onto calls without any, one copy
    of a callee per call site, every call a named computation, functions in pre order. False
    if there is no call (nothing is done then)."""
    if not any(op.name == "call" for op in module.walk()):
        return False
    from shardc.passes.ingest.flatten_call_graph import flatten_call_graph
    from shardc.passes.ingest.import_func_calls import import_func_calls
    from shardc.passes.ingest.propagate_sharding_from_func_to_call import (
        propagate_sharding_from_func_to_call,
    )

    propagate_sharding_from_func_to_call(module)
    flatten_call_graph(module)
    import_func_calls(module)
    return True


# Shardy's call-graph export, run by name: these passes belong to a later stage (reshard/).
EXPORT_CALL_SITES = (
    "export-named-computations,propagate-to-func-results,unflatten-call-graph,symbol-dce"
)


def export_call_sites(module: Module) -> None:
    """Shardy's call-graph export: named computations back to calls of functions, function
    results sharded as what they return, one function per callee and sharding."""
    run_passes(EXPORT_CALL_SITES, module)


@register_pass("propagate")
@dataclass(frozen=True)
class Propagate(Pass):
    """Decide every value's sharding (user priorities, op-priority stages, aggressive/basic),
    each call site on its own."""

    strategy: str = "aggressive"
    op_priority: bool = True
    user_priority: bool = True
    conservative: bool = False

    def options(self) -> PropagationOptions:
        return PropagationOptions(
            self.strategy, self.op_priority, self.user_priority, self.conservative
        )

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.ingest.pre_order_funcs import pre_order_funcs

        calls = import_call_sites(module)
        if calls:
            pre_order_funcs(module)
        run_propagation(module, ctx, self.options())
        if calls:
            export_call_sites(module)


@register_pass("propagation-pipeline")
@dataclass(frozen=True)
class PropagationPipeline(Pass):
    """Shardy's import steps then `propagate`: drop size-1 axes, split constants, apply
    constraints, propagate (and close every dim with `close=true`)."""

    strategy: str = "aggressive"
    close: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.ingest.pre_order_funcs import pre_order_funcs
        from shardc.passes.ingest.remove_size_one_axes import remove_size_one_axes
        from shardc.passes.ingest.sink_data_flow_edges import sink_data_flow_edges
        from shardc.passes.ingest.split_constants import split_module
        from shardc.passes.propagation.apply_sharding_constraints import apply_constraints

        sink_data_flow_edges(module)  # shardc's driver visits every edge without them
        remove_size_one_axes(module)
        normalize_manual(module)
        if split_module(module):
            run_passes("symbol-dce", module, ctx)  # the copied constant calls' originals
        calls = import_call_sites(module)
        apply_constraints(module)
        pre_order_funcs(module)
        run_propagation(module, ctx, PropagationOptions(self.strategy))
        if calls:
            export_call_sites(module)
        if self.close:
            run_passes("close-shardings", module, ctx)


# `sdy-propagation-pipeline` (jaxlib's import + propagation + export, printed as Shardy prints
# it) is its own pass: passes/propagation/sdy_propagation_pipeline.py; Shardy's propagation
# passes are passes/propagation/sdy_propagate.py.
