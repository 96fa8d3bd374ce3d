"""The two sides of a collective: the layout the value has (the producer's) and the one its
consumer needs, each with the reasons for the axes where they differ.

    sides = Sides(chains)
    have = sides.producer(cause)   # [Reason('dim 0 on "dp"', (Decision, ...)), ...]
    need = sides.consumer(cause)   # [Reason('dim 1 on "tp"', ...)]

Only the dims (and unreduced axes) where the two layouts disagree are explained: those are what
the collective moves. Each `Reason` is a chain of `Decision`s (decisions.py) ending at what the
user wrote or at a named rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.explain.decisions import Chains, Decision, at, loc_text
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.passes.analysis.cost import COLLECTIVES
from shardc.passes.propagation.factor_axes import UNSHARDABLE
from shardc.passes.propagation.projection import ShardingProjection, TensorFactorShardings
from shardc.passes.propagation.rules.rule import factor_symbol
from shardc.passes.reshard.reshards.provenance import FactorChoice, ReshardCause, ReshardReason

MAX_DEPTH = 3  # how far a chain follows one reshard into the reasons of another

_NAMED_REASONS = {
    ReshardReason.NO_RULE: ("no sharding rule", "'{op}' has no sharding rule: it computes on "
                            "replicated operands"),
    ReshardReason.CALL: ("factor rule", "the callee of '{op}' takes operand {i} as {target}"),
    ReshardReason.REGION: ("factor rule", "'{op}' passes operand {i} to its region functions, "
                           "whose argument is {target}"),
    ReshardReason.BARRIER: ("factor rule", "'{op}' keeps each value as its result: {target}"),
    ReshardReason.MANUAL: ("annotation", "manual_computation takes operand {i} as its "
                           "in_sharding {target}"),
    ReshardReason.COLLECTIVE: ("annotation", "the program's '{op}' was written for operand {i} "
                               "laid out as {target}"),
    ReshardReason.SPLIT: ("split rewrite", "insert-reshards splits '{op}' (its dim is sharded): "
                          "one step needs {target}"),
    ReshardReason.SINGLE_DEVICE: ("single-device op", "'{op}' runs on one device: its operands "
                                  "go there as {target}"),
    ReshardReason.WRITTEN: ("reshard", "the program reshards it to {target}"),
    ReshardReason.GATHERED_WEIGHT: ("gather-weights", "FSDP's plan gathers this weight to "
                                    "{target} where it is defined, once for all its uses "
                                    "(compile kept it as the cheapest; docs/spmd.md)"),
    ReshardReason.SHARED_REDUCTION: ("factor rule", "one reduction is shared by consumers that "
                                     "need {target}"),
}


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one dim (or the unreduced axes) of one side is laid out as it is."""

    subject: str
    chain: tuple[Decision, ...]

    def to_json(self) -> dict[str, object]:
        return {"subject": self.subject, "chain": [d.to_json() for d in self.chain]}


def original(v: Value) -> Value:
    """The value a chain of reshards and collectives started from."""
    seen = 0
    while seen < 64:
        d = v.defining_op
        if d is None or not (d.name == "reshard" or d.name in COLLECTIVES):
            return v
        cause = d.cause
        v = cause.value if isinstance(cause, ReshardCause) else d.operand(0)
        seen += 1
    return v


def _axes_text(axes: tuple[AxisRef, ...] | list[AxisRef]) -> str:
    return "{" + ", ".join(str(a) for a in axes) + "}"


def _differing_dims(have: NamedMapping, need: NamedMapping) -> list[int]:
    return [d for d in range(have.rank) if have.dims[d].axes != need.dims[d].axes]


def _project(choice: FactorChoice) -> list[TensorFactorShardings] | None:
    mesh = next((m.mesh for m in choice.decided if m is not None), None)
    rule = choice.rule
    n = rule.num_operands
    try:
        proj = ShardingProjection.build(
            choice.decided[:n], choice.decided[n:], rule, mesh, closed_if_missing=True
        )
    except ShardcError:  # a layout the projection cannot read: no drivers named
        return None
    return proj.tensors


def producer_choice(op: Operation) -> FactorChoice | None:
    """What insert-reshards chose for `op`'s factors, read off a reshard it made for one of
    `op`'s operands (None when it resharded none: `op` computes as propagation decided)."""
    for x in op.operands:
        d = x.defining_op
        cause = d.cause if d is not None else None
        if isinstance(cause, ReshardCause) and cause.choice is not None and any(
            c is op for c, _ in cause.consumers
        ):
            return cause.choice
    return None


def _decided_axes(choice: FactorChoice, tensor: int, dim: int) -> tuple[AxisRef, ...]:
    m = choice.decided[tensor]
    return m.dims[dim].axes if m is not None and dim < m.rank else ()


