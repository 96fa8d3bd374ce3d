"""The compile report: CLI.md's JSON object, and a readable text rendering of it.

Keys may be added, never renamed (scripts rely on them): `mesh`, `collectives`,
`total_comm_bytes`, `total_ring_bytes`, `by_kind`, `by_axis`, `peak_memory_bytes_per_device`,
`values`, `warnings`, `timings_s`. Added here: `meshes` (every mesh, for multi-mesh modules),
`propagation` (op visits and priority rounds), `fallbacks` (ops without a sharding rule),
`planner_fallbacks` (reshards whose plan search the budget cut: value, location, from, to, cost,
greedy_cost, edges_searched, budget), `reshard_plans` (every lowered reshard's collectives and
bytes under both reshard algorithms: shardc's cheapest plan and Shardy's, with their totals in
`reshard_plan_totals`), `issued` (the collectives the per-device program runs, after
`combine-collectives`: count, bytes, combined ops; each global entry's `steps` lists the
per-dim collectives it is issued as), with `--auto-shard`, `auto_shard` (the solver's status,
objective, gap and time; docs/cost.md) and, when `compile` compared FSDP's plans,
`gather_weights` (each plan's bytes, collectives and price, and which it kept; docs/cost.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from shardc.ir.core import Module
from shardc.ir.mesh import default_mesh
from shardc.ir.printer import Namer
from shardc.ir.types import shard_shape
from shardc.passes.analysis.cost import collective_report, issued_report
from shardc.passes.manager import PassContext


def _values(module: Module, context: PassContext) -> list[dict[str, Any]]:
    origins = context.data.get("origins")
    out = []
    for func in module.functions.values():
        name = Namer(func)
        entries = [(a, "argument") for a in func.args]
        entries += [(r, op.name) for op in func.body for r in op.results]
        for v, op_name in entries:
            m = v.mapping
            entry: dict[str, Any] = {
                "name": name(v),
                "op": op_name,
                "sharding": m.text() if m is not None else None,
                "global_shape": list(v.type.shape),
                "local_shape": list(shard_shape(v.type.shape, m)),
                "dtype": v.type.dtype,
                "origin": "",
            }
            if len(module.functions) > 1:
                entry["function"] = func.name
            if origins is not None:
                entry["origin"] = origins.describe(v)
            out.append(entry)
    return out


def build_report(
    module: Module, context: PassContext, timings: Mapping[str, float],
    spmd: Module | None = None,
) -> dict[str, Any]:
    """The report of `module` (the global program after the pipeline) as `context` and the pass
    `timings` left it; with `spmd`, the per-device program, also what that program issues."""
    if "reshard_plans_pending" in context.data:  # (lower-collectives ran: its module is loaded)
        from shardc.passes.reshard.lower_collectives import finish_reshard_plans

        finish_reshard_plans(context.data)
    meshes = {name: m.shape for name, m in module.meshes.items()}
    # "mesh": the one the program runs on (not JAX's axis-less @empty_mesh when declared first)
    main = default_mesh(module.meshes) or next(iter(module.meshes.values()), None)
    report: dict[str, Any] = {"mesh": main.shape if main else {}, "meshes": meshes}
    report.update(collective_report(module))
    report["values"] = _values(module, context)
    report["warnings"] = [w.render() for w in context.warnings]
    report["fallbacks"] = sorted(set(context.data.get("fallbacks", [])))
    report["planner_fallbacks"] = context.data.get("planner_fallbacks", [])
    report["propagation"] = context.data.get("propagation", {})
    plans = context.data.get("reshard_plans", [])
    report["reshard_plans"] = plans
    report["reshard_plan_totals"] = _plan_totals(plans)
    if spmd is not None:
        issued = issued_report(spmd)
        combine = context.data.get("combine_collectives")
        issued["combine_threshold"] = combine["threshold"] if combine else 0
        report["issued"] = issued
    for key in ("auto_shard", "gather_weights"):
        if key in context.data:
            report[key] = context.data[key]
    report["timings_s"] = {k: round(v, 6) for k, v in timings.items()}
    return report


def _plan_totals(plans: list[dict[str, Any]]) -> dict[str, Any]:
    """Ring bytes per device summed over the reshards, per algorithm (None where an algorithm
    could not plan one of them)."""
    totals: dict[str, Any] = {}
    for entry in plans:
        for name in ("optimal", "greedy", "shardy"):
            if name not in entry:
                continue
            plan = entry[name]
            if plan is None or totals.get(name, 0) is None:
                totals[name] = None
            else:
                totals[name] = totals.get(name, 0) + plan["ring_bytes"]
    return totals


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2) + "\n"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def report_text(report: dict[str, Any]) -> str:
    """The report for people: mesh, collectives, totals, memory, warnings."""
    mesh = ", ".join(f"{k}={v}" for k, v in report["mesh"].items()) or "(none)"
    lines = [f"mesh: {mesh}", ""]
    collectives = report["collectives"]
    if collectives:
        lines.append(f"collectives ({len(collectives)}):")
        header = (
            f"  {'value':>8}  {'kind':<19} {'axes':<14} {'local shape':<16} {'bytes/device':>13}"
        )
        lines.append(header)
        for c in collectives:
            axes = ",".join(c["axes"]) if isinstance(c["axes"], list) else str(c["axes"])
            shape = "x".join(str(d) for d in c["local_shape"]) + c["dtype"]
            lines.append(
                f"  {c['value']:>8}  {c['kind']:<19} {axes:<14} {shape:<16} "
                f"{_bytes(c['bytes_per_device']):>13}"
            )
            steps = c.get("steps", [])
            if len(steps) > 1:
                parts = " + ".join(f"{s['kind']} {_bytes(s['bytes_per_device'])}" for s in steps)
                lines.append(f"  {'':>8}  runs as {len(steps)} collectives: {parts}")
    else:
        lines.append("collectives: none (every op computes on local data)")
    lines.append("")
    lines.append(
        f"total communication per device: {_bytes(report['total_comm_bytes'])} "
        f"(ring model: {_bytes(report['total_ring_bytes'])})"
    )
    for kind, info in sorted(report["by_kind"].items()):
        lines.append(f"  {kind:<19} x{info['count']:<4} {_bytes(info['bytes'])}")
    for axis, n in sorted(report["by_axis"].items()):
        lines.append(f"  over axis {axis!r}: {_bytes(n)}")
    issued = report.get("issued")
    if issued is not None:
        combined = f", {issued['combined']} of them combined" if issued["combined"] else ""
        lines.append(
            f"issued by the per-device program: {issued['count']} collectives{combined}, "
            f"{_bytes(issued['bytes'])} per device"
        )
    lines.append(f"peak live memory per device: {_bytes(report['peak_memory_bytes_per_device'])}")
    auto = report.get("auto_shard")
    if auto is not None:
        budget = auto["memory_budget"]
        gap = auto.get("gap")
        lines.append(
            f"auto-shard: {auto['status']} in {auto['solve_time_s']:.2f} s CPU, "
            + ("" if gap is None else f"gap {100 * gap:.1f}%, ")
            + f"budget {_bytes(budget) if budget else 'none'}"
            + ("" if auto.get("fits_budget", True) else " (NOT met)")
        )
    chosen = report.get("gather_weights")
    if chosen is not None:
        parts = [f"{p['plan']}: {p['issued']} collectives, ring {_bytes(p['ring_bytes'])}"
                 for p in chosen["plans"]]
        lines.append(f"gather-weights: kept {chosen['kept']} ({'; '.join(parts)})")
    totals = report.get("reshard_plan_totals", {})
    if len(totals) > 1:
        names = {"optimal": "shardc's cheapest plans", "greedy": "greedy plans",
                 "shardy": "Shardy's algorithm"}
        parts = [f"{names[k]} {_bytes(v) if v is not None else 'n/a'}" for k, v in totals.items()]
        lines.append("reshards, ring bytes per device: " + "; ".join(parts))
    for w in report["warnings"]:
        lines.append(w)
    return "\n".join(lines) + "\n"
