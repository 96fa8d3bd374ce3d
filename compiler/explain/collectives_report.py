"""`shardc explain --collectives`, as one object: every collective explained, with measured
suggestions (`suggest` > 0) and the lints.

    report = collectives_report(module, CompileOptions(), suggest=3)
    print(report.text())             # or json.dumps(report.to_json())
    report.explanations[0].needs     # collectives.py's CollectiveExplanation
    report.suggestions[0]            # whatif/candidates.py's Suggestion, best first

Suggestions are measured in two passes over the collectives: first every candidate the fast
way can measure (whatif/engine.py), then, in program order, those that need a recompile, as
long as the recompile budget lasts (`recompile_ops`, counted in ops, so the answer is the same
on any machine). `measurements` says how many were measured each way and how many were not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shardc.explain.collectives import CollectiveExplanation, collective_text, explain_collectives
from shardc.explain.decisions import Names
from shardc.explain.graph import fmt_bytes
from shardc.explain.lints import Lint, lint_program
from shardc.explain.whatif.baseline import Baseline, compile_baseline
from shardc.explain.whatif.candidates import Suggestion, candidates, suggest
from shardc.explain.whatif.engine import DEFAULT_RECOMPILE_OPS, WhatIf
from shardc.ir.core import Module
from shardc.pipeline import CompileOptions


@dataclass
class CollectivesReport:
    """See the module docstring."""

    base: Baseline
    explanations: list[CollectiveExplanation]
    suggestions: list[list[Suggestion]] = field(default_factory=list)
    lints: list[Lint] = field(default_factory=list)
    measurements: dict[str, int] = field(default_factory=dict)
    fast_path: str = ""

    def __len__(self) -> int:
        return len(self.explanations)

    def text(self) -> str:
        out = []
        total = sum(e.bytes_per_device for e in self.explanations)
        out.append(f"{len(self.explanations)} collectives, {fmt_bytes(total)} per device")
        for i, e in enumerate(self.explanations):
            out.append("")
            out.append(collective_text(e))
            for s in self.suggestions[i] if i < len(self.suggestions) else ():
                out.append(f"  suggest: {s.text()}")
        if self.measurements:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(self.measurements.items()))
            out += ["", f"changes measured: {counts}"
                    + (f" (no re-propagation: {self.fast_path})" if self.fast_path else "")]
        if self.lints:
            out += ["", f"lints ({len(self.lints)}):"] + [f"  {lint.text()}" for lint in self.lints]
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        rows = []
        for i, e in enumerate(self.explanations):
            row = e.to_json()
            if self.suggestions:
                row["suggestions"] = [s.to_json() for s in self.suggestions[i]]
            rows.append(row)
        out: dict[str, Any] = {
            "collectives": rows,
            "total_comm_bytes": self.base.totals.comm_bytes,
            "peak_memory_bytes_per_device": self.base.totals.peak_bytes,
            "lints": [lint.to_json() for lint in self.lints],
        }
        if self.measurements:
            out["measurements"] = dict(self.measurements)
            out["fast_path"] = self.fast_path or "used"
        return out


def collectives_report(module: Module, options: CompileOptions | None = None, *,
                       suggest_n: int = 0, lint: bool = True,
                       recompile_ops: int = DEFAULT_RECOMPILE_OPS) -> CollectivesReport:
    """Compile `module` and explain its collectives (see the module docstring)."""
    base = compile_baseline(module, options or CompileOptions())
    origins = base.context.data.get("origins")
    explanations = explain_collectives(base.module, origins, base.audit.conflicted)
    report = CollectivesReport(base, explanations)
    whatif = WhatIf(base, recompile_ops) if (suggest_n or lint) else None
    if suggest_n and whatif is not None:
        names = Names(base.module)
        for e in explanations:  # the fast way first, for all of them
            for change in candidates(whatif, e, names):
                whatif.measure(change, recompile=False)
        report.suggestions = [suggest(whatif, e, names, suggest_n) for e in explanations]
        report.fast_path = whatif.why_not_fast or ""
    if lint:
        report.lints = lint_program(base, explanations, whatif)
    if whatif is not None and suggest_n:
        report.measurements = dict(whatif.counts)
    return report
