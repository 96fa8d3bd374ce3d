"""`rule_for(op)`: the factor rule Shardy's op_sharding_rule_registry.cc builds for an op.

Every op in `shardc.ir.ops.OPS` is covered: it either has a builder below (same factor order, sizes,
kinds and printed text as Shardy) or is listed in `NO_RULE` with the reason it has none.

    %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
         : tensor<8x16xf32>                          # %x: 8x32, %w: 32x16
    str(rule_for(op)) == "#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) "
                         "{i=8, j=16, k=32} reduction={k}>"

An op that already carries a rule in its `sdy.sharding_rule` attribute (imported from
StableHLO, or a custom op's user rule) keeps it, as Shardy's `getOrCreateShardingRule` does.

Rules are pure functions of a `RuleQuery` (op name, shapes, the attributes they read), so each
distinct one is built once and shared; `rule_for` is cheap on graphs with 100k ops.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.bounded import BoundedTable
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError, VerifyError
from shardc.ir.ops import attr
from shardc.ir.ops.elementwise import BINARY, SPECIAL_BINARY, SPECIAL_UNARY, UNARY
from shardc.ir.ops.registry import register_attribute_verifier
from shardc.ir.ops.scalar_bodies import scatter_reduction
from shardc.passes.propagation.rules import (
    contraction,
    elementwise,
    indexing,
    linalg,
    per_device,
    replica_collectives,
    shape,
    window,
)
from shardc.passes.propagation.rules.custom_calls import custom_call_rule
from shardc.passes.propagation.rules.einsum import rule_from_einsum
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.rules.rule_check import check_rule_on
from shardc.passes.propagation.rules.rule_parser import parse_rule

# The attribute an imported op keeps Shardy's rule in.
SHARDING_RULE_ATTR = "sdy.sharding_rule"

BuildFn = Callable[[RuleQuery], OpShardingRule | None]
ContextFn = Callable[[Operation], tuple[tuple[str, Any], ...]]


@dataclass(frozen=True)
class RuleEntry:
    """How to build one op's rule: the builder, the attributes it reads (defaults applied),
    whether it depends on conservative propagation, and extra facts read from the op's
    context (e.g. concat looks at its operands' defining ops)."""

    build: BuildFn
    attrs: tuple[str, ...] = ()
    conservative: bool = False
    context: ContextFn | None = None


def _concat_context(op: Operation) -> tuple[tuple[str, Any], ...]:
    """Shardy gives the concat dim a permutation factor for `concat(slice(x), slice(y))` and
    `concat(slice(x), x, slice(x))` (one tensor, at least one slice of it), need_replication
    otherwise (`concat(x, x)` included)."""

    def is_slice(v: Any) -> bool:
        d = v.defining_op
        return d is not None and d.name == "slice"

    def before_slice(v: Any) -> Any:
        return v.defining_op.operand(0) if is_slice(v) else v

    operands = op.operands
    permutation = all(is_slice(v) for v in operands) or (
        all(before_slice(v) is before_slice(operands[0]) for v in operands)
        and any(is_slice(v) for v in operands)
    )
    return (("operands_are_slices", permutation),)


def _dus_context(op: Operation) -> tuple[tuple[str, Any], ...]:
    """Are all of a dynamic_update_slice's start indices constants?"""
    starts = op.operands[2:]
    constant = all(v.defining_op is not None and v.defining_op.name == "constant" for v in starts)
    return (("constant_indices", constant),)


def _scatter_context(op: Operation) -> tuple[tuple[str, Any], ...]:
    """Is the update region one reduction Shardy knows (`getCommonSupportedReductionOp`)?"""
    return (("reducible", scatter_reduction(op) is not None),)


_POINTWISE = RuleEntry(elementwise.pointwise)
_DOT_ATTRS = (
    "lhs_batching_dims",
    "rhs_batching_dims",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
)

# Element-wise ops JAX writes as `chlo.*` (jnp.square, lax.erf, lax.erf_inv, and the special
# functions SPECIAL_UNARY/SPECIAL_BINARY): jaxlib's Shardy registers no rule for them, so
# propagation does not go through them (a value they produce gets its sharding from its users
# only). They are still computed element-wise where they stand (`LOWERING_RULES`). shardc.jit
# first legalizes them as XLA does (legalize_chlo.py).
CHLO_POINTWISE = ("square", "erf", "erf_inv", *SPECIAL_UNARY, *SPECIAL_BINARY)

RULES: dict[str, RuleEntry] = {
    **{name: _POINTWISE for name in UNARY + BINARY if name not in CHLO_POINTWISE},
    "convert": _POINTWISE,
    "is_finite": _POINTWISE,
    "compare": _POINTWISE,
    "select": RuleEntry(elementwise.select),
    "clamp": RuleEntry(elementwise.clamp),
    "sharding_constraint": _POINTWISE,
    # Shardy's registry has no rule for these two; both are identities on data. The propagation
    # driver treats a barrier as this identity restricted to its `allowed_direction`.
    "reshard": _POINTWISE,
    "propagation_barrier": _POINTWISE,
    "broadcast_in_dim": RuleEntry(shape.broadcast_in_dim, ("broadcast_dimensions",)),
    "reshape": RuleEntry(shape.reshape),
    "transpose": RuleEntry(shape.transpose, ("permutation",)),
    "concatenate": RuleEntry(shape.concatenate, ("dimension",), True, _concat_context),
    "slice": RuleEntry(shape.slice_or_pad, (), True),
    "pad": RuleEntry(shape.slice_or_pad, (), True),
    "reverse": RuleEntry(shape.reverse, ("dimensions",)),
    "sort": RuleEntry(shape.sort, ("dimension",)),
    "dot_general": RuleEntry(contraction.dot_general, _DOT_ATTRS),
    "reduce": RuleEntry(contraction.reduce, ("dimensions",)),
    "gather": RuleEntry(
        indexing.gather,
        (
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "index_vector_dim",
        ),
    ),
    "convolution": RuleEntry(window.convolution, window.CONV_ATTRS, True),
    "reduce_window": RuleEntry(window.reduce_window, window.REDUCE_WINDOW_ATTRS, True),
    "dynamic_slice": RuleEntry(window.dynamic_slice),
    "dynamic_update_slice": RuleEntry(window.dynamic_update_slice, (), False, _dus_context),
    "scatter": RuleEntry(
        indexing.scatter,
        (
            "update_window_dims",
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "index_vector_dim",
        ),
        False,
        _scatter_context,
    ),
    "popcnt": _POINTWISE,
    "count_leading_zeros": _POINTWISE,
    "reduce_precision": _POINTWISE,
    "real": _POINTWISE,
    "imag": _POINTWISE,
    "complex": _POINTWISE,
    "dot": RuleEntry(linalg.dot),
    "cholesky": RuleEntry(linalg.cholesky),
    "triangular_solve": RuleEntry(linalg.triangular_solve, ("left_side", "transpose_a")),
    "fft": RuleEntry(linalg.fft, ("fft_length",)),
    "batch_norm_inference": RuleEntry(linalg.batch_norm_inference, ("feature_index",)),
    "bitcast_convert": RuleEntry(linalg.bitcast_convert),
    "rng_bit_generator": RuleEntry(linalg.rng_bit_generator),
    "select_and_scatter": RuleEntry(
        window.select_and_scatter, ("window_dimensions", "window_strides", "padding"), True
    ),
    "xla.all_gather": RuleEntry(replica_collectives.all_gather, ("all_gather_dim",)),
    "xla.all_to_all": RuleEntry(
        replica_collectives.all_to_all, ("split_dimension", "concat_dimension")
    ),
    "xla.reduce_scatter": RuleEntry(replica_collectives.reduce_scatter, ("scatter_dimension",)),
    "xla.all_reduce": _POINTWISE,
    "xla.collective_permute": _POINTWISE,
    # Per-device collectives in a manual_computation body (passes/propagation/rules/per_device.py).
    "spmd.all_reduce": RuleEntry(per_device.pointwise),
    "spmd.collective_permute": RuleEntry(per_device.pointwise),
    "spmd.all_gather": RuleEntry(per_device.one_dim, ("dim",)),
    "spmd.all_slice": RuleEntry(per_device.one_dim, ("dim",)),
    "spmd.reduce_scatter": RuleEntry(per_device.one_dim, ("dim",)),
    "spmd.all_to_all": RuleEntry(per_device.all_to_all, ("split_dim", "concat_dim")),
}

# Ops without a rule, and why. Propagation does not go through them by factors.
NO_RULE: dict[str, str] = {
    "constant": "no operands: nothing to propagate (Shardy registers none)",
    "iota": "no operands: nothing to propagate (Shardy registers none)",
    "call": "opaque to propagation, as in Shardy: `propagate` makes calls named computations",
    "while": "data-flow edges: the driver links carried values and captures (data_flow.py)",
    "case": "data-flow edges: the driver links results and captures (data_flow.py)",
    "named_computation": "data-flow edges: operands to body arguments, body results to results",
    "data_flow_edge": "an explicit data-flow edge: the driver visits the edge it stands for",
    "func_data_flow_edge": "an explicit function/call edge (Shardy's, between "
                           "sdy-add-func-data-flow-edges and its sink): no factors to propagate by",
    "return": "terminator: the driver links it to the function results",
    "sharding_group": "no results: the driver unifies the shardings of a group",
    "all_gather": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "all_slice": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "all_to_all": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "collective_permute": "explicit collective: its result type fixes its sharding (no rule)",
    "all_reduce": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "reduce_scatter": "explicit collective: its result type fixes its sharding (no rule)",
    "sharded_to_unreduced": "explicit collective: its result type fixes its sharding (no rule)",
    "replicated_to_unreduced": "explicit collective: its result type fixes its sharding",
    "optimization_barrier": "data-flow edges: operand k to result k (data_flow.py)",
    "top_k": "Shardy registers none for chlo.top_k (only for the mhlo.topk custom call)",
    "composite": "Shardy registers none: it does not propagate into the decomposition",
    "spmd.axis_index": "no operands: nothing to propagate",
    "manual_computation": "the driver links operands, body and results (data-flow edges)",
    "batch_norm_training": "Shardy registers none",
    "batch_norm_grad": "Shardy registers none",
    "after_all": "tokens carry no data (Shardy registers none)",
    "partition_id": "no operands: a per-device scalar (Shardy registers none)",
    "replica_id": "no operands: a per-device scalar (Shardy registers none)",
    **{name: f"Shardy registers none for chlo.{name}: propagation does not pass through it; "
             "it computes element-wise on its operands as sharded (LOWERING_RULES)"
       for name in CHLO_POINTWISE},
}

def rule_for(op: Operation, *, conservative: bool = False) -> OpShardingRule | None:
    """The op's sharding rule, or None when it has none (see `NO_RULE`; a custom_call with
    neither a `sharding_rule` einsum nor a target Shardy knows). `conservative` is Shardy's
    conservative-propagation option (concat/slice/pad factors)."""
    existing = op.attributes.get(SHARDING_RULE_ATTR)
    if existing is not None:
        return _existing_rule(op, existing)
    if op.name == "custom_call":
        return _custom_call_rule(op)
    entry = RULES.get(op.name)
    if entry is None:
        return None
    key = _query_fields(op, entry, conservative)
    rule = _BUILT.get(key, _MISSING)
    if rule is _MISSING:
        rule = _BUILT.put(key, entry.build(RuleQuery(*key)))
    return rule


def rule_key(op: Operation) -> tuple | None:
    """What `rule_for(op)` (not conservative) builds the op's rule from, as a hashable key:
    its `RuleQuery`'s fields; None when the rule comes from elsewhere (a written
    `sdy.sharding_rule`, a custom_call) or there is none. Ops with equal keys have one rule."""
    if SHARDING_RULE_ATTR in op.attributes or op.name == "custom_call":
        return None
    entry = RULES.get(op.name)
    return None if entry is None else _query_fields(op, entry, False)


# Each distinct rule built once, keyed by its `RuleQuery`'s fields: the passes ask for the rule
# of every op (propagation, insert-reshards and spmd: ~50k asks on a 32-layer Llama step), and
# a plain tuple hashes and compares without building a query per ask. The table is emptied
# when full; a rule built again is an equal rule.
_BUILT = BoundedTable(1 << 16)  # RuleQuery fields -> OpShardingRule | None
_MISSING: Any = object()


# Ops insert-reshards and spmd lower under a finer rule than Shardy's (rules/window.py), or
# under a rule where Shardy has none (the chlo element-wise ops: XLA computes them in place).
LOWERING_RULES: dict[str, BuildFn] = {
    "reduce_window": window.tiled_reduce_window,
    "select_and_scatter": window.tiled_select_and_scatter,
    **{name: elementwise.pointwise for name in CHLO_POINTWISE},
}


def lowering_rule(op: Operation) -> OpShardingRule | None:
    """The rule insert-reshards and spmd compute `op` under: `rule_for(op)`, except for the ops
    in `LOWERING_RULES` without a written rule, whose finer rule lets more dims stay sharded
    (propagation keeps Shardy's rule)."""
    build = LOWERING_RULES.get(op.name)
    if build is None or SHARDING_RULE_ATTR in op.attributes:
        return rule_for(op)
    query = _query(op, RULES.get(op.name) or RuleEntry(build), False)
    return None if query is None else _build_lowering(query)


@functools.lru_cache(maxsize=1 << 12)
def _build_lowering(query: RuleQuery) -> OpShardingRule | None:
    return LOWERING_RULES[query.name](query)


def rule_query(op: Operation, *, conservative: bool = False) -> RuleQuery | None:
    """The memoisation key `rule_for` uses for `op` (None when the op gets no built rule)."""
    entry = RULES.get(op.name)
    return None if entry is None else _query(op, entry, conservative)


def _shapes(values: Any) -> tuple[tuple[int, ...], ...]:
    return tuple([v.type.shape for v in values])


def _query(op: Operation, entry: RuleEntry, conservative: bool) -> RuleQuery:
    return RuleQuery(*_query_fields(op, entry, conservative))


def _query_fields(op: Operation, entry: RuleEntry, conservative: bool
                  ) -> tuple[str, tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...],
                             tuple[tuple[str, Any], ...]]:
    """The fields of the op's `RuleQuery`, in order."""
    operands = _shapes(op.operands)
    results = _shapes(op.results)
    attrs: tuple[tuple[str, Any], ...] = ()
    if entry.attrs:
        written = op.attributes
        attrs = tuple([(k, written[k] if k in written else attr(op, k)) for k in entry.attrs])
    if entry.conservative:
        attrs += (("conservative", conservative),)
    if entry.context is not None:
        attrs += entry.context(op)
    return op.name, operands, results, attrs


