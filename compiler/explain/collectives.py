"""`shardc explain --collectives`: every collective of a compiled program, explained.

    explanations = explain_collectives(result.module, result.context.data.get("origins"))
    print(collectives_text(explanations))     # or collectives_json(explanations)

For each collective: its kind, axes and bytes per device (passes/analysis/cost.py's entry),
its source line, the value it moves and the op (and operand) it serves, the layout the value
has and the layout that op needs, and for each dim where they disagree the chain of decisions
behind each side (sides.py, decisions.py), ending at what the user wrote or at a named rule.

A collective knows which reshard it lowers (lower-collectives builds it with `Operation.at`),
and the reshard knows its `ReshardCause` (insert-reshards): that is the link back to the op.
A collective the program wrote itself is explained as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shardc.explain.decisions import Chains, Decision, Names, call_site, loc_text, source_loc
from shardc.explain.graph import fmt_bytes
from shardc.explain.sides import Reason, Sides, original
from shardc.ir.core import Module, Operation
from shardc.ir.printer import Namer
from shardc.passes.analysis.cost import COLLECTIVES, collective_entry
from shardc.passes.propagation.origins import OriginTracker
from shardc.passes.reshard.reshards.provenance import ReshardCause


@dataclass(frozen=True)
class CollectiveExplanation:
    """One collective and why it is there (see the module docstring). `step`/`steps`: this
    collective is step `step` of the `steps` collectives one reshard lowered to."""

    function: str
    value: str
    kind: str
    axes: tuple[str, ...]
    bytes_per_device: int
    ring_bytes_per_device: int
    loc: str
    serves: str
    consumer: str
    operand: int
    consumer_loc: str
    reason: str
    have: str
    need: str
    producer: tuple[Reason, ...]
    needs: tuple[Reason, ...]
    step: int = 1
    steps: int = 1
    op: Operation | None = field(default=None, compare=False, repr=False)

    @property
    def chains(self) -> list[tuple[Decision, ...]]:
        return [r.chain for r in (*self.producer, *self.needs)]

    def ends_at_user_or_rule(self) -> bool:
        """Every chain ends at something the user wrote or at a named rule, and the consumer
        side has at least one."""
        return bool(self.needs) and all(c and c[-1].terminal for c in self.chains)

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function, "value": self.value, "kind": self.kind,
            "axes": list(self.axes), "bytes_per_device": self.bytes_per_device,
            "ring_bytes_per_device": self.ring_bytes_per_device, "loc": self.loc,
            "serves": {"value": self.serves, "op": self.consumer, "operand": self.operand,
                       "loc": self.consumer_loc, "reason": self.reason},
            "step": self.step, "steps": self.steps,
            "have": {"layout": self.have, "why": [r.to_json() for r in self.producer]},
            "need": {"layout": self.need, "why": [r.to_json() for r in self.needs]},
        }


def explain_collectives(module: Module, origins: OriginTracker | None,
                        conflicted: set[int] | None = None) -> list[CollectiveExplanation]:
    """Every collective of `module` (the global program after the pipeline), in program order;
    `conflicted`: ids of the ops propagation met a conflict at (a `ChoiceAudit`'s)."""
    names = Names(module)
    sides = Sides(Chains(module, origins, names, conflicted))
    out: list[CollectiveExplanation] = []
    for func in module.functions.values():
        namer = Namer(func)
        groups: dict[int, list[Operation]] = {}
        ops = [op for op in func.body if op.name in COLLECTIVES]
        for op in ops:
            if isinstance(op.cause, ReshardCause):
                groups.setdefault(id(op.cause), []).append(op)
        for op in ops:
            entry = collective_entry(op, namer(op.result))
            group = groups.get(id(op.cause), [op])
            out.append(_explain(op, entry, func.name, group, names, sides))
    return out


def _explain(op: Operation, entry: dict[str, Any], function: str, group: list[Operation],
             names: Names, sides: Sides) -> CollectiveExplanation:
    loc = loc_text(op)
    common = dict(
        function=function, value=entry["value"], kind=entry["kind"],
        axes=tuple(entry["axes"]), bytes_per_device=entry["bytes_per_device"],
        ring_bytes_per_device=entry["ring_bytes_per_device"], loc=loc, op=op,
    )
    cause = op.cause
    if not isinstance(cause, ReshardCause):
        where = f" at {loc}" if loc else ""
        written = Decision("reshard", f"the program writes this {op.name}{where}",
                           entry["value"], op.name, loc)
        m = op.operand(0).mapping
        return CollectiveExplanation(
            **common, serves=names(op.operand(0)), consumer=op.name, operand=0,
            consumer_loc=loc, reason="written in the program",
            have=m.text() if m is not None else "[]",
            need=op.result.mapping.text() if op.result.mapping is not None else "[]",
            producer=(), needs=(Reason("written", (written,)),),
        )
    first = group[0]
    have = first.operand(0).mapping or cause.source
    need = cause.target
    producer = original(cause.value).defining_op
    # A JAX program gives most ops a Python line, not a private function's return: then the
    # line that made the value.
    caller = call_site(op.function) if not (op.loc_written or (
        producer is not None and producer.loc_written)) else None
    common["loc"] = source_loc(op, producer, caller)
    return CollectiveExplanation(
        **common, serves=names(cause.value), consumer=cause.consumer.name,
        operand=cause.operand, consumer_loc=source_loc(cause.consumer, producer, caller),
        reason=cause.reason.value, have=have.text(), need=need.text(),
        producer=tuple(sides.producer(cause, have, need)),
        needs=tuple(sides.consumer(cause, have, need)),
        step=group.index(op) + 1 if op in group else 1, steps=len(group),
    )


# ----- rendering ----------------------------------------------------------------------------


def _chain_lines(reason: Reason, indent: str) -> list[str]:
    lines = [f"{indent}{reason.subject}:"]
    for i, d in enumerate(reason.chain):
        mark = "<-" if i else "  "
        lines.append(f"{indent}  {mark} {d.text}")
    return lines


def collective_text(e: CollectiveExplanation) -> str:
    """One collective's explanation for people."""
    axes = ",".join(e.axes) or "-"
    step = f" (step {e.step} of {e.steps})" if e.steps > 1 else ""
    where = f" at {e.loc}" if e.loc else ""
    lines = [
        f"{e.value} = {e.kind} over {axes}{where}: {fmt_bytes(e.bytes_per_device)} per device"
        f"{step}",
        f"  moves {e.serves} for '{e.consumer}' operand {e.operand}"
        + (f" ({e.consumer_loc})" if e.consumer_loc and e.consumer_loc != e.loc else "")
        + f" [{e.reason}]",
        f"  has   {e.have}",
    ]
    for r in e.producer:
        lines += _chain_lines(r, "        ")
    lines.append(f"  needs {e.need}")
    for r in e.needs:
        lines += _chain_lines(r, "        ")
    return "\n".join(lines)


def collectives_text(explanations: list[CollectiveExplanation]) -> str:
    if not explanations:
        return "no collectives: every op computes on local data\n"
    total = sum(e.bytes_per_device for e in explanations)
    head = f"{len(explanations)} collectives, {fmt_bytes(total)} per device\n"
    return head + "\n" + "\n\n".join(collective_text(e) for e in explanations) + "\n"


def collectives_json(explanations: list[CollectiveExplanation]) -> list[dict[str, Any]]:
    return [e.to_json() for e in explanations]
