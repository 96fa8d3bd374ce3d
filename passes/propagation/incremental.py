"""Propagating again from a few changed values of an already propagated module, undoably.

    again = Repropagation(module)            # module: propagated, every sharding decided
    again.set_value(v, mapping)              # a new annotation (a refinement of what it has)
    changed = again.run([v])                 # the values whose sharding changed, and...
    again.clean                              # ...whether every visit was a join (audit.py)
    again.undo()                             # the module as it was

The worklist starts at the neighbours of the changed values and runs the last op-priority
stage (every factor of every op, both directions) to a fixed point, then the identity edges
between the entry function's returned values and its declared results, until neither changes.
Only what the changes reach is visited. When the first propagation and this one were both joins
(audit.py), the result is what propagating the changed module from scratch gives; the caller
checks `clean` and the first run's audit before relying on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType, TensorType
from shardc.passes.propagation.audit import ChoiceAudit, MadeChoice
from shardc.passes.propagation.driver import Driver
from shardc.passes.propagation.edges import sync_func_results
from shardc.passes.propagation.priorities import NUM_STAGES, stage_direction
from shardc.passes.propagation.state import PropagationState, Site, build_state, mapping_of
from shardc.passes.propagation.strategies import strategy_named


class _FromChanges(Driver):
    """The driver of the last stage, started from the neighbours of some values; every change
    goes to the undo log first."""

    def __init__(self, again: Repropagation):
        state = again.state
        super().__init__(state, stage_direction(NUM_STAGES - 1, state.erased), "what-if")
        self.again = again

    def update(self, v: Value, mapping: NamedMapping, via: Operation | None) -> None:
        self.again.remember(v)
        super().update(v, mapping, via)

    def run_from(self, values: Iterable[Value]) -> None:
        self._stack = []
        starts = list(values)
        for v in starts:
            self._notify_value(v)
        for func in self.state.module.functions.values():
            self.again.remember_results(func)
        # The returned values whose result edge may move: the starts, then what changed.
        synced: set[int] = {id(v) for v in starts}
        try:
            while True:
                stack = self._stack
                while stack:
                    item = stack.pop()
                    item.queued = False
                    if item.__class__ is Site and id(item.op) in self._erased:  # type: ignore[union-attr]
                        continue
                    self._visit(item)
                sync_func_results(self, synced | self.again.touched())
                if not self._stack:
                    return
        finally:
            # A run stopped at a choice leaves items queued: the next run must see them free.
            for item in self._stack:
                item.queued = False
            self._stack = []
            self._current = None


class Repropagation:
    """Undoable propagation from changes (see the module docstring). The state (each op's
    site, the memo of factor propagation) is kept from one run to the next."""

    def __init__(self, module: Module, strategy: str = "aggressive", conservative: bool = False):
        self.module = module
        for op in module.walk():
            op.scratch = None  # sites another run left (each op's site belongs to one state)
        self.state: PropagationState = build_state(
            module, strategy_named(strategy), conservative=conservative
        )
        self.state.audit = ChoiceAudit(stop=True)
        self._values: dict[int, tuple[Value, NamedMapping | None]] = {}
        self._results: dict[str, tuple[Function, list[TensorType]]] = {}

    @property
    def supported(self) -> str | None:
        """Why this module cannot be re-propagated (None: it can): the driver's data-flow edges,
        manual computations and sharding groups are not watched by the audit."""
        state = self.state
        if state.regions.edges or state.regions.functions:
            return "it has data-flow ops (while, case, calls, optimization barriers)"
        if state.manual is not None and (state.manual.args or state.manual.bodies):
            return "it has manual computations"
        if state.groups:
            return "it has sharding groups"
        return None

    @property
    def clean(self) -> bool:
        audit = self.state.audit
        return audit is not None and audit.clean

    # ----- changes --------------------------------------------------------------------------

    def remember(self, v: Value) -> None:
        if id(v) not in self._values:
            self._values[id(v)] = (v, mapping_of(v))

    def touched(self) -> set[int]:
        """Ids of the values changed since the last `undo`."""
        return set(self._values)

    def remember_results(self, func: Function) -> None:
        if func.name not in self._results:
            self._results[func.name] = (func, list(func.result_types))

    def rewired(self, ops: Iterable[Operation]) -> None:
        """`ops` read other values now (an op was put between them and a value): their sites,
        which keep the operands they were made with, are made again at the next visit."""
        for op in ops:
            op.scratch = None

    def set_value(self, v: Value, mapping: NamedMapping) -> None:
        self.remember(v)
        v.set_mapping(mapping)

    def set_result(self, func: Function, index: int, mapping: NamedMapping | None) -> None:
        self.remember_results(func)
        t = func.result_types[index]
        func.result_types[index] = DistributedTensorType(t.shape, t.dtype, mapping)

    def run(self, starts: Iterable[Value]) -> list[Value]:
        """Propagate from the neighbours of `starts` to a fixed point; the values whose
        sharding is now different, in the order they first changed."""
        audit = self.state.audit
        assert audit is not None
        audit.choices, audit.first_choice, audit.unaudited = 0, None, []
        with contextlib.suppress(MadeChoice):  # `clean` says so; the caller undoes
            _FromChanges(self).run_from(starts)
        return [v for v, old in self._values.values() if mapping_of(v) != old]

    def changed_results(self) -> list[tuple[Function, int]]:
        out = []
        for func, old in self._results.values():
            out += [(func, i) for i, (a, b) in enumerate(zip(old, func.result_types)) if a != b]
        return out

    def undo(self) -> None:
        """Every sharding and declared result back as it was before the first change."""
        for v, old in self._values.values():
            v.set_mapping(old)
        for func, old in self._results.values():
            func.result_types[:] = old
        self._values.clear()
        self._results.clear()

    def release(self) -> None:
        self.state.release()
