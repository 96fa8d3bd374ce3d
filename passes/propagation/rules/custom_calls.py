"""Rules of the `custom_call` targets Shardy's registry knows (op_sharding_rule_registry.cc).

    custom_call @Eigh 8x4x4 -> (8x4x4, 8x4)   ([i, j, k])->([i, j, k], [i, k]) {i=8, j=4, k=4}
    custom_call @mhlo.topk 16x8 -> (16x2, 16x2)
        ([i, j])->([i, j], [i, j]) {i=16, j=8} need_replication={j} blocked_propagation={j}

`custom_call_rule(target, operands, results, context)` builds one; a target not listed has none
(propagation does not go through it), as in Shardy. `context` carries what a rule reads beyond
shapes: whether the op's result feeds a `rng_bit_generator` (X64Combine).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder, Shape, pointwise_rule
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

Shapes = Sequence[Shape]

# Targets Shardy gives no rule on purpose (callbacks, test-only and debug targets).
NO_RULE_TARGETS = frozenset({
    "sdy_testonly", "tpu_custom_call", "xla_python_cpu_callback", "xla_python_gpu_callback",
    "xla_ffi_python_cpu_callback", "xla_ffi_python_gpu_callback", "xla.debug.Log",
})
# Targets Shardy treats as element-wise (every result shaped like the first).
POINTWISE_TARGETS = frozenset({
    "annotate_device_placement", "Cholesky", "CompactWyHelper", "InspectSharding",
    "InvertDiagBlocksLowerTriangular", "InvertDiagBlocksUpperTriangular", "LayoutConstraint",
    "mhlo.erf", "MoveToDevice", "MoveToHost", "X64SplitHigh", "X64SplitLow",
    "xla.megascale.provide_metadata",
    # SPMD-internal collective permutes: every result sharded like the input.
    "_SPMDInternalOp_MultiPad", "_SPMDInternalOp_RotateRight", "_SPMDInternalOp_MultiRotate",
    "_SPMDInternalOp_MultiSlice", "_SPMDInternalOp_Wrap",
})


def _eigh(operands: Shapes, results: Shapes) -> OpShardingRule:
    """`jax.lax.linalg.eigh`: batch dims, then the matrix dims shared with the eigenvectors;
    the eigenvalues' last dim is the matrix's last."""
    (x,) = operands
    d1, d2 = len(x) - 2, len(x) - 1
    return (RuleBuilder(operands, results).add_pointwise(x[:-2])
            .add_factor((d1,), (d1, NULL), x[d1])
            .add_factor((d2,), (d2, d1), x[d2]).build())


def _qr(operands: Shapes, results: Shapes) -> OpShardingRule:
    """`jax.lax.linalg.qr` (Qr, QrDecompositionBlock): batch dims; the matrix dims and the
    taus' dim need replication."""
    (x,) = operands
    d1, d2 = len(x) - 2, len(x) - 1
    need = FactorKind.NEED_REPLICATION
    return (RuleBuilder(operands, results).add_pointwise(x[:-2])
            .add_factor((d1,), (d1, NULL), x[d1], need)
            .add_factor((d2,), (d2, NULL), x[d2], need)
            .add_factor((NULL,), (NULL, d1), results[1][d1], need).build())


def _householder_product(operands: Shapes, results: Shapes) -> OpShardingRule:
    """`jax.lax.linalg.householder_product`: batch dims; the matrix dims and the taus' dim
    need replication."""
    x, taus = operands
    d1, d2 = len(x) - 2, len(x) - 1
    need = FactorKind.NEED_REPLICATION
    return (RuleBuilder(operands, results).add_pointwise(x[:-2])
            .add_factor((d1, NULL), (d1,), x[d1], need)
            .add_factor((d2, NULL), (d2,), x[d2], need)
            .add_factor((NULL, d1), (NULL,), taus[d1], need).build())


def _top_k(operands: Shapes, results: Shapes) -> OpShardingRule:
    """`jax.lax.top_k` as the mhlo.topk call: the dim that shrinks to k needs replication and
    blocks propagation."""
    return (RuleBuilder(operands, results)
            .add_pointwise_with_kind_for_mismatch(operands[0], results[0],
                                                  FactorKind.NEED_REPLICATION, True)
            .build())


def _approx_top_k(operands: Shapes, results: Shapes) -> OpShardingRule:
    """`jax.lax.approx_max_k` (ApproxTopK, PartialReduce; operands: input, iota, two scalar
    inits): the reduced dim is its own factor on the inputs, and the k-sized result dim needs
    replication and blocks propagation."""
    b = RuleBuilder(operands, results)
    for d, (n_in, n_out) in enumerate(zip(operands[0], results[0], strict=True)):
        if n_in == n_out:
            b.add_factor_all(d, n_in)
        else:
            b.add_factor((d, d, NULL, NULL), (NULL, NULL), n_in)
            b.add_factor((NULL,) * 4, (d, d), n_out, FactorKind.NEED_REPLICATION, True)
    return b.build()


def _x64_combine(operands: Shapes, results: Shapes, feeds_rng: bool) -> OpShardingRule:
    """Element-wise, unless a rng_bit_generator reads it: its state must stay replicated (and a
    ui64 tensor cannot be resharded), so the one dim needs replication and blocks."""
    if not feeds_rng:
        return pointwise_rule(operands, results)
    (shape,) = results
    return (RuleBuilder(operands, results)
            .add_factor_all(0, shape[0], FactorKind.NEED_REPLICATION, True).build())


_RULES: dict[str, Callable[[Shapes, Shapes], OpShardingRule]] = {
    "Eigh": _eigh,
    "Qr": _qr,
    "QrDecompositionBlock": _qr,
    "ProductOfElementaryHouseholderReflectors": _householder_product,
    "mhlo.topk": _top_k,
    "ApproxTopK": _approx_top_k,
    "PartialReduce": _approx_top_k,
}

# The operand and result counts each structured target must have (else it has no rule).
_ARITY: dict[str, tuple[int, int]] = {
    "Eigh": (1, 2), "Qr": (1, 2), "QrDecompositionBlock": (1, 2), "mhlo.topk": (1, 2),
    "ApproxTopK": (4, 2), "PartialReduce": (4, 2),
    "ProductOfElementaryHouseholderReflectors": (2, 1),
}


def knows_target(target: str) -> bool:
    """Does Shardy's registry have a rule for the custom call target `target`?"""
    return target in POINTWISE_TARGETS or target in _RULES or target == "X64Combine"


def custom_call_rule(
    target: str, operands: Shapes, results: Shapes, feeds_rng: bool = False
) -> OpShardingRule | None:
    """The rule of a custom_call to `target` (None: Shardy has none)."""
    if target in NO_RULE_TARGETS or not results:
        return None
    if target in POINTWISE_TARGETS:
        return pointwise_rule(operands, results)
    if target == "X64Combine":
        return _x64_combine(operands, results, feeds_rng)
    build = _RULES.get(target)
    if build is None or _ARITY[target] != (len(operands), len(results)):
        return None
    return build(operands, results)
