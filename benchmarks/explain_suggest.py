"""`shardc explain --collectives --suggest`: how long explaining every collective and measuring
suggestions for each takes on a transformer training step, and what one measured change costs
re-propagated against recompiled (issue 29).

    python benchmarks/explain_suggest.py                 # 64 layers, dp_tp, best of 3
    python benchmarks/explain_suggest.py --layers 16 --repeat 1
    python benchmarks/explain_suggest.py --write-docs    # its section of docs/benchmarks.md

Rows:

- compile, explain: `compile_baseline` (the default pipeline, with the propagated copy kept)
  and `explain_collectives` (every collective's two sides and their chains);
- suggest, no recompiles / default budget: `collectives_report(..., suggest_n=3)` with a
  recompile budget of 0 ops (only what re-propagation measures) and with the default one;
  its counts say how each candidate was measured, or why not;
- per change: a set of changes re-propagation measures (every weight's in_sharding
  replicated, every layer norm's sharded on "tp"): the mean CPU time per change, beside one
  recompile of the whole program with a change (the other way to measure it), and the ratio.

Times are CPU times of this process (`time.process_time`), best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402

from shardc.explain.collectives import explain_collectives  # noqa: E402
from shardc.explain.collectives_report import collectives_report  # noqa: E402
from shardc.explain.decisions import Names  # noqa: E402
from shardc.explain.whatif.baseline import compile_baseline  # noqa: E402
from shardc.explain.whatif.changes import Change  # noqa: E402
from shardc.explain.whatif.engine import DEFAULT_RECOMPILE_OPS, WhatIf  # noqa: E402
from shardc.ir.mapping import NamedMapping  # noqa: E402
from shardc.models.catalogue import MODELS  # noqa: E402


def best(repeat: int, fn):
    out, times = None, []
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
    return out, min(times)


def changes_of(base) -> list[Change]:
    """Weights replicated, layer norms sharded on "tp": changes re-propagation can measure."""
    names = Names(base.module)
    func = base.module.main
    mesh = next(iter(base.module.meshes.values()))
    out = []
    for i, a in enumerate(func.args):
        n = names(a)
        if a.type.rank == 1 and "ln" in n and a.type.shape[0] % mesh.shape.get("tp", 1) == 0:
            out.append(Change.in_sharding(func, i, NamedMapping.from_spec(("tp",), mesh), n))
        elif a.mapping is not None and a.mapping.used_axes() and "x" not in n:
            out.append(Change.in_sharding(
                func, i, NamedMapping.fully_replicated(mesh, a.type.rank), n))
    return out


def run(layers: int, preset: str, repeat: int) -> list[tuple[str, str, str]]:
    module = MODELS["transformer"].build(preset, train="sgd", layers=layers)
    ops = sum(len(list(f.body)) for f in module.functions.values())
    base, t_compile = best(repeat, lambda: compile_baseline(module))
    found, t_explain = best(repeat, lambda: explain_collectives(
        base.module, base.context.data["origins"]))
    rows = [("compile (default pipeline)", f"{t_compile:.2f} s", f"{ops} ops"),
            ("explain every collective", f"{t_explain:.2f} s", f"{len(found)} collectives")]
    for label, budget in (("no recompiles", 0), ("default budget", DEFAULT_RECOMPILE_OPS)):
        report, t = best(repeat, lambda b=budget: collectives_report(
            module, suggest_n=3, lint=False, recompile_ops=b))
        counts = ", ".join(f"{n} {k}" for k, n in sorted(report.measurements.items()))
        given = sum(map(len, report.suggestions))
        rows.append((f"suggest for every collective, {label}", f"{t:.2f} s",
                     f"{given} suggestions; {counts}"))
    whatif = WhatIf(base, recompile_ops=0)
    changes = changes_of(base)
    start = time.process_time()
    measured = [whatif.measure(c, recompile=False) for c in changes]
    t_fast = time.process_time() - start
    fast = [m for m in measured if m is not None]
    per = t_fast / max(1, len(changes))
    _, t_slow = best(repeat, lambda: WhatIf(base)._recompile(changes[0]))  # noqa: SLF001
    rows.append(("one change, re-propagated (mean)", f"{per * 1000:.1f} ms",
                 f"{len(fast)} of {len(changes)} changes re-propagated"))
    rows.append(("one change, recompiled", f"{t_slow:.2f} s",
                 f"re-propagation {t_slow / per:.0f}x faster"))
    return rows


def table(layers: int, preset: str, rows) -> str:
    head = (f"Transformer training step (sgd), {layers} layers, preset `{preset}`: "
            "`python benchmarks/explain_suggest.py`\n\n| step | CPU time | what |\n|---|---|---|")
    return head + "\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=64)
    p.add_argument("--preset", default="dp_tp")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args(argv)
    text = table(args.layers, args.preset, run(args.layers, args.preset, args.repeat))
    print(text)
    if args.write_docs:
        write_section("explain-suggest", "## Explaining collectives and measuring suggestions\n\n"
                      + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
