"""The decisions that gave a value its layout, as a chain ending at what the user wrote.

    chain = Chains(module, origins).axis(v, '"tp"')
    [d.text for d in chain]
    # ['%7 took "tp" from %6 through add (model.py:12:9; priority 0, op stage 1)',
    #  '%6 took "tp" from %arg1 through dot_general (model.py:11:8; ...)',
    #  'argument 1 (%arg1) is declared [{}, {"tp"}] (its in_sharding)']

A chain is a list of `Decision`s, the nearest first. Its last one is *terminal*: something
the user wrote (an argument's `in_sharding`, a result's `out_sharding`, a
`sharding_constraint`, a sharding on an op's result, a `reshard`) or a named rule (an op's
factor rule, an op without a rule, auto-shard, an unannotated value left replicated). The steps
come from propagation's `OriginTracker` (each axis's source, and the neighbour it came from) and
from the `ReshardCause` insert-reshards left on every reshard (passes/reshard/reshards/
provenance.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.printer import Namer
from shardc.passes.propagation.origins import AUTO_SHARD, Origin, OriginTracker

# Kinds of decision. The user wrote the first five; the rest are named rules.
USER_KINDS = ("in_sharding", "out_sharding", "sharding_constraint", "annotation", "reshard")
RULE_KINDS = ("factor rule", "no sharding rule", "auto-shard", "unannotated", "split rewrite",
              "single-device op", "gather-weights")
STEP_KINDS = ("propagation", "layout")  # a step on the way, never the end of a chain
TERMINAL = frozenset(USER_KINDS + RULE_KINDS)

# A long chain (an axis through a 64-layer stack) keeps this many steps next to the collective;
# the root is always kept and the steps between are counted (`Decision.skipped`).
KEEP_STEPS = 4


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision: its kind (`USER_KINDS`, `RULE_KINDS`, `STEP_KINDS`), a sentence, the value
    and op it is about, the op's source line (`file:line:col`, "" when unknown) and, on the step
    before a cut, how many steps were left out."""

    kind: str
    text: str
    value: str = ""
    op: str = ""
    loc: str = ""
    skipped: int = 0
    # The argument an `in_sharding` decision is about (what-if changes it).
    subject: Value | None = field(default=None, compare=False, repr=False)

    @property
    def terminal(self) -> bool:
        return self.kind in TERMINAL

    @property
    def user(self) -> bool:
        return self.kind in USER_KINDS

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "text": self.text}
        for key in ("value", "op", "loc"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.skipped:
            out["skipped"] = self.skipped
        return out


def loc_text(op: Operation | Function | None) -> str:
    """`file:line:col` of `op`, or "" when it has no location in a file."""
    loc = op.loc if op is not None else None
    return str(loc) if loc is not None and loc.line > 0 else ""


def arg_label(v: Value) -> str:
    """" NAME" for an argument its source named (JAX: its pytree path, `params['w1']`), else
    ""."""
    func = v.owner
    labels = func.arg_labels if isinstance(func, Function) else []
    label = labels[v.index] if v.index < len(labels) else None
    return f" {label}" if label else ""


def source_loc(*ops: Operation | Function | None) -> str:
    """`loc_text` of the first op whose location the program wrote (a JAX program's Python
    line), else of the first op that has one at all (a line of the text it was read from)."""
    for op in ops:
        if op is not None and op.loc_written and loc_text(op):
            return loc_text(op)
    return next((loc_text(op) for op in ops if loc_text(op)), "")


def call_site(func: Function | None) -> Operation | None:
    """The first op that calls `func` (JAX gives the body of a function it outlines, e.g. the
    transpose of `jnp.take`, no Python line: its call has one)."""
    module = func.module if func is not None else None
    if module is None or not func.is_private:  # type: ignore[union-attr]
        return None
    for other in module.functions.values():
        for op in other.body:
            callee = op.attributes.get("callee") if op.name == "call" else None
            if callee is not None and callee.name == func.name:  # type: ignore[union-attr]
                return op
    return None


def at(loc: str) -> str:
    return f" at {loc}" if loc else ""


class Names:
    """Printed names (`%3`, `%arg0`) of values in any function of a module."""

    def __init__(self, module: Module):
        self.module = module
        self._namers: dict[str, Namer] = {}

    def function_of(self, v: Value) -> Function | None:
        owner = v.owner
        if isinstance(owner, Function):
            return owner
        return owner.function

    def __call__(self, v: Value) -> str:
        func = self.function_of(v)
        if func is None:  # an erased op's result (a constraint insert-reshards removed, a
            # named computation propagation made of a call and turned back into one)
            if v.name_hint:
                return "%" + v.name_hint
            d = v.defining_op
            return f"(result {v.index} of a {d.name})" if d is not None else "%?"
        namer = self._namers.get(func.name)
        if namer is None or namer.names.get(id(v)) is None:
            namer = self._namers[func.name] = Namer(func)
        name = namer(v)
        return "%" + (v.name_hint or "?") if "UNKNOWN" in name else name


def _via_op(v: Value, came_from: Value | None) -> Operation | None:
    """The op an axis travelled through from `came_from` to `v` (the op of both)."""
    d = v.defining_op
    if came_from is None:
        return d
    if d is not None and (d.parent is None or any(o is came_from for o in d.operands)):
        return d  # (an op a later pass replaced has lost its operands, not its location)
    return came_from.defining_op or d


def root_decision(v: Value, origin: Origin, names: Names, written: NamedMapping | None = None
                  ) -> Decision:
    """The end of an axis's walk: the annotation it came from (or the rule that made it);
    `written` is the sharding the user wrote on `v` (priorities included), when known."""
    name = names(v)
    source = origin.source
    shown = written or v.mapping
    mapping = shown.text() if shown is not None else "[]"
    prio = f" ({origin.stage})" if "priority" in origin.stage and origin.stage else ""
    if source == AUTO_SHARD:
        return Decision("auto-shard", f"auto-shard chose it for {name}", name)
    if "input:" in source and v.is_argument:
        func = v.owner
        assert isinstance(func, Function)
        return Decision(
            "in_sharding",
            f"argument {v.index}{arg_label(v)} ({name}) of @{func.name} is declared {mapping} "
            f"(its in_sharding){prio}",
            name, "", loc_text(func), subject=v,
        )
    if source.startswith("output:"):
        return Decision(
            "out_sharding",
            f"result {source.split(':')[1].strip()} of the function is declared with this "
            f"axis (its out_sharding); {name} is what it returns",
            name, "return", loc_text(v.defining_op),
        )
    op = v.defining_op
    if source.startswith("constraint"):
        loc = loc_text(op)
        return Decision(
            "sharding_constraint",
            f"sharding_constraint{at(loc)} lays {name} out as {mapping}", name,
            "sharding_constraint", loc,
        )
    if source.startswith("%") or source.startswith("input"):
        loc = loc_text(op)
        return Decision(
            "annotation", f"{name} = {op.name if op else 'value'}{at(loc)} is written with "
            f"sharding {mapping}", name, op.name if op else "", loc,
        )
    loc = loc_text(op)
    return Decision(
        "factor rule",
        f"propagation gave {name} the axis through {op.name if op else 'its op'}{at(loc)}'s "
        "sharding rule", name, op.name if op else "", loc,
    )


class Chains:
    """Builds decision chains for axes of values of one compiled module."""

    def __init__(self, module: Module, origins: OriginTracker | None, names: Names | None = None,
                 conflicted: set[int] | None = None):
        self.module = module
        self.origins = origins
        self.names = names or Names(module)
        # Ids of the ops propagation met a conflict at (audit.py), when it was watched.
        self.conflicted = conflicted or set()

    def axis(self, v: Value, axis: str, unannotated: Callable[[Value], Decision] | None = None
             ) -> list[Decision]:
        """Why `v` has `axis` (`str(AxisRef)`), from propagation's records."""
        names = self.names
        path = self.origins.path(v, axis) if self.origins is not None else []
        if not path:
            return [unannotated(v) if unannotated is not None else self.no_record(v, axis)]
        steps: list[Decision] = []
        for i, (val, origin) in enumerate(path[:-1]):
            nxt = path[i + 1][0]
            op = _via_op(val, nxt)
            loc = loc_text(op)
            if not loc and val.is_argument:  # into a function through its call
                loc = source_loc(call_site(names.function_of(val)))
            where = "; ".join(x for x in (loc, origin.stage) if x)
            conflict = (" - the op's tensors conflicted there, and the propagation strategy "
                        "chose" if op is not None and id(op) in self.conflicted else "")
            steps.append(Decision(
                "propagation",
                f"{names(val)} took {axis} from {names(nxt)} through {origin.via}"
                + (f" ({where})" if where else "") + conflict,
                names(val), origin.via, loc,
            ))
        last = path[-1][0]
        root = root_decision(last, path[-1][1], names, self.origins.written(last)
                             if self.origins is not None else None)
        if len(steps) > KEEP_STEPS:
            skipped = len(steps) - KEEP_STEPS
            last = steps[KEEP_STEPS - 1]
            steps = steps[: KEEP_STEPS - 1] + [Decision(
                last.kind, last.text + f" ... ({skipped} more steps)", last.value, last.op,
                last.loc, skipped,
            )]
        return steps + [root]

    def no_record(self, v: Value, axis: str) -> Decision:
        """An axis propagation did not record: the value's own written sharding, or a layout
        its op's rule made (insert-reshards)."""
        names = self.names
        op = v.defining_op
        if v.is_argument:
            func = v.owner
            assert isinstance(func, Function)
            mapping = v.mapping.text() if v.mapping is not None else "[]"
            return Decision(
                "in_sharding",
                f"argument {v.index}{arg_label(v)} ({names(v)}) of @{func.name} is declared "
                f"{mapping}",
                names(v), "", loc_text(func), subject=v,
            )
        loc = loc_text(op)
        return Decision(
            "factor rule",
            f"{op.name if op else 'its op'}{at(loc)} produces {names(v)} with {axis} under its "
            "sharding rule", names(v), op.name if op else "", loc,
        )
