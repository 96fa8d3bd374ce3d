"""Rules for linear algebra, FFT, batch norm, bitcasts and random bits (Shardy's
op_sharding_rule_registry.cc, same factor order).

dot 8x32 . 32x16          ([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}
cholesky 2x8x8            ([i, j, k])->([i, j, k]) {i=2, j=8, k=8} need_replication={j, k}
fft FFT [32, 64] 8x32x64  ([i, j, k])->([i, j, k]) {i=8, j=32, k=64} need_replication={j, k}
"""

from __future__ import annotations

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

NEED = FactorKind.NEED_REPLICATION


def dot(q: RuleQuery) -> OpShardingRule:
    """Non-contracting dims of a matrix lhs and rhs, then the contracting dim (reduction)."""
    lhs, rhs = q.operands
    b = RuleBuilder(q.operands, q.results)
    lhs_matrix, rhs_matrix = len(lhs) == 2, len(rhs) == 2
    if lhs_matrix:
        b.add_factor((0, NULL), (0,), lhs[0])
    if rhs_matrix:
        b.add_factor((NULL, 1), (1 if lhs_matrix else 0,), rhs[1])
    b.add_factor((1 if lhs_matrix else 0, 0), (NULL,), rhs[0], FactorKind.REDUCTION)
    return b.build()


def cholesky(q: RuleQuery) -> OpShardingRule:
    """Batch dims pass through; the two matrix dims need replication."""
    (shape,) = q.operands
    batch = len(shape) - 2
    b = RuleBuilder(q.operands, q.results)
    return b.add_pointwise(shape, lambda d: FactorKind.PASS_THROUGH if d < batch else NEED).build()


def triangular_solve(q: RuleQuery) -> OpShardingRule:
    """Batch dims pass through; `a`'s two dims and `b`'s solved dim all need replication."""
    a, bshape = q.operands
    d1, d2 = len(a) - 2, len(a) - 1
    transposed = q.attr("transpose_a").word in ("TRANSPOSE", "ADJOINT")
    b = RuleBuilder(q.operands, q.results).add_pointwise(a[:-2])
    if q.attr("left_side"):  # op(a) @ result = b
        non_contracting, contracting = (d2, d1) if transposed else (d1, d2)
        b.add_factor((non_contracting, d1), (NULL,), a[non_contracting], NEED)
        b.add_factor((NULL, d2), (d2,), bshape[d2], NEED)
        b.add_factor((contracting, NULL), (d1,), a[contracting], NEED)
    else:  # result @ op(a) = b
        non_contracting, contracting = (d1, d2) if transposed else (d2, d1)
        b.add_factor((NULL, d1), (d1,), bshape[d1], NEED)
        b.add_factor((non_contracting, d2), (NULL,), a[non_contracting], NEED)
        b.add_factor((contracting, NULL), (d2,), a[contracting], NEED)
    return b.build()


def fft(q: RuleQuery) -> OpShardingRule:
    """Batch dims pass through; transformed dims need replication, the last one also blocks
    when the transform changes its size (RFFT, IRFFT)."""
    (x,), (out,) = q.operands, q.results
    first = len(x) - len(q.attr("fft_length"))
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(x):
        if d < first:
            b.add_factor_all(d, size)
        elif d < len(x) - 1:
            b.add_factor_all(d, size, NEED)
        else:
            b.add_factor_all(d, size, NEED, x[-1] != out[-1])
    return b.build()


def batch_norm_inference(q: RuleQuery) -> OpShardingRule:
    """Every dim of `x` passes through; the feature dim is also the one dim of each vector."""
    x = q.operands[0]
    feature = q.attr("feature_index")
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(x):
        b.add_factor((d,) + (0 if d == feature else NULL,) * 4, (d,), size)
    return b.build()


def bitcast_convert(q: RuleQuery) -> OpShardingRule:
    """Pointwise on the common dims; the extra trailing dim of the narrower type (the bytes of
    one wide element) needs replication."""
    (src,), (dst,) = q.operands, q.results
    b = RuleBuilder(q.operands, q.results).add_pointwise(src if len(src) < len(dst) else dst)
    if len(src) < len(dst):
        b.add_factor((NULL,), (len(dst) - 1,), dst[-1], NEED)
    elif len(src) > len(dst):
        b.add_factor((len(src) - 1,), (NULL,), src[-1], NEED)
    return b.build()


def rng_bit_generator(q: RuleQuery) -> OpShardingRule:
    """The state's dims need replication and block (initial and next state stay replicated);
    the bits' dims are free."""
    (state,), (_, bits) = q.operands, q.results
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(state):
        b.add_factor((d,), (d, NULL), size, NEED, True)
    for d, size in enumerate(bits):
        b.add_factor((NULL,), (NULL, d), size)
    return b.build()
