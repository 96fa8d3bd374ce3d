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
- `rule.text()` / `str(rule)` print Shardy's form; `parse_rule(text)` parses it back (with or
  without the `#sdy.op_sharding_rule<...>` wrapper).
- `rule_from_einsum("ik,kj->ij", [(8, 32), (32, 16)], [(8, 16)])` builds a rule from a user's
  einsum-like string: one letter per dim, `(ij)` for a dim made of several factors; sizes come from
  the shapes; factors that appear only on operands are reductions.

Example::

    >>> rule = rule_from_einsum("ik,kj->ij", [(8, 32), (32, 16)], [(8, 16)], is_custom=False)
    >>> str(rule)
    '#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=32, k=16} reduction={j}>'
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shardc.ir.diagnostics import Location, ParseError, VerifyError

# One tensor's mapping: per dim, the factor indices (major to minor).
TensorMapping = tuple[tuple[int, ...], ...]

_RULE_PREFIX = "#sdy.op_sharding_rule<"
# Factors 0..17 print as 'i'..'z'; factor 18 is 'z_1', 19 is 'z_2', ... (Shardy's naming).
_START_AT_Z = ord("z") - ord("i")


class FactorKind(enum.Enum):
    """How an op uses a factor (Shardy's `FactorType`)."""

    PASS_THROUGH = "pass_through"  # the same sharding may appear on every tensor that has it
    REDUCTION = "reduction"  # only operands have it; sharding it makes the result unreduced
    NEED_REPLICATION = "need_replication"  # must be unsharded for local computation (sort dim)
    PERMUTATION = "permutation"  # data moves along it (slice, pad, concat, reverse)


# The order Shardy prints the kind lists in (after the factor sizes).
_KIND_KEYWORDS: tuple[tuple[FactorKind, str], ...] = (
    (FactorKind.REDUCTION, "reduction"),
    (FactorKind.NEED_REPLICATION, "need_replication"),
    (FactorKind.PERMUTATION, "permutation"),
)


def factor_symbol(index: int) -> str:
    """`0 -> 'i'`, `1 -> 'j'`, `17 -> 'z'`, `18 -> 'z_1'`."""
    if index <= _START_AT_Z:
        return chr(ord("i") + index)
    return f"z_{index - _START_AT_Z}"


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
            if size < 1:
                raise VerifyError(f"factor {factor_symbol(f)} has size {size}; sizes must be >= 1")
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
        for kind, keyword in _KIND_KEYWORDS:
            factors = self.factors_of_kind(kind)
            if factors:
                out += f" {keyword}={{{', '.join(factor_symbol(f) for f in factors)}}}"
        if self.blocked:
            out += f" blocked_propagation={{{', '.join(factor_symbol(f) for f in self.blocked)}}}"
        if self.is_custom:
            out += ", custom"
        return out

    def text(self) -> str:
        return f"{_RULE_PREFIX}{self.body_text()}>"

    def __str__(self) -> str:
        return self.text()


def _canonical_mapping(mapping: Sequence[Sequence[int]]) -> TensorMapping:
    return tuple(tuple(int(f) for f in dim) for dim in mapping)


def _mappings_text(mappings: tuple[TensorMapping, ...]) -> str:
    return ", ".join(
        "[" + ", ".join("".join(factor_symbol(f) for f in dim) for dim in m) + "]" for m in mappings
    )


# ----- parsing Shardy's text ----------------------------------------------------------------


