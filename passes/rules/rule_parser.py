"""Parsing Shardy's text of an op sharding rule back into an `OpShardingRule`::

    #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>

Errors are `ParseError`s that point at a column of the text.
"""

from __future__ import annotations

from shardc.ir.diagnostics import Location, ParseError, VerifyError
from shardc.passes.rules.rule import (
    KIND_KEYWORDS,
    RULE_PREFIX,
    START_AT_Z,
    FactorKind,
    OpShardingRule,
    TensorMapping,
    factor_symbol,
)


class _RuleParser:
    """Recursive-descent parser for the rule text; errors point at a column of `text`."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.pos = 0

    def error_at(self, pos: int, message: str) -> ParseError:
        self.pos = pos
        return self.error(message)

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
            return START_AT_Z + int(self.text[start:end])
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
        wrapped = self.accept(RULE_PREFIX)
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
        keywords = {kw: kind for kind, kw in KIND_KEYWORDS}
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
            at = self.pos
            members = self.symbol_set()
            if members != sorted(members):
                raise self.error_at(at, f"{matched}: indices of special factors must be sorted")
            if len(set(members)) != len(members):
                raise self.error_at(at, f"{matched}: indices of special factors must be unique")
            for f in members:
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
            rule = OpShardingRule(
                tuple(sizes), operands, results, tuple(kinds), tuple(blocked), is_custom
            )
            _check_written(rule)
        except VerifyError as e:
            raise ParseError(
                f"op sharding rule: {e.message}", Location(self.file, 1, 1), source=self.text
            ) from None
        return rule


def _check_written(rule: OpShardingRule) -> None:
    """What Shardy's verifier requires of a written rule beyond what `OpShardingRule` checks
    (rules shardc builds itself satisfy these by construction)."""
    used = {f for m in rule.mappings for dim in m for f in dim}
    for f, size in enumerate(rule.factor_sizes):
        if f not in used:
            raise VerifyError(
                f"factor {factor_symbol(f)}={size} is not used in any operand or result mapping"
            )
    for where, mappings in (("operand", rule.operands), ("result", rule.results)):
        for t, mapping in enumerate(mappings):
            for d, dim in enumerate(mapping):
                if len(dim) > 1 and any(rule.factor_sizes[f] == 1 for f in dim):
                    raise VerifyError(
                        f"{where} {t} dim {d}: a dim of several factors cannot have a factor of "
                        "size 1"
                    )
    in_results = {f for m in rule.results for dim in m for f in dim}
    for f in rule.factors_of_kind(FactorKind.REDUCTION):
        if f in in_results:
            raise VerifyError(f"reduction factor {factor_symbol(f)} is in a result mapping")


def parse_rule(text: str, *, file: str = "<rule>") -> OpShardingRule:
    """Parse `#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} ...>`.

    The `#sdy.op_sharding_rule<` ... `>` wrapper is optional. Raises `ParseError` with a column.
    """
    return _RuleParser(text, file).rule()
