"""Op sharding rules: factors, kinds, Shardy's text form and einsum-style custom rules."""

from shardc.passes.propagation.rules.einsum import rule_from_einsum
from shardc.passes.propagation.rules.rule import (
    FactorKind,
    OpShardingRule,
    TensorMapping,
    factor_symbol,
)
from shardc.passes.propagation.rules.rule_parser import parse_rule

__all__ = [
    "FactorKind",
    "OpShardingRule",
    "TensorMapping",
    "factor_symbol",
    "parse_rule",
    "rule_from_einsum",
]
