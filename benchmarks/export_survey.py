"""Shardy's export passes against jaxlib's own on random programs, at survey scale: for each pass
of tests/reshard/test_export_differential.py, how many of `--seeds` random programs shardc prints as
jaxlib does, how many differ, how many jaxlib rejects, how many shardc rejects as unsupported
(what docs/interop.md lists as not built) and how many it rejects otherwise.

    python benchmarks/export_survey.py --seeds 300
    python benchmarks/export_survey.py --seeds 200 --only convert-global-to-local

CI runs the same comparison on 80 seeds per pass (tests/reshard/test_export_differential.py);
the table in docs/interop.md comes from this script.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.export_compare import JaxlibWorker, compare  # noqa: E402
from tests.g2l_programs import MESHES, PRIME_MESHES, g2l_module  # noqa: E402
from tests.reshard.test_export_differential import CASES, JAXLIB, NORMALIZE, unsupported  # noqa: E402

G2L = "sdy-reshard-to-collectives,sdy-convert-global-to-local"
# (label, pipeline, program maker): tests/spmd/test_g2l_differential.py runs the first in CI.
SURVEY = [(p, p, make) for p, make in CASES.items()] + [
    (f"{G2L} (meshes without sub-axes)", G2L,
     lambda rng: g2l_module(rng, meshes=PRIME_MESHES)),
    (f"{G2L} (any mesh)", G2L, lambda rng: g2l_module(rng, meshes=MESHES)),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--only", default="", help="only the passes whose label has this text")
    parser.add_argument("--passes", nargs="*", help="only these passes (default: every one)")
    parser.add_argument("--exact", action="store_true",
                        help="compare the text as printed (no pass's normaliser)")
    args = parser.parse_args(argv)
    worker = JaxlibWorker()
    try:
        print("| pass | same as jaxlib | differ | jaxlib rejects the program | shardc: unsupported "
              "| shardc errors |")
        print("|---|---|---|---|---|---|")
        for label, pipeline, make in SURVEY:
            if args.only not in label or (args.passes and pipeline not in args.passes):
                continue
            kinds: collections.Counter[str] = collections.Counter()
            for seed in range(args.first, args.first + args.seeds):
                outcome = compare(make(random.Random(seed)), pipeline, worker,
                                  None if args.exact else NORMALIZE.get(pipeline),
                                  JAXLIB.get(pipeline))
                kind = outcome.kind
                if kind == "shardc-error" and unsupported(pipeline, outcome.detail):
                    kind = "unsupported"
                kinds[kind] += 1
            print(f"| `{label}` | {kinds['same']} | {kinds['differ']} | "
                  f"{kinds['jaxlib-rejects']} | {kinds['unsupported']} | {kinds['shardc-error']} |")
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
