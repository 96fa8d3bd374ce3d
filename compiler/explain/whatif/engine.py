"""Measuring a change: re-propagating from the changed value when that gives what compiling
would, compiling the changed program otherwise.

    whatif = WhatIf(compile_baseline(module, options))
    m = whatif.measure(change)     # Measurement: bytes moved, ring bytes, peak; how it was found
    whatif.counts                  # how many changes were re-propagated, recompiled, not made

The fast way (`how == "re-propagated"`): make the change in the copy of the program taken right
after propagation, propagate again from the changed value only (passes/propagation/
incremental.py), run the back end on the ops the change reached (region.py) and add up the
difference (delta.py); then undo the change. It is used when

- the baseline's propagation made no choice (every visit a join: passes/propagation/audit.py),
  and neither did the re-propagation;
- the change only refines what propagation had decided there (a constraint whose layout extends
  the value's, an argument or result sharding that extends the old one, no priorities);
- the module is one function without data-flow ops, and the region holds no op the back end
  rewrites beyond reshards in front of it (region.py).

Under those conditions the result is the one compiling the changed program gives (audit.py
says why; tests/explain/test_whatif.py checks it on random programs). Otherwise the changed
program is compiled (`how == "recompiled"`). Both are measurements; nothing is estimated.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from shardc.explain.whatif.baseline import Baseline, Totals, compile_global, pair_values
from shardc.explain.whatif.changes import CONSTRAINT, IN_SHARDING, Change, add_constraint
from shardc.explain.whatif.delta import BaselineIndex
from shardc.explain.whatif.memory import GapOverflow
from shardc.explain.whatif.region import Region, Unsupported, region_ops
from shardc.ir.axis_refs import PrefixStatus, prefix_status
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.passes.propagation.incremental import Repropagation

REPROPAGATED, RECOMPILED = "re-propagated", "recompiled"


@dataclass(frozen=True)
class Measurement:
    """What a change does to the whole program, per device: bytes moved by collectives, their
    ring-model bytes, the peak of live memory (each as a difference from the baseline), and
    how it was found (`REPROPAGATED` or `RECOMPILED`)."""

    change: Change
    comm_delta: int
    ring_delta: int
    peak_delta: int
    how: str


def refines(old: NamedMapping | None, new: NamedMapping) -> bool:
    """`new` keeps every axis `old` has, in place, and may add more (a closed `new`)."""
    if old is None:
        return True
    if old.mesh != new.mesh or old.rank != new.rank or old.unreduced:
        return False
    if any(d.priority for d in old.dims):
        return False
    used = {a.name for a in new.used_axes()}
    if any(a.name in used for a in old.replicated):
        return False
    return all(
        prefix_status(a.axes, b.axes) in (PrefixStatus.EQUAL, PrefixStatus.STRICT_PREFIX)
        for a, b in zip(old.dims, new.dims, strict=True)
    )


class _Recompile(Exception):
    """The fast way does not apply to this change."""


class WhatIf:
    """Measures changes to one compiled program (see the module docstring)."""

    def __init__(self, base: Baseline):
        self.base = base
        self.counts: Counter[str] = Counter()
        self._cache: dict[tuple, Measurement | None] = {}
        self._again: Repropagation | None = None
        self._index: BaselineIndex | None = None
        self.why_not_fast = self._why_not_fast()

    def _why_not_fast(self) -> str | None:
        base = self.base
        if base.propagated is None:
            return "the pipeline has no propagation pass"
        if not base.audit.clean:
            return "the program's propagation made choices (conflicts, priorities)"
        if len(base.propagated.functions) != 1:
            return "the program has several functions"
        if any(m.is_maximal for m in base.propagated.meshes.values()):
            return "the program has a single-device mesh"
        self._again = Repropagation(base.propagated, *self._strategy())
        reason = self._again.supported
        if reason is not None:
            return reason
        try:
            self._index = BaselineIndex(base)
        except GapOverflow:
            return "an op has too many collectives in front of it"
        return None

    def _strategy(self) -> tuple[str, bool]:
        return self.base.options.strategy, False

    def measure(self, change: Change) -> Measurement | None:
        """The change's effect, or None when the program cannot be compiled with it."""
        key = change.key
        if key in self._cache:
            return self._cache[key]
        found: Measurement | None = None
        if self.why_not_fast is None:
            try:
                found = self._repropagate(change)
                self.counts[REPROPAGATED] += 1
            except (_Recompile, Unsupported, GapOverflow) as e:
                self.counts["fast path: " + (str(e) or type(e).__name__)] += 1
                found = None
        if found is None:
            found = self._recompile(change)
            self.counts[RECOMPILED if found is not None else "not compilable"] += 1
        self._cache[key] = found
        return found

    # ----- recompiling -------------------------------------------------------------------------

    def _recompile(self, change: Change) -> Measurement | None:
        base = self.base
        module = base.input.clone()
        copies = {id(a): b for a, b in pair_values(base.input, module)}

        def value_of(v: Value) -> Value | None:
            original = base.input_value(v)
            return None if original is None else copies.get(id(original))

        try:
            change.apply(module, value_of)
            totals = Totals.of(compile_global(module, base.options))
        except (KeyError, ShardcError):
            return None
        old = base.totals
        return Measurement(change, totals.comm_bytes - old.comm_bytes,
                           totals.ring_bytes - old.ring_bytes,
                           totals.peak_bytes - old.peak_bytes, RECOMPILED)

    # ----- re-propagating ---------------------------------------------------------------------

    def _repropagate(self, change: Change) -> Measurement:
        base, again, index = self.base, self._again, self._index
        assert again is not None and index is not None and base.propagated is not None
        func = base.propagated.functions[change.function]
        constraint: Operation | None = None
        starts: list[Value] = []
        try:
            if change.kind == CONSTRAINT:
                constraint = self._constrain(change, starts)
            elif change.kind == IN_SHARDING:
                arg = func.args[change.index]
                if not refines(arg.mapping, change.mapping):
                    raise _Recompile("the argument's new sharding drops an axis")
                again.set_value(arg, change.mapping)
                starts.append(arg)
            else:
                old = getattr(func.result_types[change.index], "mapping", None)
                if not refines(old, change.mapping):
                    raise _Recompile("the result's new sharding drops an axis")
                again.set_result(func, change.index, change.mapping)
                ret = func.return_op
                assert ret is not None
                starts.append(ret.operand(change.index))
            changed = again.run(starts)
            if not again.clean:
                raise _Recompile("the re-propagation made a choice")
            extra = [constraint] if constraint is not None else []
            if again.changed_results() and func.return_op is not None:
                extra.append(func.return_op)
            touched = changed + [v for v in starts]
            ops, values = region_ops(touched, extra)
            region = Region(func, ops, base.back_end)
            delta = index.measure(region, values, constraint)
        finally:
            again.undo()
            if constraint is not None:
                users = constraint.result.users
                constraint.result.replace_all_uses_with(constraint.operand(0))
                constraint.erase()
                again.rewired(users)
        old = base.totals
        return Measurement(change, delta.comm, delta.ring, delta.peak - old.peak_bytes,
                           REPROPAGATED)

    def _constrain(self, change: Change, starts: list[Value]) -> Operation:
        """Add the change's constraint to the propagated copy, as `apply-sharding-constraints`
        would have taken it: a value the input left unsharded takes the constraint's layout."""
        base, again = self.base, self._again
        assert again is not None and change.value is not None
        v = base.copy_value(change.value)
        written = base.input_value(change.value)
        if v is None or written is None or not v.uses:
            raise _Recompile("the value is not one the program wrote, or is unused")
        if any(u.op.name == CONSTRAINT for u in written.uses) or any(
            u.op.name == CONSTRAINT for u in v.uses
        ):
            raise _Recompile("the value has a constraint already")
        if written.mapping is None:
            if not refines(v.mapping, change.mapping):
                raise _Recompile("the constraint drops an axis propagation gave the value")
            again.set_value(v, change.mapping)
        op = add_constraint(v, change.mapping)
        again.rewired(op.result.users)
        starts += [v, op.result]
        return op
