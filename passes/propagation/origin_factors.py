"""Which neighbour an axis came from, by factor: the tensor of the op that has the axis on the
same factor of the op's rule as the value that took it.

    i = factor_source(rule, mappings, v_index, '"tp"')   # mappings: operands then results

`OriginTracker` (origins.py) asks this when propagation gives a value an axis through an op, so
that its record of "where from" follows the factor the axis travelled along: in
`dot(h: [{"dp"}, {"tp"}], w: [{}, {"tp"}])` the result's `"tp"` on its last dim comes from `w`
(factor n), not from `h`, whose `"tp"` is on the contracted factor.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.rule import OpShardingRule


def _factor_of(axes_by_factor: dict[int, tuple], key: str) -> int | None:
    name = key.split(":")[0]
    for f, axes in axes_by_factor.items():
        if any(str(a) == key or str(a).split(":")[0] == name for a in axes):
            return f
    return None


def factor_source(rule: OpShardingRule, mappings: Sequence[NamedMapping | None], index: int,
                  key: str) -> int | None:
    """The index (operands then results) of the tensor other than `index` that has `key` on
    the factor `mappings[index]` has it on; None if none does (or the shardings do not project
    onto the rule)."""
    n = rule.num_operands
    if len(mappings) != n + rule.num_results:
        return None
    try:
        tensors = ShardingProjection.build(mappings[:n], mappings[n:], rule).tensors
    except ShardcError:
        return None
    own = {f: fs.axes for f, fs in tensors[index].factors.items()}
    f = _factor_of(own, key)
    if f is None:
        return None
    for t, tensor in enumerate(tensors):
        fs = tensor.factors.get(f)
        if t != index and fs is not None and _factor_of({f: fs.axes}, key) == f:
            return t
    return None
