"""Does an op compute locally? After insert-reshards every op other than the collectives must:
`check_local` checks it against the op's factor rule (for the global shapes: `global_rule`)."""

from __future__ import annotations

import math

from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.axes import merge_set, product
from shardc.passes.analysis.collectives.shards import chunk
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.memo import MISSING, RuleMemo
from shardc.passes.propagation.rules.registry import lowering_rule
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering


def global_rule(low: FunctionLowering, op: Operation) -> OpShardingRule | None:
    """The op's rule for its global shapes (operands may already be rewritten to local values):
    asked of a detached probe whose operands carry the original global types."""
    originals = [low.original(v) for v in op.operands]
    if all(o is v for o, v in zip(originals, op.operands)):
        return lowering_rule(op)
    stubs = [Value(o.type, op, i) for i, o in enumerate(originals)]  # no use-list entries
    probe = Operation(op.name, [], [r.type for r in op.results], dict(op.attributes), op.loc)
    probe._operands = stubs  # read-only probe: never linked into a block, but it sees the
    probe.parent = op.parent  # module (a scatter's body function decides its rule)
    return lowering_rule(probe)


# What `check_local` finds for a rule and layouts (pure in them; the local shapes it also reads
# are compared afresh each time).
_checks = RuleMemo()
# A multi-factor dim to compare with the tensor's local shape: (tensor index, dim, the number of
# its factors, the product of the factors' per-device parts, whether a part before the last
# sharded factor is not whole already).
_Block = tuple[int, int, int, int, bool]


def check_local(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Every pass-through factor sharded alike on its tensors, need_replication and permutation
    factors unsharded, sharded reduction factors exactly the result's unreduced axes, no
    unreduced operand, and multi-factor dims whose local block is contiguous."""

    def fail(message: str) -> PassError:
        return PassError(
            f"'{op.name}' op does not compute locally: {message}; run insert-reshards before spmd",
            op.loc,
        )

    operands = tuple([low.mapping(v) for v in op.operands])
    results = tuple([low.mapping(v) for v in op.results])
    mesh = low.mesh
    key = (operands, results, mesh)
    found = _checks.get(rule, key)
    if found is MISSING:
        found = _check_factors(operands, results, rule, mesh)
        _checks.put(rule, key, found)
    problem, blocks = found
    if problem is not None:
        raise fail(problem)
    if not blocks:
        return
    values = (*op.operands, *op.results)
    for i, d, n, product_of_parts, strided in blocks:
        if strided or product_of_parts != low.local_shape(values[i])[d]:
            raise fail(f"the shards of dim {d} of a {n}-factor dim are not blocks")


def _check_factors(
    operands: tuple[NamedMapping | None, ...],
    results: tuple[NamedMapping | None, ...],
    rule: OpShardingRule,
    mesh: DeviceMesh | None,
) -> tuple[str | None, tuple[_Block, ...]]:
    """`check_local` on the layouts alone: the first problem found (None: none), and the
    multi-factor dims left to compare with the local shapes."""
    for i, m in enumerate(operands):
        if m is not None and m.unreduced:
            return f"operand {i} is unreduced on {{{', '.join(map(str, m.unreduced))}}}", ()
    proj = ShardingProjection.build(operands, results, rule, mesh, closed_if_missing=True)
    tensors = proj.tensors
    for t in tensors:
        for f, fs in t.factors.items():
            if fs.overflow:
                return f"factor {f} has axes that do not divide it", ()
    reduced: list[AxisRef] = []
    for f in range(rule.num_factors):
        seen = [t.factors[f].axes for t in tensors if f in t.factors]
        kind = rule.kind(f)
        if kind in (FactorKind.NEED_REPLICATION, FactorKind.PERMUTATION) and any(seen):
            return f"a {kind.value} factor is sharded", ()
        if any(axes != seen[0] for axes in seen):
            shown = " vs ".join("{" + ", ".join(map(str, a)) + "}" for a in seen)
            return f"a factor is sharded differently on its tensors ({shown})", ()
        if kind is FactorKind.REDUCTION:
            reduced.extend(seen[0] if seen else ())
    for i, m in enumerate(results):
        got = m.unreduced if m is not None else ()
        want = merge_set(reduced, mesh) if mesh is not None and reduced else ()
        if tuple(got) != tuple(want):
            return (
                f"result {i} must be unreduced on exactly {{{', '.join(map(str, want))}}} "
                f"(the axes of its sharded reduction factors), not {{{', '.join(map(str, got))}}}"
            ), ()
    if mesh is None:
        return None, ()
    sizes = rule.factor_sizes
    blocks: list[_Block] = []
    for i, (tm, t) in enumerate(zip(rule.mappings, tensors)):
        for d, factors in enumerate(tm):
            if len(factors) < 2:
                continue
            counts = [product(t.factors[f].axes, mesh) for f in factors]
            if all(k == 1 for k in counts):
                continue  # whole dim (its factors need not multiply to its size: convolution)
            parts = [chunk(sizes[f], k) for f, k in zip(factors, counts)]
            last = max((i for i, k in enumerate(counts) if k > 1), default=-1)
            strided = any(p != 1 for p in parts[: max(last, 0)])
            blocks.append((i, d, len(factors), math.prod(parts), strided))
    return None, tuple(blocks)


def no_sharded_reduction(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    for m in (low.mapping(r) for r in op.results):
        if m is not None and m.unreduced:
            raise PassError(
                f"'{op.name}' op with a sharded reduction factor (unreduced result) is not "
                "supported by spmd yet; replicate its indexed dims",
                op.loc,
            )