class _RuleParser:
    """Recursive-descent parser for the rule text; errors point at a column of `text`."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.pos = 0

    def error(self, message: str) -> ParseError:
        return ParseError(
            f"op sharding rule: {message}", Location(self.file, 1, self.pos + 1), source=self.text
        )

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip_ws()
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            found = self.text[self.pos : self.pos + 8] or "end of text"
            raise self.error(f"expected '{token}', found '{found}'")

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def symbol(self) -> int:
        """One factor symbol: `i`..`z` or `z_N`."""
        self.skip_ws()
        if self.pos >= len(self.text) or not "i" <= self.text[self.pos] <= "z":
            raise self.error("expected a factor symbol ('i'..'z' or 'z_N')")
        ch = self.text[self.pos]
        self.pos += 1
        if ch == "z" and self.text.startswith("_", self.pos):
            start = self.pos + 1
            end = start
            while end < len(self.text) and self.text[end].isdigit():
                end += 1
            if end == start:
                raise self.error("expected digits after 'z_'")
            self.pos = end
            return _START_AT_Z + int(self.text[start:end])
        return ord(ch) - ord("i")

    def dim(self) -> tuple[int, ...]:
        factors = [self.symbol()]
        while self.pos < len(self.text) and "i" <= self.text[self.pos] <= "z":
            factors.append(self.symbol())
        return tuple(factors)

    def tensor(self) -> TensorMapping:
        self.expect("[")
        dims: list[tuple[int, ...]] = []
        if not self.accept("]"):
            dims.append(self.dim())
            while self.accept(","):
                dims.append(self.dim())
            self.expect("]")
        return tuple(dims)

    def tensors(self) -> tuple[TensorMapping, ...]:
        self.expect("(")
        out: list[TensorMapping] = []
        if not self.accept(")"):
            out.append(self.tensor())
            while self.accept(","):
                out.append(self.tensor())
            self.expect(")")
        return tuple(out)

    def integer(self) -> int:
        self.skip_ws()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if start == self.pos:
            raise self.error("expected an integer")
        return int(self.text[start : self.pos])

    def symbol_set(self) -> list[int]:
        self.expect("{")
        out: list[int] = []
        if not self.accept("}"):
            out.append(self.symbol())
            while self.accept(","):
                out.append(self.symbol())
            self.expect("}")
        return out

    def rule(self) -> OpShardingRule:
        wrapped = self.accept(_RULE_PREFIX)
        operands = self.tensors()
        self.expect("->")
        results = self.tensors()
        sizes: list[int] = []
        if self.accept("{"):
            while True:
                f = self.symbol()
                if f != len(sizes):
                    raise self.error(
                        f"factor sizes must be listed in order; expected "
                        f"'{factor_symbol(len(sizes))}', found '{factor_symbol(f)}'"
                    )
                self.expect("=")
                sizes.append(self.integer())
                if not self.accept(","):
                    break
            self.expect("}")
        kinds = [FactorKind.PASS_THROUGH] * len(sizes)
        blocked: list[int] = []
        keywords = {kw: kind for kind, kw in _KIND_KEYWORDS}
        is_custom = False
        while True:
            if self.accept(","):
                self.expect("custom")
                is_custom = True
                break
            matched = next((kw for kw in (*keywords, "blocked_propagation") if self.peek(kw)), None)
            if matched is None:
                break
            self.accept(matched)
            self.expect("=")
            for f in self.symbol_set():
                if f >= len(sizes):
                    raise self.error(f"factor '{factor_symbol(f)}' has no size")
                if matched == "blocked_propagation":
                    blocked.append(f)
                elif kinds[f] is not FactorKind.PASS_THROUGH:
                    raise self.error(
                        f"factor '{factor_symbol(f)}' is in two kind sets; a factor can only be "
                        "one of reduction, need_replication or permutation"
                    )
                else:
                    kinds[f] = keywords[matched]
        if wrapped:
            self.expect(">")
        if not self.at_end():
            raise self.error(f"unexpected text '{self.text[self.pos : self.pos + 12]}'")
        try:
            return OpShardingRule(
                tuple(sizes), operands, results, tuple(kinds), tuple(blocked), is_custom
            )
        except VerifyError as e:
            raise ParseError(
                f"op sharding rule: {e.message}", Location(self.file, 1, 1), source=self.text
            ) from None


def parse_rule(text: str, *, file: str = "<rule>") -> OpShardingRule:
    """Parse `#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} ...>`.

    The `#sdy.op_sharding_rule<` ... `>` wrapper is optional. Raises `ParseError` with a column.
    """
    return _RuleParser(text, file).rule()


# ----- einsum-like rules for custom ops -------------------------------------------------------


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
