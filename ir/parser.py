"""Native text -> `Module`: `parse_module(text, filename)`, verified unless `verify=False`.

Most modules are read by the line reader (line_parser.py); what it does not take, by the lark
grammar (grammar_parser.py, imported only then: loading lark and building its parser costs
~0.07 CPU s, several percent of a small model's `shardc.jit` first call). Every error is a
`ParseError`/`VerifyError`/`ShardingError` located at `file:line:col`.
"""

from __future__ import annotations

from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits, check_module, check_source
from shardc.ir.line_parser import Unsupported, read_lines


def parse_module(
    text: str, filename: str = "<input>", *, verify: bool = True, limits: Limits = DEFAULT_LIMITS
) -> Module:
    """Parse native IR text into a verified `Module` (within `limits`: ir/limits.py). Most
    modules are read by the line reader (line_parser.py); what it does not take, by the grammar."""
    check_source(text, filename, limits)
    try:
        module = read_lines(text, filename)
    except Unsupported:
        from shardc.ir.grammar_parser import parse_with_grammar

        module = parse_with_grammar(text, filename)
    try:
        check_module(module, limits)
    except ShardcError as e:
        raise e.with_location(None, text) from None
    if verify:
        from shardc.ir.verifier import verify_module

        try:
            verify_module(module)
        except ShardcError as e:
            raise e.with_location(None, text) from None
    return module
