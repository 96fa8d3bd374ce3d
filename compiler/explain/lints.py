"""Silent sharding mistakes: nothing fails, the program just moves or keeps more than it needs.

    for lint in lint_program(base, whatif):   # base: whatif/baseline.py's Baseline
        print(lint.text())

- **replicated**: a large value left whole over a mesh axis one of its dims could be split on:
  every device along that axis keeps the same bytes (`bytes` wasted per device).
- **padding**: a dim its axes do not divide: each device's block is padded up to the largest
  (`bytes` of padding per device).
- **overridden**: an annotation the user wrote that the program undoes at every use: each
  consumer reshards the value away from it, because of another annotation of higher priority
  or a conflict the op's rule resolves the other way (`bytes` those collectives move).
- **no effect**: a `sharding_constraint` the program compiles the same without (measured by
  compiling without it, within the what-if engine's recompile budget).

"Large" is at least `LARGE_FRACTION` of the peak live memory per device (and `MIN_BYTES`).
Each lint names the value, its source line and the bytes at stake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shardc.explain.collectives import CollectiveExplanation
from shardc.explain.decisions import Names, loc_text
from shardc.explain.graph import fmt_bytes
from shardc.explain.whatif.baseline import Baseline, Totals, compile_global, pair_values
from shardc.explain.whatif.engine import WhatIf
from shardc.ir.core import Function, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.types import element_bytes
from shardc.passes.analysis.cost import local_bytes
from shardc.passes.reshard.reshards.provenance import ReshardCause

LARGE_FRACTION = 0.05
MIN_BYTES = 1024
REPLICATED, PADDING, OVERRIDDEN, NO_EFFECT = "replicated", "padding", "overridden", "no effect"


@dataclass(frozen=True)
class Lint:
    """One finding: its kind, the value (printed name), the value's source line, the bytes at
    stake per device and a sentence."""

    kind: str
    value: str
    loc: str
    bytes: int
    message: str

    def text(self) -> str:
        where = f" ({self.loc})" if self.loc else ""
        return f"{self.kind}: {self.value}{where}: {self.message} [{fmt_bytes(self.bytes)}]"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "loc": self.loc, "bytes": self.bytes,
                "message": self.message}


def _values(func: Function) -> list[Value]:
    return [*func.args, *(r for op in func.body for r in op.results)]


def replicated_values(base: Baseline, names: Names) -> list[Lint]:
    """Large values whole over an axis a dim of theirs could be split on."""
    out: list[Lint] = []
    threshold = max(MIN_BYTES, int(LARGE_FRACTION * base.totals.peak_bytes))
    for func in base.module.functions.values():
        for v in _values(func):
            m = v.mapping
            size = local_bytes(v)
            if m is None or size < threshold or base.input_value(v) is None:
                continue
            used = {a.name for a in m.used_axes()} | {a.name for a in m.unreduced}
            best: tuple[int, str, int] | None = None
            for axis, n in m.mesh.shape.items():
                if axis in used or n == 1:
                    continue
                local = [math.ceil(s / k) for s, k in zip(v.type.shape, m.shard_counts())]
                dims = [d for d, s in enumerate(local) if s % n == 0 and s >= n]
                if dims:
                    wasted = size - size // n
                    if best is None or wasted > best[0]:
                        best = (wasted, axis, dims[0])
            if best is not None:
                wasted, axis, d = best
                out.append(Lint(
                    REPLICATED, names(v), loc_text(v.defining_op), wasted,
                    f"{fmt_bytes(size)} per device, whole over axis \"{axis}\" (dim {d} could be "
                    f"split on it); sharding {m.text()}",
                ))
    return out


def padded_values(base: Baseline, names: Names) -> list[Lint]:
    """Dims their axes do not divide."""
    out: list[Lint] = []
    for func in base.module.functions.values():
        for v in _values(func):
            m = v.mapping
            if m is None:
                continue
            counts = m.shard_counts()
            bad = [d for d, (s, k) in enumerate(zip(v.type.shape, counts)) if k > 1 and s % k]
            if not bad:
                continue
            exact = math.prod(s / k for s, k in zip(v.type.shape, counts))
            waste = local_bytes(v) - math.ceil(exact * element_bytes(v.type.dtype))
            if waste <= 0:
                continue
            d = bad[0]
            axes = ", ".join(str(a) for a in m.dims[d].axes)
            out.append(Lint(
                PADDING, names(v), loc_text(v.defining_op), waste,
                f"dim {d} ({v.type.shape[d]}) is split {counts[d]} ways over {axes}, which does "
                "not divide it: each device's block is padded",
            ))
    return out


def overridden_annotations(base: Baseline, explanations: list[CollectiveExplanation],
                           names: Names) -> list[Lint]:
    """Annotated values that every consumer reshards away from what the user wrote."""
    origins = base.context.data.get("origins")
    if origins is None:
        return []
    by_value: dict[int, list[CollectiveExplanation]] = {}
    for e in explanations:
        cause = e.op.cause if e.op is not None else None
        if isinstance(cause, ReshardCause):
            by_value.setdefault(id(cause.value), []).append(e)
    out: list[Lint] = []
    for func in base.module.functions.values():
        for v in _values(func):
            written = origins.written(v)
            moved = by_value.get(id(v))
            if written is None or not moved or not written.used_axes():
                continue
            consumers = {u.op for u in v.uses}
            served = {c for e in moved for c, _ in e.op.cause.consumers}  # type: ignore[union-attr]
            if not consumers or not consumers <= served | {e.op for e in moved}:
                continue  # some use takes the value as written
            why = "a conflict the op's rule resolved the other way"
            texts = [d.text for e in moved for c in e.chains for d in c]
            prio = [d for d in written.dims if d.priority]
            if prio or any("priority" in t and "priority 0" not in t for t in texts):
                why = "an annotation of higher priority"
            moved_bytes = sum(e.bytes_per_device for e in moved)
            kinds = ", ".join(sorted({e.kind for e in moved}))
            out.append(Lint(
                OVERRIDDEN, names(v), loc_text(v.defining_op) or loc_text(func), moved_bytes,
                f"written as {written.text()}, but every use reshards it ({kinds}) because of "
                f"{why}",
            ))
    return out


def ineffective_constraints(base: Baseline, whatif: WhatIf | None, names: Names) -> list[Lint]:
    """Constraints the program compiles the same without (measured: recompiled)."""
    out: list[Lint] = []
    constraints = [op for f in base.input.functions.values() for op in f.body
                   if op.name == "sharding_constraint"]
    for op in constraints:
        if whatif is not None and not whatif.spend(whatif.size):
            break
        module = base.input.clone()
        pairs = {id(a): b for a, b in pair_values(base.input, module)}
        copy = pairs[id(op.result)].defining_op
        assert copy is not None
        copy.result.replace_all_uses_with(copy.operand(0))
        copy.erase()
        try:
            without = compile_global(module, base.options)
        except ShardcError:
            continue
        if Totals.of(without) != base.totals or _layouts(without) != _layouts(base.module):
            continue
        out.append(Lint(
            NO_EFFECT, "%" + (op.result.name_hint or "?"), loc_text(op), 0,
            f"sharding_constraint to {op.result.mapping.text() if op.result.mapping else '?'} "
            "changes nothing: the program compiles the same without it",
        ))
    return out


def _layouts(module) -> list[str]:
    """The shardings of the original ops' results, in order (constraints left out)."""
    out = []
    for func in module.functions.values():
        for op in func.body:
            if op.cause is None and op.name not in ("sharding_constraint", "reshard"):
                out += [r.mapping.text() if r.mapping else "-" for r in op.results]
    return out


def lint_program(base: Baseline, explanations: list[CollectiveExplanation],
                 whatif: WhatIf | None = None) -> list[Lint]:
    """Every lint of the compiled program, the most bytes first."""
    names = Names(base.module)
    found = (replicated_values(base, names) + padded_values(base, names)
             + overridden_annotations(base, explanations, names)
             + ineffective_constraints(base, whatif, names))
    return sorted(found, key=lambda x: (-x.bytes, x.kind, x.value))