@functools.lru_cache(maxsize=1 << 12)
def _parse_existing(text: str) -> OpShardingRule:
    return parse_rule(text)


def _existing_rule(op: Operation, value: Any) -> OpShardingRule:
    if isinstance(value, OpShardingRule):
        return value
    text = value.text if isinstance(value, OpaqueAttr) else value
    if not isinstance(text, str):
        raise VerifyError(
            f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}' must be an "
            "#sdy.op_sharding_rule<...>",
            op.loc,
        )
    try:
        return _parse_existing(text)
    except ShardcError as e:
        raise VerifyError(
            f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': {e.message}", op.loc
        ) from None


def _static_shape(t: Any) -> tuple[int, ...] | None:
    shape = getattr(t, "shape", None)
    if getattr(t, "dtype", None) == "token" or shape is None:
        return None
    return None if any(not isinstance(d, int) or d < 0 for d in shape) else tuple(shape)


def verify_written_rule(op: Operation, value: Any) -> None:
    """An `sdy.sharding_rule` attribute as written: a rule (parsed and checked, see rule_parser)
    that fits the op's operands and results (rule_check.py, Shardy's `verifyOpShardingRuleAttr`).
    Registered with the op verifier, so it runs on every read."""
    rule = _existing_rule(op, value)
    try:
        check_rule_on(rule, [_static_shape(v.type) for v in op.operands],
                      [_static_shape(v.type) for v in op.results])
    except VerifyError as e:
        raise VerifyError(
            f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': {e.message}"
        ) from None


register_attribute_verifier(SHARDING_RULE_ATTR, verify_written_rule)


@functools.lru_cache(maxsize=1 << 12)
def _einsum_rule(spec: str, operands: tuple, results: tuple) -> OpShardingRule:
    return rule_from_einsum(spec, operands, results)


def _custom_call_rule(op: Operation) -> OpShardingRule | None:
    operands = _shapes(op.operands)
    results = _shapes(op.results)
    if not results:
        return None
    spec = attr(op, "sharding_rule")
    if spec is not None:
        try:
            return _einsum_rule(spec, operands, results)
        except ShardcError as e:
            raise VerifyError(f"'custom_call' op sharding_rule: {e.message}", op.loc) from None
    target = attr(op, "call_target_name")
    feeds_rng = target == "X64Combine" and any(
        use.op.name == "rng_bit_generator" for r in op.results for use in r.uses
    )
    return _target_rule(target, operands, results, feeds_rng)


@functools.lru_cache(maxsize=1 << 12)
def _target_rule(target: str, operands: tuple, results: tuple, feeds_rng: bool):
    return custom_call_rule(target, operands, results, feeds_rng)
