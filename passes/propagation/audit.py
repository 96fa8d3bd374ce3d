"""Whether a propagation made any *choice*: the condition under which propagating again from
its result, with one more annotation, gives what propagating from scratch would.

A visit of an op is a **join** when, for every factor it may move, the tensors' axes for the
factor are pairwise prefix-compatible and every tensor that may still gain (its factor open,
without overflow) ends with exactly the compatible axes the strategy computed. Closed tensors
keep theirs: that does not depend on the order of visits. Anything else is a **choice** the
order of visits could change: a conflict between two tensors' axes, an axis cut because another
factor took it, a sub-axis cut for divisibility, the element-wise cap, a priority round's
withheld axes.

If every visit of a run was a join, the run computed the least fixed point above its
annotations of a monotone operator (each tensor's factor the join of its neighbours', closed
tensors fixed), which does not depend on the order of visits. Add an annotation that only
*refines* what the run decided (a constraint, an argument or result sharding with more axes),
propagate again from the old result, and if that run is a join too, it reaches the least fixed
point above the new annotations: what a propagation from scratch reaches (every state of that
run stays below the new result, where no visit can meet a conflict). `ChoiceAudit` records the
joins; compiler/explain/whatif/ relies on it to re-propagate from a changed value instead of
recompiling, and recompiles whenever either run made a choice.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.axis_refs import PrefixStatus, prefix_status
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.passes.propagation.conflicts import compatible_major_axes
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.projection import ShardingProjection, common_mesh
from shardc.passes.propagation.rules.rule import OpShardingRule

NONE = PropagationDirection.NONE
NOT_A_PREFIX = PrefixStatus.NOT_A_PREFIX


def _compatible(a: Sequence, b: Sequence) -> bool:
    return prefix_status(a, b) is not NOT_A_PREFIX or prefix_status(b, a) is not NOT_A_PREFIX


def is_join(
    rule: OpShardingRule,
    directions: Sequence[PropagationDirection],
    before: tuple[Sequence[NamedMapping | None], Sequence[NamedMapping | None]],
    after: tuple[Sequence[NamedMapping | None], Sequence[NamedMapping | None]],
) -> bool:
    """Whether propagating through `rule` from the `before` (operands, results) mappings to the
    `after` ones was a join (see the module docstring)."""
    mesh = common_mesh((*before[0], *before[1]))
    if mesh is None or mesh.is_maximal:
        return True  # nothing propagates
    try:
        old = ShardingProjection.build(before[0], before[1], rule, mesh).tensors
        new = ShardingProjection.build(after[0], after[1], rule, mesh).tensors
        projection = ShardingProjection.build(before[0], before[1], rule, mesh)
    except ShardcError:
        return False
    for f, direction in enumerate(directions):
        if direction is NONE:
            continue
        lists = [t.factors[f].axes for t in old if f in t.factors]
        for i in range(len(lists)):
            for j in range(i):
                if not _compatible(lists[i], lists[j]):
                    return False
        driven = tuple(compatible_major_axes(projection, f, direction))
        for t_old, t_new in zip(old, new, strict=True):
            fs = t_old.factors.get(f)
            if fs is None:
                continue
            got = tuple(t_new.factors[f].axes)
            if fs.is_closed or fs.overflow:
                if got != tuple(fs.axes):
                    return False
                continue
            grows = prefix_status(fs.axes, driven) is PrefixStatus.STRICT_PREFIX
            if got != (driven if grows else tuple(fs.axes)):
                return False
    return True


class MadeChoice(Exception):
    """A watched propagation made a choice and was asked to stop at the first one."""


class ChoiceAudit:
    """Watches one propagation (`PropagationState.audit`) for choices.

    The driver reports every visit that reached factor propagation; a visit's verdict depends
    only on its memo key (the op's rule, directions and mappings), so it is computed once per
    key. `choices` counts the visits that were not joins, `first_choice` is the first such op;
    `unaudited` names a part of the run the audit cannot see (data-flow edges through manual
    computations, conflicting sharding groups, erased dead ops), which counts as a choice."""

    def __init__(self, stop: bool = False) -> None:
        self.stop = stop  # raise `MadeChoice` at the first choice (its run is of no use then)
        self.verdicts: dict[tuple, bool] = {}
        self.choices = 0
        self.first_choice: Operation | None = None
        self.conflicted: set[int] = set()  # ids of the ops a choice was made at
        self.unaudited: list[str] = []

    @property
    def clean(self) -> bool:
        """Every visit was a join and nothing escaped the audit."""
        return self.choices == 0 and not self.unaudited

    def visit(self, key: tuple, op: Operation | None, rule: OpShardingRule,
              directions: Sequence[PropagationDirection],
              before: tuple[Sequence[NamedMapping | None], Sequence[NamedMapping | None]],
              after: tuple[Sequence[NamedMapping | None], Sequence[NamedMapping | None]]
              ) -> None:
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = is_join(rule, directions, before, after)
        if not verdict:
            self.choices += 1
            if op is not None:
                self.conflicted.add(id(op))
            if self.first_choice is None:
                self.first_choice = op
            if self.stop:
                raise MadeChoice

    def escaped(self, what: str) -> None:
        if what not in self.unaudited:
            self.unaudited.append(what)
