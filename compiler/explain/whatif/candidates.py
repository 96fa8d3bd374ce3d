"""The changes worth measuring for one collective, and the measured ones that help.

    for s in suggest(whatif, explanation, n=3):     # best first
        print(s.text())   # 'constrain %7 to <@m, [{"dp"}, {"tp"}]> ...: -16.0 KiB moved ...'

For a collective that lays value `%u` out as its consumer needs, the candidates are:

- a `sharding_constraint` on `%u` (the value the program made, before any collective) to the
  layout the consumer needs: `%u` is then made that way, if its producers can;
- when `%u` holds partial sums, a constraint that also splits a dim over the summed axes (the
  reduction becomes a reduce_scatter);
- when `%u` is an argument, that layout as its `in_sharding`;
- when the consumer is the function's result, the layout `%u` has as its `out_sharding`;
- for each argument whose `in_sharding` makes the consumer need its layout (an end of the
  explanation's chains), that `in_sharding` without the axes that force the collective.

Each is measured (engine.py); a suggestion is a candidate that lowers the bytes moved per
device, ordered by that, then by the peak memory change.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.explain.collectives import CollectiveExplanation
from shardc.explain.decisions import Names, loc_text
from shardc.explain.graph import fmt_bytes
from shardc.explain.sides import original
from shardc.explain.whatif.changes import Change, closed_layout
from shardc.explain.whatif.engine import Measurement, WhatIf
from shardc.ir.core import Function, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.passes.reshard.reshards.provenance import ReshardCause, ReshardReason


def _signed(n: int) -> str:
    return ("+" if n > 0 else "-" if n < 0 else "±") + fmt_bytes(abs(n))


@dataclass(frozen=True)
class Suggestion:
    """A measured change that lowers the bytes moved (engine.py's `Measurement`)."""

    measured: Measurement

    @property
    def change(self) -> Change:
        return self.measured.change

    def text(self) -> str:
        m = self.measured
        return (f"{m.change.text()}: {_signed(m.comm_delta)} moved per device, "
                f"{_signed(m.peak_delta)} peak memory ({m.how})")

    def to_json(self) -> dict[str, object]:
        m = self.measured
        return {"change": m.change.to_json(), "comm_bytes_delta": m.comm_delta,
                "ring_bytes_delta": m.ring_delta, "peak_memory_delta": m.peak_delta,
                "measured": m.how}


def _without_unreduced(m: NamedMapping) -> NamedMapping:
    return closed_layout(m.replace(unreduced=()))


def _split_over(m: NamedMapping, axes, shape: tuple[int, ...]) -> NamedMapping | None:
    """`m` with its first unsharded dim that the axes divide split over them."""
    size = 1
    for a in axes:
        size *= a.axis_size(m.mesh)
    for d, dim in enumerate(m.dims):
        if not dim.axes and shape[d] % size == 0:
            return closed_layout(m.with_dim(d, DimSharding(tuple(axes), True)))
    return None


def candidates(whatif: WhatIf, e: CollectiveExplanation, names: Names) -> list[Change]:
    """The changes to measure for the collective `e` explains (see the module docstring)."""
    op = e.op
    cause = op.cause if op is not None else None
    if not isinstance(cause, ReshardCause):
        return []
    base = whatif.base
    u = original(cause.value)
    need = _without_unreduced(cause.target)
    have = u.mapping
    out: list[Change] = []
    written = base.input_value(u)
    label, where = names(u), loc_text(u.defining_op)
    if written is not None:
        if have is None or closed_layout(have) != need:
            out.append(Change.constraint(u, need, label, where))
        if have is not None and have.unreduced:
            split = _split_over(need, have.unreduced, u.type.shape)
            if split is not None:
                out.append(Change.constraint(u, split, label, where))
    if u.is_argument and written is not None:
        func = u.owner
        assert isinstance(func, Function)
        out.append(Change.in_sharding(func, u.index, need, label))
    if cause.reason is ReshardReason.RESULT and have is not None:
        func = cause.consumer.function
        if func is not None:
            out.append(Change.out_sharding(func, cause.operand, _without_unreduced(have)))
    out += _relaxed_arguments(e, need, have, names)
    seen: set[tuple] = set()
    unique = []
    for c in out:
        if c.key not in seen:
            seen.add(c.key)
            unique.append(c)
    return unique


def _relaxed_arguments(e: CollectiveExplanation, need: NamedMapping, have: NamedMapping | None,
                       names: Names) -> list[Change]:
    """The arguments the consumer's side ends at, without the axes the collective brings in."""
    brought = {a.name for a in need.used_axes()} - (
        {a.name for a in have.used_axes()} if have is not None else set())
    out: list[Change] = []
    for reason in e.needs:
        root = reason.chain[-1] if reason.chain else None
        arg = root.subject if root is not None else None
        if not isinstance(arg, Value) or not arg.is_argument or arg.mapping is None:
            continue
        m = arg.mapping
        dims = [DimSharding(tuple(a for a in d.axes if a.name not in brought), True)
                for d in m.dims]
        relaxed = closed_layout(m.with_dims(dims))
        if relaxed != closed_layout(m):
            func = arg.owner
            assert isinstance(func, Function)
            out.append(Change.in_sharding(func, arg.index, relaxed, names(arg)))
    return out


def suggest(whatif: WhatIf, e: CollectiveExplanation, names: Names, n: int
            ) -> list[Suggestion]:
    """Up to `n` measured changes that lower the bytes moved, best first."""
    found = []
    for change in candidates(whatif, e, names):
        m = whatif.measure(change)
        if m is not None and m.comm_delta < 0:
            found.append(Suggestion(m))
    found.sort(key=lambda s: (s.measured.comm_delta, s.measured.peak_delta,
                              s.measured.ring_delta))
    return found[:n]
