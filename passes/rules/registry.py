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
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError, VerifyError
from shardc.ir.ops import attr
from shardc.ir.ops.elementwise import BINARY, UNARY
from shardc.ir.ops.registry import register_attribute_verifier
from shardc.passes.rules import contraction, elementwise, indexing, per_device, shape, window
from shardc.passes.rules.builder import pointwise_rule
from shardc.passes.rules.einsum import rule_from_einsum
from shardc.passes.rules.query import RuleQuery
from shardc.passes.rules.rule import OpShardingRule
from shardc.passes.rules.rule_parser import parse_rule

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
    `concat(slice(x), x, slice(x))`, need_replication otherwise."""

    def is_slice(v: Any) -> bool:
        d = v.defining_op
        return d is not None and d.name == "slice"

    def before_slice(v: Any) -> Any:
        return v.defining_op.operand(0) if is_slice(v) else v

    operands = op.operands
    permutation = all(is_slice(v) for v in operands) or all(
        before_slice(v) is before_slice(operands[0]) for v in operands
    )
    return (("operands_are_slices", permutation),)


_POINTWISE = RuleEntry(elementwise.pointwise)
_DOT_ATTRS = (
    "lhs_batching_dims",
    "rhs_batching_dims",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
)

RULES: dict[str, RuleEntry] = {
    **{name: _POINTWISE for name in UNARY + BINARY},
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
    "dynamic_update_slice": RuleEntry(window.dynamic_update_slice),
    "scatter": RuleEntry(
        indexing.scatter,
        (
            "update_window_dims",
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "index_vector_dim",
        ),
    ),
    # Per-device collectives in a manual_computation body (passes/rules/per_device.py).
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
    "call": "the driver propagates through calls by linking arguments and results",
    "while": "data-flow edges: the driver links carried values and captures (regions.py)",
    "case": "data-flow edges: the driver links results and captures (regions.py)",
    "return": "terminator: the driver links it to the function results",
    "sharding_group": "no results: the driver unifies the shardings of a group",
    "all_gather": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "all_slice": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "all_to_all": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "collective_permute": "explicit collective: its result type fixes its sharding (no rule)",
    "all_reduce": "explicit collective: its result type fixes its sharding (no Shardy rule)",
    "reduce_scatter": "explicit collective: its result type fixes its sharding (no rule)",
    "optimization_barrier": "Shardy registers none (an identity that stops optimisations)",
    "top_k": "Shardy registers none for chlo.top_k (only for the mhlo.topk custom call)",
    "composite": "Shardy registers none: it does not propagate into the decomposition",
    "spmd.axis_index": "no operands: nothing to propagate",
    "manual_computation": "the driver links operands, body and results (data-flow edges)",
}

# Custom-call targets Shardy treats as element-wise (custom_call without a `sharding_rule`).
POINTWISE_CUSTOM_TARGETS = frozenset(
    {
        "annotate_device_placement",
        "Cholesky",
        "CompactWyHelper",
        "InspectSharding",
        "InvertDiagBlocksLowerTriangular",
        "InvertDiagBlocksUpperTriangular",
        "LayoutConstraint",
        "mhlo.erf",
        "MoveToDevice",
        "MoveToHost",
        "X64Combine",
        "X64SplitHigh",
        "X64SplitLow",
        "xla.megascale.provide_metadata",
    }
)


def rule_for(op: Operation, *, conservative: bool = False) -> OpShardingRule | None:
    """The op's sharding rule, or None when it has none (see `NO_RULE`; a custom_call with
    neither a `sharding_rule` einsum nor a target Shardy knows; a tensor with a size-0 dim,
    which the rule attribute cannot express). `conservative` is Shardy's
    conservative-propagation option (concat/slice/pad factors)."""
    existing = op.attributes.get(SHARDING_RULE_ATTR)
    if existing is not None:
        return _existing_rule(op, existing)
    if op.name == "custom_call":
        return _custom_call_rule(op)
    entry = RULES.get(op.name)
    if entry is None:
        return None
    query = _query(op, entry, conservative)
    if query is None:
        return None
    return _build(query)


def rule_query(op: Operation, *, conservative: bool = False) -> RuleQuery | None:
    """The memoisation key `rule_for` uses for `op` (None when the op gets no built rule)."""
    entry = RULES.get(op.name)
    return None if entry is None else _query(op, entry, conservative)


def _shapes(values: Any) -> tuple[tuple[int, ...], ...] | None:
    shapes = tuple([v.type.shape for v in values])
    for s in shapes:
        if 0 in s:
            return None
    return shapes


def _query(op: Operation, entry: RuleEntry, conservative: bool) -> RuleQuery | None:
    operands = _shapes(op.operands)
    results = _shapes(op.results)
    if operands is None or results is None:
        return None
    attrs: tuple[tuple[str, Any], ...] = ()
    if entry.attrs:
        written = op.attributes
        attrs = tuple([(k, written[k] if k in written else attr(op, k)) for k in entry.attrs])
    if entry.conservative:
        attrs += (("conservative", conservative),)
    if entry.context is not None:
        attrs += entry.context(op)
    return RuleQuery(op.name, operands, results, attrs)


@functools.lru_cache(maxsize=1 << 16)
def _build(query: RuleQuery) -> OpShardingRule | None:
    return RULES[query.name].build(query)


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


def verify_written_rule(op: Operation, value: Any) -> None:
    """An `sdy.sharding_rule` attribute as written: a rule (parsed and checked, see rule_parser)
    whose mappings fit the op's operands and results in number and rank (Shardy's
    `verifyOpShardingRuleAttr`). Registered with the op verifier, so it runs on every read."""
    rule = _existing_rule(op, value)
    operand_types = [v.type for v in op.operands]
    result_types = [v.type for v in op.results]
    for where, types, mappings in (
        ("operand", operand_types, rule.operands),
        ("result", result_types, rule.results),
    ):
        if len(types) != len(mappings):
            raise VerifyError(
                f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': {len(mappings)} {where} "
                f"mapping{'s' if len(mappings) != 1 else ''} for {len(types)} {where}s"
            )
        if not mappings:
            raise VerifyError(
                f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': an op with no {where}s "
                "cannot have a sharding rule"
            )
        for i, (t, m) in enumerate(zip(types, mappings, strict=True)):
            shape = getattr(t, "shape", None)
            if shape is None or any(not isinstance(d, int) or d < 0 for d in shape):
                raise VerifyError(
                    f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': {where} {i} is not a "
                    "tensor of static shape"
                )
            if len(m) != len(shape):
                raise VerifyError(
                    f"'{op.name}' op attribute '{SHARDING_RULE_ATTR}': {where} {i} maps "
                    f"{len(m)} dim{'s' if len(m) != 1 else ''}, but its rank is {len(shape)}"
                )


register_attribute_verifier(SHARDING_RULE_ATTR, verify_written_rule)


@functools.lru_cache(maxsize=1 << 12)
def _einsum_rule(spec: str, operands: tuple, results: tuple) -> OpShardingRule:
    return rule_from_einsum(spec, operands, results)


def _custom_call_rule(op: Operation) -> OpShardingRule | None:
    operands = _shapes(op.operands)
    results = _shapes(op.results)
    if operands is None or results is None or not results:
        return None
    spec = attr(op, "sharding_rule")
    if spec is not None:
        try:
            return _einsum_rule(spec, operands, results)
        except ShardcError as e:
            raise VerifyError(f"'custom_call' op sharding_rule: {e.message}", op.loc) from None
    if attr(op, "call_target_name") in POINTWISE_CUSTOM_TARGETS:
        return pointwise_rule(operands, results)
    return None
