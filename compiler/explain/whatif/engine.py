"""Measuring a change: re-propagating from the changed value when that gives what compiling
would, compiling the changed program otherwise.

    whatif = WhatIf(compile_baseline(module, options))
    m = whatif.measure(change)     # Measurement: bytes moved, ring bytes, peak; how it was found
    whatif.counts                  # how many changes were re-propagated, recompiled, not made

The fast way (`how == "re-propagated"`): make the change in the copy of the program taken right
after propagation, take back every axis derived from what the change removes (an annotation's
old axes, the uses a constraint rewires: passes/propagation/retraction.py), propagate again
from there (passes/propagation/incremental.py), run the back end on the ops the change reached
(region.py) and add up the difference (delta.py); then undo it all. It is used when

- the baseline's propagation made no choice (every visit a join: passes/propagation/audit.py),
  and neither did the re-propagation;
- the annotations have no priorities, and every axis propagation gave has a recorded origin;
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
from shardc.passes.propagation.retraction import Retraction, cut

REPROPAGATED, RECOMPILED = "re-propagated", "recompiled"
NOT_MEASURED = "not measured (recompile budget spent)"
# How many ops changed programs may be recompiled for, in all (a count, so the answer does not
# depend on the machine): three recompiles of a 64-layer transformer training step, about two
# hundred of a one-layer one.
DEFAULT_RECOMPILE_OPS = 50_000


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


def dropped(old: NamedMapping | None, new: NamedMapping) -> list[str]:
    """The axes (`str(AxisRef)`) of `old` that `new` does not keep in place: in each dim, those
    from the first one where the two lists part."""
    if old is None:
        return []
    out: list[str] = []
    for a, b in zip(old.dims, new.dims, strict=True):
        status = prefix_status(a.axes, b.axes)
        if status in (PrefixStatus.EQUAL, PrefixStatus.STRICT_PREFIX):
            continue
        i = 0
        while i < min(len(a.axes), len(b.axes)) and a.axes[i] == b.axes[i]:
            i += 1
        out += [str(x) for x in a.axes[i:]]
    return out


class _Recompile(Exception):
    """The fast way does not apply to this change."""


class WhatIf:
    """Measures changes to one compiled program (see the module docstring)."""

    def __init__(self, base: Baseline, recompile_ops: int = DEFAULT_RECOMPILE_OPS):
        self.base = base
        self.recompile_ops = recompile_ops
        self.size = sum(len(list(f.body)) for f in base.input.functions.values())
        self.counts: Counter[str] = Counter()
        self.why_slow: Counter[str] = Counter()  # why the fast way did not apply, per change
        self._cache: dict[tuple, Measurement | None] = {}
        self._slow: set[tuple] = set()  # changes the fast way cannot measure
        self._unmeasured: set[tuple] = set()
        self._again: Repropagation | None = None
        self._index: BaselineIndex | None = None
        self._retraction: Retraction | None = None
        self._why: str | None = None
        self._checked = False

    @property
    def why_not_fast(self) -> str | None:
        """Why no change of this program can be re-propagated (None: some can); what it needs
        is built on first use."""
        if not self._checked:
            self._checked = True
            self._why = self._why_not_fast()
        return self._why

    def _why_not_fast(self) -> str | None:
        base = self.base
        origins = base.context.data.get("origins")
        if base.propagated is None or origins is None:
            return "the pipeline has no propagation pass"
        if not base.audit.clean:
            return "the program's propagation made choices (conflicts, priorities)"
        if any(d.priority for f in base.input.functions.values()
               for m in self._annotations(f) for d in m.dims):
            return "the program's annotations have priorities"
        self._retraction = Retraction(origins)
        if self._retraction.unexplained():
            return "propagation gave axes it did not record the origin of"
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

    @staticmethod
    def _annotations(func) -> list[NamedMapping]:
        values = [*func.args, *(r for op in func.body for r in op.results)]
        out = [v.mapping for v in values if v.mapping is not None]
        return out + [m for t in func.result_types if (m := getattr(t, "mapping", None))]

    def measure(self, change: Change, recompile: bool = True) -> Measurement | None:
        """The change's effect, or None when the program cannot be compiled with it (or it
        would need a recompile and `recompile` is False or the budget is spent)."""
        key = change.key
        if key in self._cache:
            return self._cache[key]
        found: Measurement | None = None
        if self.why_not_fast is None and key not in self._slow:
            try:
                found = self._repropagate(change)
                self.counts[REPROPAGATED] += 1
            except (_Recompile, Unsupported, GapOverflow) as e:
                self.why_slow[str(e) or type(e).__name__] += 1
                self._slow.add(key)
                found = None
        if found is None:
            if not recompile:
                return None
            if not self.spend(self.size):
                if key not in self._unmeasured:
                    self._unmeasured.add(key)
                    self.counts[NOT_MEASURED] += 1
                return None  # not cached: a larger budget later may measure it
            found = self._recompile(change)
            self.counts[RECOMPILED if found is not None else "not compilable"] += 1
        self._cache[key] = found
        return found

    def spend(self, ops: int) -> bool:
        """Take `ops` from the recompile budget; False (and nothing taken) if it has not that
        many left."""
        if ops > self.recompile_ops:
            return False
        self.recompile_ops -= ops
        return True

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
        pinned: set[int] = set()  # the change's own annotations stay as made
        try:
            removed: list[tuple[Value, str]] = []
            if change.kind == CONSTRAINT:
                constraint = self._constrain(change, starts, removed, pinned)
            elif change.kind == IN_SHARDING:
                arg = func.args[change.index]
                work = base.work_value(arg)
                assert work is not None
                removed += [(work, key) for key in dropped(arg.mapping, change.mapping)]
                again.set_value(arg, change.mapping)
                starts.append(arg)
                pinned.add(id(arg))
            else:
                old = getattr(func.result_types[change.index], "mapping", None)
                ret = func.return_op
                assert ret is not None
                returned = ret.operand(change.index)
                work = base.work_value(returned)
                gone = set(dropped(old, change.mapping))
                origins = base.context.data["origins"]
                for key, origin in origins.by_value.get(id(work), {}).items():
                    if origin.via == "return" and origin.source.startswith("output:") and (
                        key in gone
                    ):
                        removed.append((work, key))
                again.set_result(func, change.index, change.mapping)
                starts.append(returned)
            results = {change.index} if change.kind not in (CONSTRAINT, IN_SHARDING) else set()
            starts += self._take_back(removed, func, results, pinned)
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

    def _take_back(self, removed: list[tuple[Value, str]], func, results: set[int],
                   pinned: set[int]) -> list[Value]:
        """Cut every axis derived from `removed` out of the propagated copy (retraction.py);
        the values cut. A declared result that took its axes from the value it returns is cut
        with it (`results`: the ones the change itself declares, left alone)."""
        base, again, retraction = self.base, self._again, self._retraction
        assert again is not None and retraction is not None
        if not removed:
            return []

        def layout(work: Value) -> NamedMapping | None:
            copy = base.copy_value(work)
            return copy.mapping if copy is not None else None

        out: list[Value] = []
        origins = base.context.data["origins"]
        ret = func.return_op
        for work, keys in retraction.of(removed, layout).values():
            copy = base.copy_value(work)
            if copy is None or copy.mapping is None:
                raise _Recompile("an axis to take back is on a value the copy does not have")
            if id(copy) in pinned:
                continue
            again.set_value(copy, cut(copy.mapping, keys))
            out.append(copy)
            if ret is None:
                continue
            for i, x in enumerate(ret.operands):
                declared = getattr(func.result_types[i], "mapping", None)
                if x is not copy or i in results or declared is None:
                    continue
                written = origins.results.get((func.name, i), {})
                if any(written.get(k) is not None and written[k].source.startswith("output:")
                       for k in keys):
                    continue  # the user's own out_sharding stays
                again.set_result(func, i, cut(declared, keys))
        return out

    def _constrain(self, change: Change, starts: list[Value],
                   removed: list[tuple[Value, str]], pinned: set[int]) -> Operation:
        """Add the change's constraint to the propagated copy, as `apply-sharding-constraints`
        would have taken it (a value the input left unsharded takes the constraint's layout);
        what propagation carried over the uses it rewires goes in `removed`."""
        base, again, origins = self.base, self._again, self.base.context.data["origins"]
        assert again is not None and change.value is not None
        v = base.copy_value(change.value)
        written = base.input_value(change.value)
        if v is None or written is None or not v.uses:
            raise _Recompile("the value is not one the program wrote, or is unused")
        if any(u.op.name == CONSTRAINT for u in written.uses) or any(
            u.op.name == CONSTRAINT for u in v.uses
        ):
            raise _Recompile("the value has a constraint already")
        work = change.value
        neighbours = {id(base.work_value(x)) for u in v.uses for x in (*u.op.operands,
                                                                       *u.op.results)}
        neighbours.discard(id(work))
        for key, n in origins.came_from(work).items():
            if id(n) in neighbours:
                removed.append((work, key))
        for u in v.uses:
            for x in (*u.op.operands, *u.op.results):
                xw = base.work_value(x)
                if xw is None or xw is work:
                    continue
                removed += [(xw, key) for key, n in origins.came_from(xw).items() if n is work]
        op = add_constraint(v, change.mapping)
        again.rewired(op.result.users)
        starts += [v, op.result]
        pinned.add(id(op.result))
        if written.mapping is None:
            removed += [(work, key) for key in dropped(v.mapping, change.mapping)]
            again.set_value(v, change.mapping)
            pinned.add(id(v))  # the constraint's layout is its annotation now
        func = base.propagated.functions[change.function]  # type: ignore[union-attr]
        ret = func.return_op
        if ret is not None:
            # A result that returned `v` returns the constraint now: it starts again from what
            # the user declared, and takes the constraint's layout through propagation.
            declared = base.input.functions[change.function].result_types
            for i, x in enumerate(ret.operands):
                if x is op.result:
                    again.set_result(func, i, getattr(declared[i], "mapping", None))
        return op
