"""Op sharding rules: the factors of an op's iteration space and where each tensor dim maps.

A rule names factors `i, j, k, ...` (then `z_1, z_2, ...` after `z`), gives each a size, and maps
every operand and result dim to a list of factors, major to minor. Printed exactly as Shardy does::

    #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>
    #sdy.op_sharding_rule<([ij])->([i, j]) {i=8, j=4}>                    # reshape 32 -> 8x4
    #sdy.op_sharding_rule<([])->([]), custom>                               # scalar custom op

API:

- `OpShardingRule(factor_sizes, operands, results, kinds=(), blocked=(), is_custom=False)` — a
  frozen, validated attribute. `operands[t][d]` is the tuple of factor indices of operand t's dim d.
  `kinds[f]` is a `FactorKind` (default pass-through); `blocked` lists factors no sharding may
  propagate along.
- `rule.text()` / `str(rule)` print Shardy's form; `parse_rule(text)` (rule_parser.py) parses it
  back (with or without the `#sdy.op_sharding_rule<...>` wrapper).
- `rule_from_einsum("ik,kj->ij", [(8, 32), (32, 16)], [(8, 16)])` (einsum.py) builds a rule from a
  user's einsum-like string: one letter per dim, `(ij)` for a dim made of several factors; sizes
  come from the shapes; factors that appear only on operands are reductions.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.diagnostics import VerifyError

# One tensor's mapping: per dim, the factor indices (major to minor).
TensorMapping = tuple[tuple[int, ...], ...]

RULE_PREFIX = "#sdy.op_sharding_rule<"
# Factors 0..17 print as 'i'..'z'; factor 18 is 'z_1', 19 is 'z_2', ... (Shardy's naming).
START_AT_Z = ord("z") - ord("i")


class FactorKind(enum.Enum):
    """How an op uses a factor (Shardy's `FactorType`)."""

    PASS_THROUGH = "pass_through"  # the same sharding may appear on every tensor that has it
    REDUCTION = "reduction"  # only operands have it; sharding it makes the result unreduced
    NEED_REPLICATION = "need_replication"  # must be unsharded for local computation (sort dim)
    PERMUTATION = "permutation"  # data moves along it (slice, pad, concat, reverse)


# The order Shardy prints the kind lists in (after the factor sizes).
KIND_KEYWORDS: tuple[tuple[FactorKind, str], ...] = (
    (FactorKind.REDUCTION, "reduction"),
    (FactorKind.NEED_REPLICATION, "need_replication"),
    (FactorKind.PERMUTATION, "permutation"),
)


def factor_symbol(index: int) -> str:
    """`0 -> 'i'`, `1 -> 'j'`, `17 -> 'z'`, `18 -> 'z_1'`."""
    if index <= START_AT_Z:
        return chr(ord("i") + index)
    return f"z_{index - START_AT_Z}"


@dataclass(frozen=True, slots=True)
class OpShardingRule:
    """Factors of an op and the mapping of every operand/result dim onto them (see module doc)."""

    factor_sizes: tuple[int, ...]
    operands: tuple[TensorMapping, ...]
    results: tuple[TensorMapping, ...]
    kinds: tuple[FactorKind, ...] = ()
    blocked: tuple[int, ...] = ()
    is_custom: bool = False

    def __post_init__(self) -> None:
        sizes = tuple(int(s) for s in self.factor_sizes)
        operands = tuple(_canonical_mapping(m) for m in self.operands)
        results = tuple(_canonical_mapping(m) for m in self.results)
        kinds = tuple(self.kinds) or (FactorKind.PASS_THROUGH,) * len(sizes)
        blocked = tuple(sorted(set(self.blocked)))
        object.__setattr__(self, "factor_sizes", sizes)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "results", results)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "blocked", blocked)
        self._validate()

    def _validate(self) -> None:
        n = len(self.factor_sizes)
        for f, size in enumerate(self.factor_sizes):
            if size < 0:
                # Size 0 is allowed: Shardy's rule of an op on a tensor with a size-0 dim.
                raise VerifyError(f"factor {factor_symbol(f)} has size {size}; sizes must be >= 0")
        if len(self.kinds) != n:
            raise VerifyError(f"rule has {n} factors but {len(self.kinds)} factor kinds")
        if not self.operands and not self.results:
            raise VerifyError("a sharding rule needs at least one operand or result mapping")
        for where, mappings in (("operand", self.operands), ("result", self.results)):
            for t, mapping in enumerate(mappings):
                seen: set[int] = set()
                for d, dim in enumerate(mapping):
                    if not dim:
                        raise VerifyError(f"{where} {t} dim {d} maps to no factor")
                    for f in dim:
                        if not 0 <= f < n:
                            raise VerifyError(
                                f"{where} {t} dim {d} uses factor index {f}; the rule has {n}"
                            )
                        if f in seen:
                            raise VerifyError(
                                f"{where} {t} uses factor {factor_symbol(f)} twice; a factor "
                                "may appear at most once per tensor"
                            )
                        seen.add(f)
        for f in self.blocked:
            if not 0 <= f < n:
                raise VerifyError(f"blocked factor index {f} is out of range for {n} factors")

    # ----- queries ---------------------------------------------------------------------------

    @property
    def num_factors(self) -> int:
        return len(self.factor_sizes)

    @property
    def num_operands(self) -> int:
        return len(self.operands)

    @property
    def num_results(self) -> int:
        return len(self.results)

    @property
    def mappings(self) -> tuple[TensorMapping, ...]:
        """Operand mappings followed by result mappings (the tensor order used everywhere)."""
        return self.operands + self.results

    def kind(self, factor: int) -> FactorKind:
        return self.kinds[factor]

    def is_pass_through(self, factor: int) -> bool:
        """Shardy's `isPassThroughFactor`: no kind set (blocking is orthogonal to the kind)."""
        return self.kinds[factor] is FactorKind.PASS_THROUGH

    def is_reduction(self, factor: int) -> bool:
        return self.kinds[factor] is FactorKind.REDUCTION

    def is_need_replication(self, factor: int) -> bool:
        return self.kinds[factor] is FactorKind.NEED_REPLICATION

    def is_permutation(self, factor: int) -> bool:
        return self.kinds[factor] is FactorKind.PERMUTATION

    def is_blocked(self, factor: int) -> bool:
        return factor in self.blocked

    def factors_of_kind(self, kind: FactorKind) -> tuple[int, ...]:
        return tuple(f for f, k in enumerate(self.kinds) if k is kind)

    def tensor_sizes(self) -> tuple[int, ...]:
        """Product of the factor sizes of each tensor, operands first (Shardy's tensor size)."""
        return tuple(
            math.prod(self.factor_sizes[f] for dim in m for f in dim) for m in self.mappings
        )

    def dim_sizes(self, mapping: TensorMapping) -> tuple[int, ...]:
        """The dim sizes a tensor with `mapping` has under this rule."""
        return tuple(math.prod(self.factor_sizes[f] for f in dim) for dim in mapping)

    # ----- text ------------------------------------------------------------------------------

    def body_text(self) -> str:
        """The text between `#sdy.op_sharding_rule<` and `>`."""
        out = f"({_mappings_text(self.operands)})->({_mappings_text(self.results)})"
        if self.factor_sizes:
            sizes = ", ".join(f"{factor_symbol(f)}={s}" for f, s in enumerate(self.factor_sizes))
            out += f" {{{sizes}}}"
        for kind, keyword in KIND_KEYWORDS:
            factors = self.factors_of_kind(kind)
            if factors:
                out += f" {keyword}={{{', '.join(factor_symbol(f) for f in factors)}}}"
        if self.blocked:
            out += f" blocked_propagation={{{', '.join(factor_symbol(f) for f in self.blocked)}}}"
        if self.is_custom:
            out += ", custom"
        return out

    def text(self) -> str:
        return f"{RULE_PREFIX}{self.body_text()}>"

    def __str__(self) -> str:
        return self.text()


def _canonical_mapping(mapping: Sequence[Sequence[int]]) -> TensorMapping:
    return tuple(tuple(int(f) for f in dim) for dim in mapping)


def _mappings_text(mappings: tuple[TensorMapping, ...]) -> str:
    return ", ".join(
        "[" + ", ".join("".join(factor_symbol(f) for f in dim) for dim in m) + "]" for m in mappings
    )
