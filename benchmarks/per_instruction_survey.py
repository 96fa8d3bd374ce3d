"""sdy-per-instruction-partitioning on random programs, at survey scale: how many programs the
pass takes, how many of their public functions compute on simulated devices what the input
computes (reference interpreter, manual computations' bodies run per device), how many differ,
and why the others are refused (the error, cut short).

    python benchmarks/per_instruction_survey.py --seeds 200
    python benchmarks/per_instruction_survey.py --seeds 100 --programs op

CI runs the reshard programs on 30 seeds (tests/spmd/test_per_instruction_partitioning.py).
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shardc.executors.reference import run_reference  # noqa: E402
from shardc.ir.diagnostics import ShardcError  # noqa: E402
from shardc.stablehlo import import_stablehlo  # noqa: E402
from tests.export_compare import run_shardc  # noqa: E402
from tests.export_programs import op_module, reshard_module  # noqa: E402

PROGRAMS = {"reshard": reshard_module, "op": op_module}


def survey(make, pipeline: str, seeds: int) -> tuple[collections.Counter, collections.Counter]:
    stats: collections.Counter = collections.Counter()
    why: collections.Counter = collections.Counter()
    for seed in range(seeds):
        text = make(random.Random(seed))
        try:
            out = import_stablehlo(run_shardc(text, pipeline), "out.mlir")
        except ShardcError as e:
            stats["refused"] += 1
            why[e.message.split(": ", 1)[-1][:100]] += 1
            continue
        stats["taken"] += 1
        original = import_stablehlo(text, "in.mlir")
        for name, func in original.functions.items():
            if func.is_private:
                continue
            rng = np.random.default_rng(seed)
            xs = [rng.standard_normal(a.type.shape).astype(np.float32) for a in func.args]
            try:
                want = run_reference(original, xs, function=name)
                got = run_reference(out, xs, function=name)
            except ShardcError as e:
                stats["does not run"] += 1
                why["run: " + e.message[:100]] += 1
                continue
            same = all(np.allclose(g, w, rtol=1e-4, atol=1e-4) for g, w in zip(got, want))
            stats["same" if same else "DIFFERENT"] += 1
    return stats, why


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--programs", choices=sorted(PROGRAMS), default="reshard")
    ap.add_argument("--pipeline", default="sdy-per-instruction-partitioning")
    args = ap.parse_args()
    stats, why = survey(PROGRAMS[args.programs], args.pipeline, args.seeds)
    print(f"{args.programs} programs, {args.seeds} seeds, {args.pipeline}")
    print("programs taken:", stats["taken"], " refused:", stats["refused"])
    print("functions same:", stats["same"], " different:", stats["DIFFERENT"],
          " do not run:", stats["does not run"])
    for text, n in why.most_common(10):
        print(f"  {n:4d}  {text}")


if __name__ == "__main__":
    main()
