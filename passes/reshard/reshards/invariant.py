"""The invariant insert-reshards establishes and spmd relies on, as a checker:
`check_locally_computable(module)` lists every violation (see its docstring)."""

from __future__ import annotations

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping, axes_text
from shardc.ir.mesh import AxisRef
from shardc.ir.ops import attr
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.scalar_bodies import sort_dimension
from shardc.passes.analysis.collectives.axes import merge_set
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.propagation.factor_axes import UNSHARDABLE, shared_axes, uneven_in_merged_dims
from shardc.passes.propagation.layouts import replicated
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.registry import lowering_rule
from shardc.passes.propagation.rules.rule import FactorKind
from shardc.passes.reshard.reshards.op_kinds import (
    ANNOTATIONS,
    DATA_MOVEMENT,
    LOCALLY_SHARDABLE_SOURCES,
    is_global_collective,
)


def check_locally_computable(module: Module) -> list[str]:
    """Every violation of the invariant `insert-reshards` establishes (empty: it holds).

    For every function, every op other than `reshard` and the collectives:

    - no operand is unreduced, and no `sharding_constraint`/`sharding_group`/
      `propagation_barrier` is left;
    - an op with a factor rule: all its sharded tensors are on one mesh (a value without a
      mapping is replicated); projected onto the rule, every factor has the same axes on every
      tensor that has it; permutation and need-replication factors are unsharded (and a
      `sort`'s sort dimension); no axis serves two factors; no tensor has overflow axes; every
      result is unreduced on exactly the axes of the sharded reduction factors (and nothing
      else);
    - an op without a rule: operands and results fully replicated (`top_k`: its last dim
      unsharded, its other dims sharded alike on its operand and results);
    - `call`: operands laid out as the callee's arguments, results as the callee's results;
    - `manual_computation`: operands laid out as its in_shardings;
    - `return`: operands laid out as the function's declared result shardings.

    "Laid out as" compares dims and unreduced axes (`same_layout`), with no mapping meaning
    replicated.
    """
    problems: list[str] = []
    for func in module.functions.values():
        for op in func.body:
            where = f"@{func.name}: '{op.name}' op"
            if op.loc is not None and op.loc.line:
                where = f"{op.loc}: {where}"
            problems.extend(f"{where} {p}" for p in _op_problems(module, func, op))
    return problems


def _top_k_problems(op: Operation) -> list[str]:
    x = op.operand(0)
    last = x.type.rank - 1
    mesh = next((v.mapping.mesh for v in (x, *op.results) if v.mapping is not None), None)
    if mesh is None:
        return []
    layouts = [v.mapping or replicated(mesh, v.type.rank) for v in (x, *op.results)]
    if any(m.num_shards(last) > 1 for m in layouts):
        return ["has its last dim sharded"]
    if any(tuple(d.axes for d in m.dims[:last]) != tuple(d.axes for d in layouts[0].dims[:last])
           for m in layouts):
        return ["has its operand's and results' rows sharded differently"]
    return []


def _layout_matches(v: Value, want: NamedMapping | None) -> bool:
    have = v.mapping
    if have is None or want is None:
        other = have if want is None else want
        return other is None or other.is_fully_replicated
    return same_layout(have, want)


