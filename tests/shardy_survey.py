"""Count random programs on which shardc's propagation and jaxlib's Shardy disagree.

    PYTHONPATH=. python -m tests.shardy_survey --examples 250 --seeds 1-8
    PYTHONPATH=. python -m tests.shardy_survey --examples 500 --seeds 11-18

Each seed runs the generator of tests/propagation/test_shardy_live.py (tests/programs.py, `max_ops=12`) for
`--examples` programs under `hypothesis.seed(seed)` (no database, not derandomised, no shrinking:
a disagreement is counted, not raised) and compares every value with `check`. Prints, per seed
and in total, the programs, the distinct programs, those that differ and, of each, how many have
user priorities (any `pN` on a dim). `--save DIR` writes the differing programs there.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed

from shardc.ir.printer import print_module
from tests.programs import modules
from tests.propagation.test_shardy_live import check

PRIORITY = re.compile(r"\}p\d")


def survey(seed: int, examples: int) -> list[tuple[str, str]]:
    """(outcome, program text) per generated program: outcome 'ok', 'diff' or 'error: ...'."""
    out: list[tuple[str, str]] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=False,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(modules(max_ops=12))
    def run(module) -> None:
        text = print_module(module)
        try:
            check(module)
            outcome = "ok"
        except AssertionError:
            outcome = "diff"
        except Exception as e:  # noqa: BLE001 - counted, reported
            outcome = f"error: {type(e).__name__}: {e}"[:200]
        out.append((outcome, text))

    run()
    return out


def _seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=250)
    ap.add_argument("--seeds", default="1-8", help="e.g. 1-8 or 1,5,9-12")
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args()
    total, diff, diff_prio, prio, errors, distinct = 0, 0, 0, 0, 0, set()
    for s in _seeds(args.seeds):
        results = survey(s, args.examples)
        d = [t for o, t in results if o == "diff"]
        e = [o for o, _ in results if o.startswith("error")]
        p = sum(bool(PRIORITY.search(t)) for _, t in results)
        dp = sum(bool(PRIORITY.search(t)) for t in d)
        print(f"seed {s}: {len(results)} programs, {len(d)} differ ({dp} with priorities), "
              f"{len(e)} errors; {p} have priorities")
        total, diff, diff_prio, prio, errors = (
            total + len(results), diff + len(d), diff_prio + dp, prio + p, errors + len(e)
        )
        distinct.update(t for _, t in results)
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            for i, t in enumerate(d):
                (args.save / f"seed{s}_{i}.mlir").write_text(t)
    print(f"total: {total} programs ({len(distinct)} distinct), {diff} differ: {diff_prio} of the "
          f"{prio} with priorities, {diff - diff_prio} of the {total - prio} without; "
          f"{errors} errors")


if __name__ == "__main__":
    main()
