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
- for each argument whose `in_sharding` makes the consumer need its layout, or gives the value
  the axes the consumer cannot take (the ends of the explanation's chains), that `in_sharding`
  without those axes, and, where the consumer's rule gives the argument the dim the value has
  the axis on, with the axis moved there (the one-line fix of a mistyped PartitionSpec).

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
    used = {a.name for a in m.used_axes()}
    if any(a.name in used for a in axes):
        return None
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
    if cause.reason is ReshardReason.RULE and cause.choice is not None and have is not None:
        out += _moved_axes(cause, have, need, names)
    seen: set[tuple] = set()
    unique = []
    for c in out:
        if c.key not in seen:
            seen.add(c.key)
            unique.append(c)
    return unique


def _without(m: NamedMapping, names: set[str]) -> NamedMapping:
    return closed_layout(m.with_dims(
        [DimSharding(tuple(a for a in d.axes if a.name not in names), True) for d in m.dims]
    ))


def _relaxed_arguments(e: CollectiveExplanation, need: NamedMapping, have: NamedMapping | None,
                       names: Names) -> list[Change]:
    """The arguments the chains end at, without the axes the two sides disagree on."""
    need_axes = {a.name for a in need.used_axes()}
    have_axes = {a.name for a in have.used_axes()} if have is not None else set()
    moving = need_axes ^ have_axes
    out: list[Change] = []
    for reason in (*e.needs, *e.producer):
        root = reason.chain[-1] if reason.chain else None
        arg = root.subject if root is not None else None
        if not isinstance(arg, Value) or not arg.is_argument or arg.mapping is None:
            continue
        relaxed = _without(arg.mapping, moving)
        if relaxed != closed_layout(arg.mapping):
            func = arg.owner
            assert isinstance(func, Function)
            out.append(Change.in_sharding(func, arg.index, relaxed, names(arg)))
    return out


def _moved_axes(cause: ReshardCause, have: NamedMapping, need: NamedMapping, names: Names
                ) -> list[Change]:
    """An axis the consumer's operand cannot keep because another of the consumer's tensors,
    an argument, holds it for another factor: that argument with the axis on the dim that has
    the operand's factor instead."""
    choice = cause.choice
    assert choice is not None
    rule, op, i = choice.rule, cause.consumer, cause.operand
    values = [*op.operands, *op.results]
    out: list[Change] = []
    if i >= rule.num_operands:
        return out
    for d, (h, n) in enumerate(zip(have.dims, need.dims, strict=True)):
        lost = [a for a in h.axes if a not in n.axes]
        for a in lost:
            for f in rule.operands[i][d]:
                for t, mapping in enumerate(rule.mappings):
                    arg = original(values[t]) if t < len(values) else None
                    if arg is None or not arg.is_argument or arg.mapping is None or t == i:
                        continue
                    m = arg.mapping
                    holds = [e for e, dim in enumerate(m.dims)
                             if any(x.name == a.name for x in dim.axes)]
                    target = [e for e, dim in enumerate(mapping) if f in dim]
                    if not holds or not target or target[0] in holds:
                        continue
                    e = target[0]
                    if m.dims[e].axes or arg.type.shape[e] % a.axis_size(m.mesh):
                        continue
                    dims = [DimSharding(tuple(x for x in dim.axes if x.name != a.name), True)
                            for dim in m.dims]
                    dims[e] = DimSharding((a,), True)
                    func = arg.owner
                    assert isinstance(func, Function)
                    out.append(Change.in_sharding(func, arg.index,
                                                  closed_layout(m.with_dims(dims)), names(arg)))
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
