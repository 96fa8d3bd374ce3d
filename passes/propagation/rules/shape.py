"""Rules for ops that create or rearrange data: broadcast_in_dim, reshape, transpose,
concatenate, slice, pad, reverse, sort (Shardy's op_sharding_rule_registry.cc, same factor order).

    broadcast_in_dim 1x32 -> 8x32 {dims=[0, 1]}   ([i, k])->([j, k]) {i=1, j=8, k=32}
    reshape 8x4 -> 32                             ([i, j])->([ij]) {i=8, j=4}
    transpose 4x8x16 -> 16x8x4 {perm=[2, 1, 0]}   ([k, j, i])->([i, j, k]) {i=16, j=8, k=4}
    slice 16x48 -> 8x24                           ([i, j])->([i, j]) {i=16, j=48} permutation={i, j}
    sort 16x32 {dimension=1}          ([i, j])->([i, j]) {i=16, j=32} need_replication={j}
"""

from __future__ import annotations

import math

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule


def broadcast_in_dim(q: RuleQuery) -> OpShardingRule:
    """One factor per result dim, in result order. An operand dim of size 1 expanded to a larger
    result dim gets its own size-1 factor first (it cannot carry the result's sharding)."""
    (in_shape,), (out_shape,) = q.operands, q.results
    out_to_in = [NULL] * len(out_shape)
    for in_dim, out_dim in enumerate(q.attr("broadcast_dimensions")):
        out_to_in[out_dim] = in_dim
    b = RuleBuilder(q.operands, q.results)
    for out_dim, out_size in enumerate(out_shape):
        in_dim = out_to_in[out_dim]
        if in_dim != NULL and in_shape[in_dim] == 1 and out_size != 1:
            b.add_factor((in_dim,), (NULL,), 1)  # expanded in place
            in_dim = NULL
        b.add_factor((in_dim,), (out_dim,), out_size)
    return b.build()


def _diverged_factor(next_factor: int, gcd: int, smaller: int, larger: int) -> int:
    """The next factor of the side that is behind once in/out factors diverged."""
    if larger % smaller == 0 and next_factor % (larger // smaller) == 0:
        return larger // smaller  # converges the in and out factors again
    if next_factor > gcd:
        return next_factor // gcd  # keeps the gcd available for the next step
    return next_factor


def reshape(q: RuleQuery) -> OpShardingRule | None:
    """Shardy's split/merge factorisation: walk both shapes major to minor, adding the gcd of
    the next in/out sizes as a common factor while the accumulated products agree, and separate
    factors where they diverge (`6x4 -> 4x6` gives `([ij, ln])->([ik, mn])`). Size-1 dims get
    their own size-1 factor. A tensor with no elements has no rule."""
    (in_shape,), (out_shape,) = q.operands, q.results
    if math.prod(in_shape) == 0:
        return None
    b = RuleBuilder(q.operands, q.results)
    in_rank, out_rank = len(in_shape), len(out_shape)
    in_dim = out_dim = 0
    dims_in = dims_out = 1  # product of the dim sizes entered so far
    factors_in = factors_out = 1  # product of the factors added so far
    while in_dim < in_rank or out_dim < out_rank:
        if in_dim < in_rank and in_shape[in_dim] == 1:
            b.add_factor((in_dim,), (NULL,), 1)
            in_dim += 1
            continue
        if out_dim < out_rank and out_shape[out_dim] == 1:
            b.add_factor((NULL,), (out_dim,), 1)
            out_dim += 1
            continue
        if in_dim < in_rank and dims_in == factors_in:
            dims_in *= in_shape[in_dim]
        if out_dim < out_rank and dims_out == factors_out:
            dims_out *= out_shape[out_dim]
        next_in = dims_in // factors_in
        next_out = dims_out // factors_out
        gcd = math.gcd(next_in, next_out)
        if factors_in == factors_out:
            if gcd > 1:
                b.add_factor((in_dim,), (out_dim,), gcd)
                factors_in *= gcd
                factors_out *= gcd
            else:
                b.add_factor((in_dim,), (NULL,), next_in)
                factors_in *= next_in
                b.add_factor((NULL,), (out_dim,), next_out)
                factors_out *= next_out
        elif factors_in < factors_out:
            next_in = _diverged_factor(next_in, gcd, factors_in, factors_out)
            b.add_factor((in_dim,), (NULL,), next_in)
            factors_in *= next_in
        else:
            next_out = _diverged_factor(next_out, gcd, factors_out, factors_in)
            b.add_factor((NULL,), (out_dim,), next_out)
            factors_out *= next_out
        if in_dim < in_rank and dims_in == factors_in:
            in_dim += 1
        if out_dim < out_rank and dims_out == factors_out:
            out_dim += 1
    return b.build()


def transpose(q: RuleQuery) -> OpShardingRule:
    """One factor per result dim, in result order."""
    (in_shape,) = q.operands
    b = RuleBuilder(q.operands, q.results)
    for out_dim, in_dim in enumerate(q.attr("permutation")):
        b.add_factor((in_dim,), (out_dim,), in_shape[in_dim])
    return b.build()


def concatenate(q: RuleQuery) -> OpShardingRule:
    """Pointwise over the result; the concat dim is a permutation factor when the operands are
    all slices, or all the same value (possibly sliced), and need_replication otherwise. Under
    conservative propagation the concat dim gets no common factor."""
    dim = q.attr("dimension")
    conservative = q.attr("conservative")
    concat_kind = (
        FactorKind.PERMUTATION if q.attr("operands_are_slices") else FactorKind.NEED_REPLICATION
    )
    return (
        RuleBuilder(q.operands, q.results)
        .add_pointwise_if(
            q.results[0],
            lambda d: not conservative or d != dim,
            lambda d: concat_kind if d == dim else FactorKind.PASS_THROUGH,
        )
        .build()
    )


def slice_or_pad(q: RuleQuery) -> OpShardingRule:
    """Pointwise sized like the operand; dims whose size changes are permutation factors
    (blocked under conservative propagation). A pad value maps to `[]`."""
    return (
        RuleBuilder(q.operands, q.results)
        .add_pointwise_with_kind_for_mismatch(
            q.operands[0], q.results[0], FactorKind.PERMUTATION, q.attr("conservative")
        )
        .build()
    )


def reverse(q: RuleQuery) -> OpShardingRule:
    """Pointwise; reversed dims are permutation factors."""
    dims = q.attr("dimensions")
    return (
        RuleBuilder(q.operands, q.results)
        .add_pointwise(
            q.results[0],
            lambda d: FactorKind.PERMUTATION if d in dims else FactorKind.PASS_THROUGH,
        )
        .build()
    )


def sort(q: RuleQuery) -> OpShardingRule:
    """Every dim is pointwise on all operands and results; the sort dimension needs
    replication, and blocks propagation when every other dim has size 1."""
    shape = q.operands[0]
    d = q.attr("dimension") % len(shape)
    blocked = all(n == 1 for i, n in enumerate(shape) if i != d)
    b = RuleBuilder(q.operands, q.results)
    for dim, size in enumerate(shape):
        if dim == d:
            b.add_factor_all(dim, size, FactorKind.NEED_REPLICATION, blocked)
        else:
            b.add_factor_all(dim, size)
    return b.build()
