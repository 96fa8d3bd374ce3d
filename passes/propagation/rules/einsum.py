"""Sharding rules for custom ops from an einsum-like string: `"ik,kj->ij"` and the shapes.

    >>> rule = rule_from_einsum("ik,kj->ij", [(8, 32), (32, 16)], [(8, 16)], is_custom=False)
    >>> str(rule)
    '#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=32, k=16} reduction={j}>'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from shardc.ir.diagnostics import ParseError, VerifyError
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule, TensorMapping


def _einsum_terms(text: str, spec: str) -> list[list[list[str]]]:
    """`"(ij)k,k"` -> `[[['i','j'], ['k']], [['k']]]`: per tensor, per dim, the factor letters."""
    terms: list[list[list[str]]] = []
    for term in spec.split(","):
        dims: list[list[str]] = []
        group: list[str] | None = None
        for ch in term.strip():
            if ch == "(":
                if group is not None:
                    raise ParseError(f"einsum rule {text!r}: nested '(' in {term!r}")
                group = []
            elif ch == ")":
                if not group:
                    raise ParseError(f"einsum rule {text!r}: empty or unopened group in {term!r}")
                dims.append(group)
                group = None
            elif ch.isalpha():
                if group is not None:
                    group.append(ch)
                else:
                    dims.append([ch])
            elif not ch.isspace():
                raise ParseError(
                    f"einsum rule {text!r}: unexpected {ch!r}; use one letter per factor and "
                    "'(ij)' for a dim made of several factors"
                )
        if group is not None:
            raise ParseError(f"einsum rule {text!r}: unclosed '(' in {term!r}")
        terms.append(dims)
    return terms


def rule_from_einsum(
    spec: str,
    operand_shapes: Sequence[Sequence[int]],
    result_shapes: Sequence[Sequence[int]],
    *,
    sizes: Mapping[str, int] | None = None,
    need_replication: str = "",
    permutation: str = "",
    blocked: str = "",
    is_custom: bool = True,
) -> OpShardingRule:
    """Build a rule from `"ik,kj->ij"` and the tensor shapes.

    Each letter is a factor; `(ij)` makes one dim of several factors (give the sizes that cannot
    be inferred in `sizes`). Factors are numbered in order of first appearance. Factors that appear
    on operands but on no result are reductions; `need_replication`, `permutation` and `blocked`
    name further factors by letter. A scalar is an empty term (`",ij->ij"`).
    """
    if "->" not in spec:
        raise ParseError(f"einsum rule {spec!r} needs '->' between operands and results")
    lhs, rhs = spec.split("->", 1)
    operand_terms = _einsum_terms(spec, lhs) if lhs.strip() or operand_shapes else []
    result_terms = _einsum_terms(spec, rhs) if rhs.strip() or result_shapes else []
    if len(operand_terms) != len(operand_shapes) or len(result_terms) != len(result_shapes):
        raise ParseError(
            f"einsum rule {spec!r} names {len(operand_terms)} operands and {len(result_terms)} "
            f"results, but the op has {len(operand_shapes)} and {len(result_shapes)}"
        )
    order: list[str] = []
    for term in operand_terms + result_terms:
        for dim in term:
            for letter in dim:
                if letter not in order:
                    order.append(letter)
    index = {letter: i for i, letter in enumerate(order)}
    known: dict[str, int] = dict(sizes or {})
    pending: list[tuple[list[str], int, str]] = []
    for terms, shapes, where in (
        (operand_terms, operand_shapes, "operand"),
        (result_terms, result_shapes, "result"),
    ):
        for t, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
            if len(term) != len(shape):
                raise ParseError(
                    f"einsum rule {spec!r}: {where} {t} has {len(term)} dims in the rule but "
                    f"shape {list(shape)}"
                )
            for dim, size in zip(term, shape, strict=True):
                pending.append((dim, int(size), f"{where} {t}"))
    # Infer sizes: a dim with one unknown factor fixes it; repeat until nothing changes.
    changed = True
    while changed:
        changed = False
        for dim, size, where in pending:
            unknown = [letter for letter in dim if letter not in known]
            if len(unknown) == 1:
                rest = math.prod(known[letter] for letter in dim if letter in known)
                if rest == 0 or size % rest:
                    raise ParseError(
                        f"einsum rule {spec!r}: {where} dim of size {size} is not divisible by "
                        f"the known factor sizes of {''.join(dim)}"
                    )
                known[unknown[0]] = size // rest
                changed = True
    for dim, size, where in pending:
        missing = [letter for letter in dim if letter not in known]
        if missing:
            raise ParseError(
                f"einsum rule {spec!r}: cannot infer the sizes of {', '.join(missing)}; "
                "pass them in `sizes`"
            )
        product = math.prod(known[letter] for letter in dim)
        if product != size:
            raise ParseError(
                f"einsum rule {spec!r}: {where} dim ({''.join(dim)}) has size {size} but its "
                f"factors give {product}"
            )
    result_letters = {letter for term in result_terms for dim in term for letter in dim}
    kinds = [
        FactorKind.PASS_THROUGH if letter in result_letters else FactorKind.REDUCTION
        for letter in order
    ]
    for letters, kind in (
        (need_replication, FactorKind.NEED_REPLICATION),
        (permutation, FactorKind.PERMUTATION),
    ):
        for letter in letters:
            if letter not in index:
                raise ParseError(f"einsum rule {spec!r}: unknown factor {letter!r}")
            if kinds[index[letter]] is not FactorKind.PASS_THROUGH:
                raise ParseError(
                    f"einsum rule {spec!r}: factor {letter!r} is already "
                    f"{kinds[index[letter]].value}; a factor has one kind"
                )
            kinds[index[letter]] = kind
    for letter in blocked:
        if letter not in index:
            raise ParseError(f"einsum rule {spec!r}: unknown factor {letter!r}")

    def mapping(term: list[list[str]]) -> TensorMapping:
        return tuple(tuple(index[letter] for letter in dim) for dim in term)

    try:
        return OpShardingRule(
            tuple(known[letter] for letter in order),
            tuple(mapping(t) for t in operand_terms),
            tuple(mapping(t) for t in result_terms),
            tuple(kinds),
            tuple(index[letter] for letter in blocked),
            is_custom,
        )
    except VerifyError as e:
        raise ParseError(f"einsum rule {spec!r}: {e.message}") from None
