"""Parsing Shardy's text of an op sharding rule back into an `OpShardingRule`::

    #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>

Errors are `ParseError`s that point at a column of the text.
"""

from __future__ import annotations

from shardc.ir.diagnostics import Location, ParseError, VerifyError
from shardc.passes.propagation.rules.rule import (
    KIND_KEYWORDS,
    RULE_PREFIX,
    START_AT_Z,
    FactorKind,
    OpShardingRule,
    TensorMapping,
    factor_symbol,
)

_MAX_INDEX = 2**63 - 1


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
                raise self.error("expecting integer after 'z_'")
            digits = self.text[start:end]
            if digits[0] == "0":
                raise self.error(
                    f"expecting positive integer without leading zeros. Received: '{digits}'")
            if int(digits) > _MAX_INDEX:
                raise self.error(f"expecting symbol index <=2^63-1. Received: '{digits}'")
            self.pos = end
            return START_AT_Z + int(digits)
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

    def keyword(self, word: str) -> bool:
        """Accept `word` when it is a whole word (`custom`, not `custom_rule`)."""
        if not self.peek(word):  # skips the white space first
            return False
        end = self.pos + len(word)
        if not (end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_")):
            self.pos = end
            return True
        return False

    def symbol_set(self) -> list[int]:
        """`{i, k}`: sorted and without repeats, as Shardy requires."""
        self.expect("{")
        out: list[int] = []
        if not self.accept("}"):
            out.append(self.symbol())
            while self.accept(","):
                out.append(self.symbol())
            self.expect("}")
        if out != sorted(out):
            raise self.error("indices of special factors must be sorted")
        if len(set(out)) != len(out):
            raise self.error("indices of special factors must be unique")
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
        # Each set at most once, in Shardy's order; then `, custom`.
        for matched in (*keywords, "blocked_propagation"):
            if not self.keyword(matched):
                continue
            self.expect("=")
            at = self.pos
            members = self.symbol_set()
            if members != sorted(members):
                raise self.error_at(at, f"{matched}: indices of special factors must be sorted")
            if len(set(members)) != len(members):
                raise self.error_at(at, f"{matched}: indices of special factors must be unique")
            for f in members:
                if f >= len(sizes):
                    raise self.error(f"index must be less than {len(sizes)}, got: {f} "
                                     f"(factor '{factor_symbol(f)}' has no size)")
                if matched == "blocked_propagation":
                    blocked.append(f)
                elif kinds[f] is not FactorKind.PASS_THROUGH:
                    raise self.error(
                        f"factor '{factor_symbol(f)}' is in two kind sets; a factor can only be "
                        "one of reduction, need_replication or permutation"
                    )
                else:
                    kinds[f] = keywords[matched]
        is_custom = False
        if self.accept(","):
            if not self.keyword("custom"):
                raise self.error("expected 'custom'")
            is_custom = True
        if wrapped:
            self.expect(">")
        if not self.at_end():
            raise self.error(f"unexpected text '{self.text[self.pos : self.pos + 12]}'")
        try:
            rule = OpShardingRule(
                tuple(sizes), operands, results, tuple(kinds), tuple(blocked), is_custom
            )
        except VerifyError as e:
            raise ParseError(
                f"op sharding rule: {e.message}", Location(self.file, 1, 1), source=self.text
            ) from None
        return rule


def parse_rule(text: str, *, file: str = "<rule>") -> OpShardingRule:
    """Parse `#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} ...>`.

    The `#sdy.op_sharding_rule<` ... `>` wrapper is optional. Raises `ParseError` with a column.
    """
    return _RuleParser(text, file).rule()
