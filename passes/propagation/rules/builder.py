"""`RuleBuilder`: builds an `OpShardingRule` factor by factor, as Shardy's OpShardingRuleBuilder.

Factors are numbered in the order they are added (the order decides tie-breaks in propagation,
so every op family adds them exactly where Shardy does). `build()` then gives every dim that got
no factor a fresh size-1 factor, operands first then results, as Shardy does::

    b = RuleBuilder([(8, 32), (32, 16)], [(8, 16)])
    b.add_factor((0, NULL), (0,), 8)                  # lhs non-contracting
    b.add_factor((NULL, 1), (1,), 16)                 # rhs non-contracting
    b.add_factor((1, 0), (NULL,), 32, REDUCTION)      # contracting
    str(b.build())  # '#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} ...'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

# A tensor that does not take part in a factor (Shardy's kNullDim).
NULL = -1

Shape = tuple[int, ...]
KindFn = Callable[[int], FactorKind]


def _pass_through(dim: int) -> FactorKind:
    return FactorKind.PASS_THROUGH


class RuleBuilder:
    """Accumulates factors over fixed operand/result shapes; `build()` freezes a rule."""

    __slots__ = (
        "operand_shapes",
        "result_shapes",
        "_operands",
        "_results",
        "_sizes",
        "_kinds",
        "_blocked",
    )

    def __init__(self, operand_shapes: Sequence[Shape], result_shapes: Sequence[Shape]) -> None:
        self.operand_shapes = tuple(tuple(s) for s in operand_shapes)
        self.result_shapes = tuple(tuple(s) for s in result_shapes)
        self._operands: list[list[list[int]]] = [[[] for _ in s] for s in self.operand_shapes]
        self._results: list[list[list[int]]] = [[[] for _ in s] for s in self.result_shapes]
        self._sizes: list[int] = []
        self._kinds: list[FactorKind] = []
        self._blocked: list[int] = []

    def _new_factor(self, size: int, kind: FactorKind, blocked: bool) -> int:
        index = len(self._sizes)
        self._sizes.append(size)
        self._kinds.append(kind)
        if blocked:
            self._blocked.append(index)
        return index

    def add_factor(
        self,
        operand_dims: Sequence[int],
        result_dims: Sequence[int],
        size: int,
        kind: FactorKind = FactorKind.PASS_THROUGH,
        blocked: bool = False,
    ) -> RuleBuilder:
        """Add a factor mapped to `operand_dims[t]` of operand t and `result_dims[t]` of result t
        (NULL: not in that tensor). Shardy's `addFactor(operandDims, resultDims, ...)`: a
        size-1 factor is not mapped to a dim that already has a factor."""
        assert len(operand_dims) == len(self._operands), (operand_dims, self.operand_shapes)
        assert len(result_dims) == len(self._results), (result_dims, self.result_shapes)
        index = self._new_factor(size, kind, blocked)
        for mappings, dims in ((self._operands, operand_dims), (self._results, result_dims)):
            for mapping, dim in zip(mappings, dims):
                if dim != NULL and not (size == 1 and mapping[dim]):
                    mapping[dim].append(index)
        return self

    def add_factor_same_for_all_operands(
        self, dim: int, size: int, kind: FactorKind = FactorKind.PASS_THROUGH
    ) -> RuleBuilder:
        """A factor on dim `dim` of every operand of non-zero rank (Shardy's
        `addFactorSameForAllOperands`)."""
        index = self._new_factor(size, kind, False)
        for mapping in self._operands:
            if mapping:
                mapping[dim].append(index)
        return self

    def add_factor_same_for_all_results(
        self, dim: int, size: int, kind: FactorKind = FactorKind.PASS_THROUGH
    ) -> RuleBuilder:
        """A factor on dim `dim` of every result of non-zero rank."""
        index = self._new_factor(size, kind, False)
        for mapping in self._results:
            if mapping:
                mapping[dim].append(index)
        return self

    def add_factor_all(
        self,
        dim: int,
        size: int,
        kind: FactorKind = FactorKind.PASS_THROUGH,
        blocked: bool = False,
    ) -> RuleBuilder:
        """Add a factor on dim `dim` of every tensor of non-zero rank (scalars are skipped:
        a scalar predicate or bound maps to `[]`). Shardy's `addFactor(dim, size, ...)`."""
        index = self._new_factor(size, kind, blocked)
        for mapping in (*self._operands, *self._results):
            if mapping:
                mapping[dim].append(index)
        return self

    def add_pointwise(
        self, shape: Shape, kind_of: KindFn = _pass_through, blocked: bool = False
    ) -> RuleBuilder:
        """One factor per dim of `shape`, on that dim of every non-scalar tensor."""
        for dim, size in enumerate(shape):
            self.add_factor_all(dim, size, kind_of(dim), blocked)
        return self

    def add_pointwise_if(
        self, shape: Shape, keep: Callable[[int], bool], kind_of: KindFn = _pass_through
    ) -> RuleBuilder:
        """`add_pointwise` restricted to the dims `keep` accepts (the others get size-1 factors
        at build time)."""
        for dim, size in enumerate(shape):
            if keep(dim):
                self.add_factor_all(dim, size, kind_of(dim))
        return self

    def add_pointwise_with_kind_for_mismatch(
        self,
        in_shape: Shape,
        out_shape: Shape,
        mismatch_kind: FactorKind,
        mismatch_blocked: bool = False,
    ) -> RuleBuilder:
        """One factor per dim sized like `in_shape`; dims whose sizes differ between `in_shape`
        and `out_shape` get `mismatch_kind`. Shardy's `addPointwiseWithDiffTypeForMismatch`."""
        for dim, (n_in, n_out) in enumerate(zip(in_shape, out_shape)):
            if n_in == n_out:
                self.add_factor_all(dim, n_in)
            else:
                self.add_factor_all(dim, n_in, mismatch_kind, mismatch_blocked)
        return self

    def build(self, is_custom: bool = False) -> OpShardingRule:
        """The rule; dims left without a factor get a new size-1 factor each."""
        sizes = list(self._sizes)
        kinds = list(self._kinds)

        def freeze(mappings: list[list[list[int]]]) -> tuple[tuple[tuple[int, ...], ...], ...]:
            out = []
            for mapping in mappings:
                dims = []
                for factors in mapping:
                    if not factors:
                        factors = [len(sizes)]
                        sizes.append(1)
                        kinds.append(FactorKind.PASS_THROUGH)
                    dims.append(tuple(factors))
                out.append(tuple(dims))
            return tuple(out)

        operands = freeze(self._operands)
        results = freeze(self._results)
        return OpShardingRule(
            tuple(sizes), operands, results, tuple(kinds), tuple(self._blocked), is_custom
        )


def pointwise_rule(
    operand_shapes: Sequence[Shape], result_shapes: Sequence[Shape]
) -> OpShardingRule:
    """Shardy's `buildPointwise`: factor d of the first result's shape on dim d of every tensor."""
    builder = RuleBuilder(operand_shapes, result_shapes)
    return builder.add_pointwise(builder.result_shapes[0]).build()