def _op_problems(module: Module, func: Function, op: Operation) -> list[str]:
    name = op.name
    if name in DATA_MOVEMENT or is_global_collective(name):
        return []
    if name in ANNOTATIONS:
        return ["is left in the program"]
    out = [
        f"operand {i} is unreduced on {{{axes_text(v.mapping.unreduced)}}}"
        for i, v in enumerate(op.operands)
        if v.mapping is not None and v.mapping.unreduced
    ]
    if name == "return":
        for i, (v, t) in enumerate(zip(op.operands, func.result_types, strict=False)):
            if not _layout_matches(v, getattr(t, "mapping", None)):
                out.append(f"operand {i} is {v.mapping}, the function returns {t}")
        return out
    if name in ("while", "case"):
        return out + _region_problems(module, op)
    if name == "call":
        callee = module.lookup_function(op.attr("callee").name)
        if callee is None:
            return [*out, "calls an undefined function"]
        for i, (v, a) in enumerate(zip(op.operands, callee.args, strict=False)):
            if not _layout_matches(v, a.mapping):
                out.append(f"operand {i} is {v.mapping}, @{callee.name} takes {a.mapping}")
        for i, (r, t) in enumerate(zip(op.results, callee.result_types, strict=False)):
            if not _layout_matches(r, getattr(t, "mapping", None)):
                out.append(f"result {i} is {r.mapping}, @{callee.name} returns {t}")
        return out
    if name == "optimization_barrier":  # the identity on each value
        for i, (v, r) in enumerate(zip(op.operands, op.results, strict=False)):
            if not _layout_matches(v, r.mapping):
                out.append(f"operand {i} is {v.mapping}, its result {r.mapping}")
        return out
    if name == "manual_computation":
        for i, (v, m) in enumerate(zip(op.operands, attr(op, "in_shardings"), strict=False)):
            if not _layout_matches(v, m):
                out.append(f"operand {i} is {v.mapping}, its in_sharding is {m}")
        return out
    rule = lowering_rule(op)
    values = [*op.operands, *op.results]
    if rule is None and name == "top_k":
        return out + _top_k_problems(op)
    if rule is None:
        if op.name in LOCALLY_SHARDABLE_SOURCES:
            return [
                f"result is unreduced ({v.mapping})"
                for v in values
                if v.mapping and v.mapping.unreduced
            ]
        for v in values:
            if v.mapping is not None and not v.mapping.is_fully_replicated:
                out.append(f"has no sharding rule but {v.label} is {v.mapping}")
        return out
    meshes = {v.mapping.mesh for v in values if v.mapping is not None}
    sharded = {v.mapping.mesh for v in values if v.mapping and not v.mapping.is_fully_replicated}
    if len(sharded) > 1:
        return [*out, "has sharded tensors on several meshes"]
    if not meshes:
        return out
    mesh = next(iter(sharded or meshes))
    mappings = [
        v.mapping
        if v.mapping is not None and v.mapping.mesh == mesh
        else replicated(mesh, v.type.rank)
        for v in values
    ]
    n = op.num_operands
    projection = ShardingProjection.build(mappings[:n], mappings[n:], rule, mesh)
    common: dict[int, tuple[AxisRef, ...]] = {}
    for t_index, (t, tm) in enumerate(zip(projection.tensors, rule.mappings)):
        per_factor = [t.factors[f].axes if f in t.factors else () for f in range(rule.num_factors)]
        for f in uneven_in_merged_dims(tm, per_factor, rule, mesh):
            out.append(f"tensor {t_index} shards factor {f} unevenly inside a merged dim")
        for f, fs in t.factors.items():
            if fs.overflow:
                out.append(f"tensor {t_index} has overflow axes {axes_text(fs.overflow)}")
            if rule.kind(f) in UNSHARDABLE and fs.axes:
                out.append(f"shards {rule.kind(f).value} factor {f} on {axes_text(fs.axes)}")
            if common.setdefault(f, fs.axes) != fs.axes:
                out.append(
                    f"factor {f} is {{{axes_text(common[f])}}} on one tensor and "
                    f"{{{axes_text(fs.axes)}}} on tensor {t_index}"
                )
    axes = [common.get(f, ()) for f in range(rule.num_factors)]
    if shared_axes(axes):
        out.append("uses one mesh axis for two factors")
    if name == "sort":
        d = sort_dimension(op)
        out.extend(f"sorts along dim {d}, sharded on {m}" for m in mappings if m.num_shards(d) > 1)
    reduction = merge_set(
        [a for f in rule.factors_of_kind(FactorKind.REDUCTION) for a in axes[f]], mesh
    )
    for r, m in zip(op.results, mappings[n:], strict=True):
        if tuple(m.unreduced) != tuple(reduction):
            out.append(
                f"{r.label} is unreduced on {{{axes_text(m.unreduced)}}}, but its sharded "
                f"reduction factors give {{{axes_text(reduction)}}}"
            )
    return out


def _region_problems(module: Module, op: Operation) -> list[str]:
    """`while`/`case`: operands laid out as every region function's arguments, results as the
    body's / every branch's results, the loop condition and the branch index replicated."""
    out = []
    for func, offset in region_signatures(module, op):
        for i, a in enumerate(func.args):
            v = op.operand(i + offset)
            if not _layout_matches(v, a.mapping):
                out.append(f"operand {i + offset} is {v.mapping}, @{func.name} takes {a.mapping}")
        is_cond = op.name == "while" and func.name == op.attr("cond").name
        if is_cond:
            m = getattr(func.result_types[0], "mapping", None)
            if m is not None and not m.is_fully_replicated:
                out.append(f"@{func.name} returns {m}; the loop condition must be replicated")
            continue
        for i, (r, t) in enumerate(zip(op.results, func.result_types, strict=False)):
            if not _layout_matches(r, getattr(t, "mapping", None)):
                out.append(f"result {i} is {r.mapping}, @{func.name} returns {t}")
    if op.name == "case" and not _layout_matches(op.operand(0), None):
        out.append(f"branch index is {op.operand(0).mapping}; it must be replicated")
    return out
