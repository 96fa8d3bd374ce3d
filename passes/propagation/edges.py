"""The data-flow edges the driver visits besides ops: an edge of a data-flow op (data_flow.py),
a manual_computation edge (manual_edges.py), and the identity edges between the entry
function's returned values and its declared results. Each is an identity rule,
propagated through the driver (a `Propagator`), which puts the neighbours of what changed back on
its worklist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.data_flow import RegionEdge
from shardc.passes.propagation.direction import DirectionFn, PropagationDirection
from shardc.passes.propagation.factor_propagation import propagate_shardings
from shardc.passes.propagation.manual_edges import ManualEdge
from shardc.passes.propagation.state import OpInfo, PropagationState, identity_rule, mapping_of

BOTH = PropagationDirection.BOTH
NONE = PropagationDirection.NONE


class Propagator(Protocol):
    """What an edge needs of the driver (driver.py's `Driver`)."""

    state: PropagationState
    direction: DirectionFn

    def propagate(
        self,
        op: Operation,
        operands: Sequence[Value],
        results: Sequence[Value],
        info: OpInfo,
        directions: Sequence[PropagationDirection],
    ) -> bool:
        """Propagate through `op`'s rule (`info`) between these values; True if any changed."""
        ...

    def update(self, v: Value, mapping: NamedMapping, via: Operation | None) -> None:
        """Give `v` (and the values linked to it) `mapping`, and revisit their neighbours."""
        ...


def visit_region_edge(p: Propagator, edge: RegionEdge) -> bool:
    """Shardy's `sdy.data_flow_edge`: an identity rule from the sources to the targets."""
    known = edge.visit
    if known is None:
        sources = edge.sources(p.state.module)
        target = edge.target
        rule = identity_rule(target.type.shape, len(sources))
        size = target.type.num_elements
        info = p.state.interned_info(rule, False, (size,) * (len(sources) + 1))
        known = edge.visit = (sources, [target], rule, info)
    sources, targets, rule, info = known
    return p.propagate(edge.op, sources, targets, info, p.direction(None, rule))


def visit_manual_edge(p: Propagator, edge: ManualEdge) -> bool:
    """An identity rule between the edge's source and its target seen from the source's
    side, over the target's shape (Shardy's PropagateDataFlowEdgeOp)."""
    if p.state.audit is not None:
        p.state.audit.escaped("a manual_computation edge")
    ends = edge.endpoints()
    if ends is None:
        return False
    source, target = ends
    view, src = edge.target_view(target), mapping_of(source)
    if src is None and view is None:
        return False
    rule = identity_rule(target.type.shape)
    directions = p.direction(None, rule)
    if all(d is NONE for d in directions):
        return False
    size = target.type.num_elements
    try:
        new_ops, new_res = propagate_shardings(
            [src],
            [view],
            rule,
            direction=directions,
            strategy=p.state.strategy,
            tensor_sizes=(size, size),
        )
    except ShardcError as e:
        raise e.with_location(edge.op.loc) from None
    changed = False
    if new_res[0] is not None and new_res[0] != view:
        p.update(target, edge.target_value(new_res[0], target), edge.op)
        changed = True
    if new_ops[0] is not None and new_ops[0] != src:
        p.update(source, new_ops[0], edge.op)
        changed = True
    debug = p.state.debug
    if changed and debug is not None:
        debug.record_identity(debug.item_for(target), source, target, (src, view), rule,
                              directions, p.state.strategy)
    return changed


def sync_func_results(p: Propagator, only: set[int] | None = None) -> None:
    """Identity edges between each returned value of an entry function (`state.entries`) and
    its declared result. A region or named-computation body's results are not values of their
    own: they take the shardings of the edge targets they feed (body result k: the carried value
    k, or result k of the named computation; branch result k: result k of the case); a manual
    body's results are its op's out_shardings (edges). Other functions' results are left alone,
    as Shardy does. With `only`, just the entry results whose returned value's id is in it."""
    regions = p.state.regions
    manual = p.state.manual
    outcomes = p.state.result_outcomes
    for func in p.state.module.functions.values():
        ret = func.return_op
        if ret is None or (manual is not None and manual.is_body(func)):
            continue
        if func.name in regions.functions:
            for edge in regions.returns.get(func.name, ()):
                mapping = mapping_of(edge.target)
                t = func.result_types[edge.index]
                if mapping is not None:
                    func.result_types[edge.index] = DistributedTensorType(
                        t.shape, t.dtype, mapping
                    )
            continue
        if func.name not in p.state.entries:
            continue
        for i, v in enumerate(ret.operands):
            if only is not None and id(v) not in only:
                continue
            declared = func.result_types[i]
            res_mapping = (
                declared.mapping if isinstance(declared, DistributedTensorType) else None
            )
            shape = v.type.shape
            rule = identity_rule(shape)
            old = mapping_of(v)
            # (a pure function of these: each stage syncs every result twice, and a model's
            # results repeat a few shapes and shardings)
            key = (shape, old, res_mapping)
            outcome = outcomes.get(key)
            if outcome is None:
                outcome = outcomes[key] = propagate_shardings(
                    [old],
                    [res_mapping],
                    rule,
                    direction=BOTH,
                    strategy=p.state.strategy,
                    tensor_sizes=(v.type.num_elements,) * 2,
                )
            new_ops, new_res = outcome
            audit = p.state.audit
            if audit is not None:
                audit.visit(("result", func.name, i, old, res_mapping), ret, rule,
                            (BOTH,) * rule.num_factors, ([old], [res_mapping]),
                            ([new_ops[0]], [new_res[0]]))
            changed = False
            if new_ops[0] is not None and new_ops[0] != old:
                p.update(v, new_ops[0], ret)
                changed = True
            if new_res[0] is not None and new_res[0] != res_mapping:
                func.result_types[i] = DistributedTensorType(
                    declared.shape, declared.dtype, new_res[0]
                )
                changed = True
                if p.state.origins is not None:
                    p.state.origins.record_result(func, i, res_mapping, new_res[0], v)
            debug = p.state.debug
            if changed and debug is not None:
                # Shardy keeps every result's steps on result 0 (its TODO b/391840483)
                debug.record_identity(func, v, v, (old, res_mapping), rule, BOTH,
                                      p.state.strategy)
