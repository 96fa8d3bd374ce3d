"""`python benchmarks/propagation.py --instructions`: the instructions propagation executes, per
size, and their growth per 4x step (counts, where seconds on a shared machine cannot separate
the code's work from what the memory hierarchy adds as the program outgrows the caches).

Each size runs in a fresh process under valgrind's callgrind (benchmarks/callgrind.py), which
counts only the `propagation-pipeline` pass on a module just built (`--instructions-child` of
propagation.py: the same call `time_shardc` times). `--cache-sim` also simulates the caches
(callgrind's, sized like this machine's) and counts the last-level cache's data misses, ~2x
slower; `--functions K` compares each size's per-C-function counts with the size before and
prints the K whose own counts grew the most beyond the ops' growth (where a superlinear cost
sits: Python functions show as the interpreter's `_PyEval_EvalFrameDefault`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import callgrind
from docs_section import write_section


@dataclass
class Count:
    program: str
    n: int
    ops: int
    instructions: int
    ll_misses: int | None = None  # last-level data misses (read + write), with --cache-sim
    growth: float | None = None  # instructions(4N) / instructions(N)
    ll_growth: float | None = None

    def cells(self, cache_sim: bool) -> list[str]:
        out = [self.program, str(self.n), f"{self.ops:,}", f"{self.instructions:,}",
               f"{self.instructions / self.ops:,.0f}",
               "–" if self.growth is None else f"{self.growth:.3f}"]
        if cache_sim:
            out += [f"{self.ll_misses:,}",
                    "–" if self.ll_growth is None else f"{self.ll_growth:.2f}"]
        return out


def header(cache_sim: bool) -> list[str]:
    out = ["program", "N", "ops", "instructions", "per op", "I(4N)/I(N)"]
    if cache_sim:
        out += ["LL data misses", "misses(4N)/misses(N)"]
    return out


def markdown(counts: list[Count], cache_sim: bool) -> str:
    head = header(cache_sim)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.cells(cache_sim)) + " |" for c in counts]
    return "\n".join(lines)


def measure(script: Path, programs: list[str], sizes: list[int], cache_sim: bool,
            functions: int, profiles: Path | None, max_ops: int | None = None) -> list[Count]:
    """Every size of every program, one callgrind run each (one at a time), leaving out a
    program's sizes from the first whose ops would exceed `max_ops` (ops grow linearly)."""
    counts: list[Count] = []
    with tempfile.TemporaryDirectory(prefix="shardc-prop-instr-") as tmp:
        folder = profiles or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in programs:
            previous: tuple[Count, Path] | None = None
            for n in sizes:
                if max_ops is not None and previous is not None and (
                        previous[0].ops * n // previous[0].n > max_ops):
                    break
                out_file = folder / f"callgrind.{name}{n}.out"
                command = [sys.executable, str(script), "--instructions-child", name, str(n)]
                events, stdout = callgrind.run(command, out_file, cache_sim)
                count = Count(name, n, json.loads(stdout)["ops"], events["Ir"])
                if cache_sim:
                    count.ll_misses = events.get("DLmr", 0) + events.get("DLmw", 0)
                if previous is not None and previous[0].n * 4 == n:
                    before = previous[0]
                    count.growth = count.instructions / before.instructions
                    if cache_sim and before.ll_misses:
                        count.ll_growth = count.ll_misses / before.ll_misses  # type: ignore[operator]
                    if functions:
                        _print_functions(previous[1], out_file, count.ops / before.ops,
                                         functions, f"{name} {before.n} -> {n}")
                print("| " + " | ".join(count.cells(cache_sim)) + " |", file=sys.stderr,
                      flush=True)
                counts.append(count)
                previous = (count, out_file)
    return counts


def _print_functions(small: Path, large: Path, factor: float, top: int, title: str) -> None:
    """The C functions whose own instructions grew the most beyond `factor` (the ops' growth)."""
    grown = callgrind.superlinear(callgrind.functions(small), callgrind.functions(large),
                                  factor, top)
    print(f"{title}: functions whose own instructions grew beyond the ops' x{factor:.3f}",
          file=sys.stderr)
    for fn, a, b in grown:
        print(f"  {b - factor * a:>14,.0f} over  {a:>14,} -> {b:>14,}  x{b / max(a, 1):.2f}  {fn}",
              file=sys.stderr)


def verdict(counts: list[Count], bound: float = 4.05) -> str:
    """One line: the largest instruction growth per step against `bound`."""
    growth = [c.growth for c in counts if c.growth is not None]
    if not growth:
        return "no 4x step measured"
    worst = max(growth)
    word = "linear" if worst <= bound else "NOT linear"
    return f"instructions {word}: largest I(4N)/I(N) {worst:.3f} (bound {bound})"


def main(script: Path, args: argparse.Namespace, sizes: list[int], programs: list[str]) -> None:
    """The table (and with `--write-docs` its section of docs/benchmarks.md) and the verdict."""
    counts = measure(script, programs, sizes, args.cache_sim, args.functions, args.profiles,
                     args.max_ops)
    table = markdown(counts, args.cache_sim)
    print(table)
    print("\n" + verdict(counts))
    if args.write_docs:
        command = "python " + " ".join(["benchmarks/propagation.py", *sys.argv[1:]])
        write_section("propagation-instructions", f"Command: `{command}`\n\n{table}")
