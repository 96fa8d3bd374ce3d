"""Writing what a `ShardyDebugInfo` recorded as Shardy's attributes (Shardy's
`saveShardingOriginsOnModule` and `saveEdgesOnModule`):

- `sdy.sharding_origins`: on a function argument or result (a returned value's: at its first
  return), a `sharding_constraint` or `data_flow_edge` (one dictionary), any other op (an array,
  one dictionary per result; a pass replaces only the results it recorded);
- `sdy.propagation_edges`: on each op (replacing an earlier pass's), and on result 0 of the entry
  function for all its results (as Shardy does);
- a data-flow op none of whose edge owners has a `data_flow_edge` op (shardc's own pipelines
  sink them before propagating) gets what `sink-data-flow-edges` would have given it:
  `sdy.{block_arg,result}_{sharding_origins,propagation_edges}`, one entry per owner that has
  one.

An origin that names the annotation its value is itself reads `self`: an argument's `input: i`,
a result's `output: j`, a constraint's own `constraint_N`, a manual computation's edges' own
`mc_M_input: i` / `mc_M_output: j`.
"""

from __future__ import annotations

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.data_flow import EDGE, explicit_edge
from shardc.ir.ops.manual import body_of
from shardc.passes.propagation.shardy_debug import ShardyDebugInfo
from shardc.passes.propagation.shardy_debug_text import (
    EDGES,
    ORIGINS,
    array_elements,
    array_text,
    edges_text,
    origins_text,
)

DATA_FLOW_OPS = ("while", "case", "optimization_barrier", "named_computation",
                 "manual_computation")
BLOCK_ARG, RESULT = "block_arg", "result"


def edge_owners(op: Operation) -> dict[str, list[Value]]:
    """A data-flow op's edge owners: body arguments (named and manual computations) and
    results."""
    args: list[Value] = []
    if op.name in ("named_computation", "manual_computation"):
        body = body_of(op)
        args = list(body.args) if body is not None else []
    return {BLOCK_ARG: args, RESULT: list(op.results)}


def _sunk_ops(module: Module) -> list[tuple[Operation, dict[str, list[Value]]]]:
    """The data-flow ops whose owners have no `data_flow_edge` op, with their owners."""
    out = []
    for op in module.walk():
        if op.name in DATA_FLOW_OPS:
            owners = edge_owners(op)
            if not any(explicit_edge(v) is not None for vs in owners.values() for v in vs):
                out.append((op, owners))
    return out


def save(info: ShardyDebugInfo) -> None:
    sunk = _sunk_ops(info.module)
    if info.record_origins:
        _save_origins(info, sunk)
    if info.record_edges:
        _save_edges(info, sunk)


def _save_origins(info: ShardyDebugInfo, sunk: list) -> None:
    tops = {f.name for f in info.top_functions()}
    owned = {id(v) for _, owners in sunk for vs in owners.values() for v in vs}
    arrays: dict[int, tuple[Operation, list[str]]] = {}
    at_owner: dict[int, str] = {}
    for v, axes in info.origins():
        names = {axis: origin.name for axis, origin in axes.items()}
        owner = v.owner
        func = owner if isinstance(owner, Function) else owner.function
        if func is not None and func.name in tops and func.return_op is not None:
            for use in v.uses:
                if use.op is func.return_op:
                    func.res_attrs[use.index][ORIGINS] = OpaqueAttr(
                        origins_text(names, f"output: {use.index}"))
                    break
        if id(v) in owned:
            at_owner[id(v)] = origins_text(names, info.self_names.get(id(v)))
        elif isinstance(owner, Function):
            own = f"input: {v.index}" if owner.name in tops else None
            owner.arg_attrs[v.index][ORIGINS] = OpaqueAttr(origins_text(names, own))
        elif owner.name in ("sharding_constraint", EDGE):
            owner.attributes[ORIGINS] = OpaqueAttr(
                origins_text(names, info.self_names.get(id(owner))))
        else:
            entry = arrays.get(id(owner))
            if entry is None:
                elements = array_elements(owner.attributes.get(ORIGINS), len(owner.results))
                entry = arrays[id(owner)] = (owner, elements)
            entry[1][v.index] = origins_text(names)
    for op, elements in arrays.values():
        op.attributes[ORIGINS] = array_text(elements)
    for op, owners in sunk:
        for kind, values in owners.items():
            texts = [at_owner[id(v)] for v in values if id(v) in at_owner]
            op.attributes[f"sdy.{kind}_sharding_origins"] = array_text(texts)


def _save_edges(info: ShardyDebugInfo, sunk: list) -> None:
    at_owner: dict[int, str] = {}
    for item, edges in info.edges():
        if not edges:
            continue
        text = edges_text((e.axis, e.source, e.target, e.step) for e in edges)
        if isinstance(item, Function):
            if item.res_attrs:
                item.res_attrs[0][EDGES] = OpaqueAttr(text)
        elif isinstance(item, Operation):
            item.attributes[EDGES] = OpaqueAttr(text)
        else:  # an edge owner without a data_flow_edge op
            at_owner[id(item)] = text
    for op, owners in sunk:
        for kind, values in owners.items():
            texts = [at_owner[id(v)] for v in values if id(v) in at_owner]
            op.attributes[f"sdy.{kind}_propagation_edges"] = array_text(texts)
