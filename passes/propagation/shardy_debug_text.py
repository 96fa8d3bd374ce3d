"""The text of Shardy's propagation debugging attributes, as Shardy prints them
(`source_sharding.cc`'s `createPropagationEdges` and `saveShardingOriginsOnModule`):

    sdy.propagation_edges = #sdy.propagation_edges<[
        {step-0 = [{"b" = result-0 -> [operand-0]}]},
        {step-2 = [{"a" = operand-0 -> [result-0]}, {"c":(1)4 = operand-0 -> [result-0]}]}]>
    sdy.sharding_origins = {a = "input: 0", "c:(1)4" = "constraint_1"}

The recorder (shardy_debug.py) keeps structures; this module only renders them and reads back
the step numbers an earlier pass wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.diagnostics import PassError, VerifyError
from shardc.ir.mesh import AxisRef
from shardc.ir.propagation_edges import parse_edges, split_array

EDGES = "sdy.propagation_edges"
ORIGINS = "sdy.sharding_origins"
# MLIR prints a dictionary key bare when it is an identifier, else as a string.
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def axis_key(axis: AxisRef) -> str:
    """The key of `axis` in an origins dictionary: the axis text without quotes (`c:(1)4`)."""
    return str(axis).replace('"', "")


def origins_text(entries: Mapping[AxisRef, str], self_name: str | None = None) -> str:
    """`{a = "input: 0", "c:(1)4" = "self"}`: keys sorted; an entry naming `self_name` (the
    annotation this value is itself) reads `self`."""
    keyed = {axis_key(a): ("self" if name == self_name else name) for a, name in entries.items()}
    parts = []
    for key in sorted(keyed):
        shown = key if _BARE_KEY.fullmatch(key) else f'"{key}"'
        parts.append(f'{shown} = "{keyed[key]}"')
    return "{" + ", ".join(parts) + "}"


def edges_text(edges: Iterable[tuple[AxisRef, tuple[str, int], tuple[str, int], int]]) -> str:
    """`#sdy.propagation_edges<[...]>` of (axis, source, target, step) edges, as Shardy's
    `createPropagationEdges` builds it: an (axis, source, target) keeps its first step (the
    entry function's results are synced again at the end of every propagation), edges of a step
    are grouped by (axis, source) with their targets operands first, then index, and sorted by
    axis (sub-axes of one axis by pre-size: `"c":(1)4` before `"c":(4)2`); steps ascending."""
    first: dict[tuple, int] = {}
    for axis, source, target, step in edges:
        key = (axis, source, target)
        if key not in first or step < first[key]:
            first[key] = step
    per_step: dict[int, dict[tuple, set]] = {}
    for (axis, source, target), step in first.items():
        per_step.setdefault(step, {}).setdefault((axis, source), set()).add(target)
    steps = []
    for step in sorted(per_step):
        groups = sorted(per_step[step].items(), key=lambda g: (g[0][0].name, g[0][0].pre, g[0][1]))
        texts = []
        for (axis, (kind, index)), targets in groups:
            shown = ", ".join(f"{k}-{i}" for k, i in sorted(targets))
            texts.append(f"{{{axis} = {kind}-{index} -> [{shown}]}}")
        steps.append(f"{{step-{step} = [{', '.join(texts)}]}}")
    return "#sdy.propagation_edges<[" + ", ".join(steps) + "]>"


def array_text(elements: Iterable[str]) -> OpaqueAttr:
    return OpaqueAttr("[" + ", ".join(elements) + "]")


def array_elements(value: object, n: int) -> list[str]:
    """The elements of an existing array attribute of `n` elements (`{}` each if there is
    none or it has another length): a pass replaces only the values it recorded."""
    if isinstance(value, OpaqueAttr):
        try:
            items = split_array(value.text)
        except VerifyError:
            items = []
        if len(items) == n:
            return items
    return ["{}"] * n


def attr_text(value: object) -> str | None:
    if isinstance(value, OpaqueAttr):
        return value.text
    return value if isinstance(value, str) else None


def edges_are_empty(value: object) -> bool:
    """Is this `sdy.propagation_edges` attribute `#sdy.propagation_edges<[]>`?"""
    text = attr_text(value)
    try:
        return text is None or not parse_edges(text)
    except VerifyError:
        return False


def max_step(ops: Iterable) -> int:
    """The largest step of the `sdy.propagation_edges` of `ops` (-1 if none): the next
    propagation pass numbers its steps from there (Shardy's `getLargestStepIndex`)."""
    best = -1
    for op in ops:
        value = op.attributes.get(EDGES)
        if value is None:
            continue
        try:
            steps = parse_edges(attr_text(value) or "")
        except VerifyError as e:
            raise PassError(f"'{op.name}' op attribute '{EDGES}': {e.message}", op.loc) from None
        for step in steps:
            best = max(best, step.index)
    return best