class Sides:
    """Reasons for both sides of a collective (see the module docstring)."""

    def __init__(self, chains: Chains):
        self.chains = chains
        self.names = chains.names

    # ----- the producer: the layout the value has ---------------------------------------------

    def producer(self, cause: ReshardCause, have: NamedMapping, need: NamedMapping,
                 depth: int = 0) -> list[Reason]:
        v = cause.value
        out: list[Reason] = []
        for d in _differing_dims(have, need):
            axes = have.dims[d].axes
            if axes:
                out.append(Reason(f"dim {d} on {_axes_text(axes)}",
                                  tuple(self.has_axis(v, str(axes[0]), depth))))
            else:
                out.append(Reason(f"dim {d} unsharded", tuple(self.unsharded(v, d))))
        dropped = [a for a in have.unreduced if a not in need.unreduced]
        if dropped:
            out.append(Reason(f"unreduced over {_axes_text(dropped)}",
                              tuple(self.partial_sums(v, dropped[0], depth))))
        return out

    def has_axis(self, v: Value, axis: str, depth: int) -> list[Decision]:
        """Why `v` (as some op reads it) has `axis`: a reshard made it so, or propagation did."""
        d = v.defining_op
        if (d is not None and isinstance(d.cause, ReshardCause)
                and (d.name == "reshard" or d.name in COLLECTIVES) and depth < MAX_DEPTH):
            cause = d.cause
            names = self.names
            step = Decision(
                "layout",
                f"{names(v)} is {names(cause.value)} laid out as {cause.target.text()} for "
                f"'{cause.consumer.name}'{at(loc_text(cause.consumer))}",
                names(v), d.name, loc_text(d),
            )
            have = cause.value.mapping or cause.target
            for reason in self.consumer(cause, have, cause.target, depth + 1):
                if axis.split(":")[0] in reason.subject:
                    return [step, *reason.chain]
            return [step, *self.chains.axis(original(cause.value), axis)]
        return self.chains.axis(original(v), axis)

    def unsharded(self, v: Value, dim: int) -> list[Decision]:
        names = self.names
        o = original(v)
        if o.is_argument:
            return [self.chains.no_record(o, "")]
        op = o.defining_op
        assert op is not None
        choice = producer_choice(op)
        if choice is not None:
            rule = choice.rule
            r = rule.num_operands + o.index
            if o.index < rule.num_results and dim < len(rule.results[o.index]):
                for f in rule.results[o.index][dim]:
                    if not choice.axes[f]:
                        return self.unsharded_factor(op, rule, choice, _project(choice), f,
                                                     _decided_axes(choice, r, dim))
        loc = loc_text(op)
        return [Decision(
            "unannotated",
            f"no annotation reaches dim {dim} of {names(o)} = {op.name}{at(loc)}: "
            "propagation leaves it unsharded", names(o), op.name, loc,
        )]

    def partial_sums(self, v: Value, axis: AxisRef, depth: int) -> list[Decision]:
        """`v` is unreduced over `axis`: its op sums over a factor sharded on it."""
        names = self.names
        o = original(v)
        op = o.defining_op
        if op is None:
            return [self.chains.no_record(o, str(axis))]
        loc = loc_text(op)
        m = o.mapping
        kind = m.unreduced_op.value if m is not None else "sum"
        head = Decision(
            "factor rule",
            f"{names(o)} = {op.name}{at(loc)} reduces ({kind}) over a dim sharded on {axis}: "
            "each device holds a partial result", names(o), op.name, loc,
        )
        for x in op.operands:
            m = x.mapping
            if m is not None and any(a.name == axis.name for a in m.used_axes()):
                return [head, *self.has_axis(x, str(axis), depth)]
        return [head]

    # ----- the consumer: the layout it needs ---------------------------------------------------

    def consumer(self, cause: ReshardCause, have: NamedMapping, need: NamedMapping,
                 depth: int = 0) -> list[Reason]:
        op, i = cause.consumer, cause.operand
        loc = loc_text(op)
        reason = cause.reason
        target = need.text()
        if reason is ReshardReason.RULE and cause.choice is not None:
            return self.by_rule(op, i, cause.choice, have, need, depth)
        if reason is ReshardReason.RESULT:
            return [Reason("declared result", (self.result(op, i, need),))]
        if reason is ReshardReason.CONSTRAINT:
            return [Reason("constraint", (Decision(
                "sharding_constraint",
                f"sharding_constraint{at(loc)} lays {self.names(cause.value)} out as {target}",
                self.names(cause.value), "sharding_constraint", loc,
            ),))]
        kind, text = _NAMED_REASONS.get(reason, ("factor rule", "'{op}' needs {target}"))
        return [Reason(reason.value, (Decision(
            kind, text.format(op=op.name, i=i, target=target) + at(loc), "", op.name, loc,
        ),))]

    def result(self, ret: Operation, i: int, need: NamedMapping) -> Decision:
        func = ret.function
        origins = self.chains.origins
        written = False
        if func is not None and origins is not None:
            known = origins.results.get((func.name, i), {})
            written = any(o.source.startswith("output:") for o in known.values())
        loc = loc_text(ret)
        if written or need.is_fully_replicated:
            return Decision(
                "out_sharding",
                f"result {i} of @{func.name if func else '?'} is declared {need.text()} (its "
                f"out_sharding){at(loc)}", "", "return", loc,
            )
        return Decision(
            "factor rule", f"a function returns whole (reduced) values: result {i} is "
            f"{need.text()}{at(loc)}", "", "return", loc,
        )

    def by_rule(self, op: Operation, i: int, choice: FactorChoice, have: NamedMapping,
                need: NamedMapping, depth: int) -> list[Reason]:
        rule = choice.rule
        names = self.names
        loc = loc_text(op)
        tensors = _project(choice)
        n = rule.num_operands
        values = [*op.operands, *op.results]
        out: list[Reason] = []
        for d in _differing_dims(have, need):
            factors = rule.operands[i][d] if i < n else ()
            for f in factors:
                sym = factor_symbol(f)
                chosen = choice.axes[f]
                where = f"'{op.name}'{at(loc)}"
                if chosen:
                    driver = self._driver(tensors, f, chosen, i)
                    subject = f"dim {d} on {_axes_text(chosen)}"
                    if driver is None:
                        out.append(Reason(subject, (Decision(
                            "factor rule", f"{where} computes its factor {sym} sharded on "
                            f"{_axes_text(chosen)} (insert-reshards' choice among its "
                            "operands' and results' shardings)", "", op.name, loc),)))
                        continue
                    v = values[driver]
                    role = f"operand {driver}" if driver < n else f"result {driver - n}"
                    head = Decision(
                        "factor rule",
                        f"{where} computes its factor {sym} sharded on {_axes_text(chosen)}, "
                        f"as its {role} ({names(original(v))}) has it", names(original(v)),
                        op.name, loc,
                    )
                    out.append(Reason(subject, (head, *self.has_axis(
                        v if driver < n else v, str(chosen[0]), depth))))
                    continue
                out.append(Reason(f"dim {d} unsharded", tuple(
                    self.unsharded_factor(op, rule, choice, tensors, f, have.dims[d].axes)
                )))
        if have.unreduced and not need.unreduced:
            out.append(Reason("reduced", (Decision(
                "factor rule", f"'{op.name}'{at(loc)} needs whole values, not partial sums "
                "(only a sum passes them on)", "", op.name, loc),)))
        return out

    def _driver(self, tensors: list[TensorFactorShardings] | None, f: int,
                chosen: tuple[AxisRef, ...], skip: int) -> int | None:
        """The tensor (operands then results) whose decided sharding has factor `f` on `chosen`
        (results first, as insert-reshards prefers them; `skip` last)."""
        if tensors is None:
            return None
        n_total = len(tensors)
        order = [t for t in range(n_total) if t != skip] + [skip]
        for t in order:
            fs = tensors[t].factors.get(f)
            if fs is not None and tuple(fs.axes[: len(chosen)]) == tuple(chosen):
                return t
        return None

    def unsharded_factor(self, op: Operation, rule, choice: FactorChoice, tensors, f: int,
                         had: tuple[AxisRef, ...]) -> list[Decision]:
        sym = factor_symbol(f)
        loc = loc_text(op)
        where = f"'{op.name}'{at(loc)}"
        if rule.kind(f) in UNSHARDABLE:
            return [Decision(
                "factor rule", f"{where} needs its factor {sym} whole on every device "
                f"({rule.kind(f).name.lower().replace('_', ' ')})", "", op.name, loc)]
        for a in had:
            for g, axes in enumerate(choice.axes):
                if g != f and any(b.name == a.name for b in axes):
                    driver = self._driver(tensors, g, axes, -1)
                    head = Decision(
                        "factor rule", f"{where} uses {a} for its factor {factor_symbol(g)} "
                        f"instead, so factor {sym} cannot have it", "", op.name, loc)
                    if driver is None:
                        return [head]
                    v = [*op.operands, *op.results][driver]
                    return [head, *self.has_axis(v, str(axes[0]), MAX_DEPTH)]
        return [Decision(
            "factor rule", f"{where} computes its factor {sym} unsharded: its other operands "
            "and results have it so (insert-reshards follows the larger tensors)", "",
            op.name, loc)]
