"""The fuzzer, at scale: mutated programs through every command and generated valid programs
checked against the reference, in parallel workers; reports crashes, hangs, wrong results and
memory peaks, and writes each failure (minimised) to a directory.

    python benchmarks/fuzz.py --n 100000                 # half mutation, half generation
    python benchmarks/fuzz.py --n 2000 --kind generate --seed 7 --jobs 2
    python benchmarks/fuzz.py --n 5000 --out /tmp/fuzz  # failures as files, minimised

Mutation case `i` of seed `s` is `mutation_case(corpus(), Random(f"{s}:{i}"))`
(tests/fuzzing/mutate.py), so any case can be rerun alone (`--kind mutate --only I`).
Generated programs are drawn by hypothesis from `programs()` (tests/fuzzing/generate.py) with
a seed per worker; a failing program is written out as text. Each worker runs under an
address-space limit (`--mem-mb`, 4096 by default) and each input under a deadline
(`--timeout` s of CPU time, SIGPROF); the parent counts the inputs left as hangs when a worker
stops answering for 10 x timeout of wall-clock time.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import multiprocessing as mp
import os
import queue
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzzing.minimise import minimise, same_failure  # noqa: E402
from tests.fuzzing.mutate import corpus, mutation_case  # noqa: E402
from tests.fuzzing.oracle import KINDS, Outcome, check_program, run_command  # noqa: E402


def _limit_memory(mb: int) -> None:
    if mb > 0:
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))


def run_mutation(seed: int, i: int, tmp: str, timeout: float) -> tuple[Outcome, str, list[str]]:
    case = mutation_case(corpus(), random.Random(f"{seed}:{i}"))
    path = os.path.join(tmp, f"case{i}_{case.name}")
    Path(path).write_text(case.text)
    argv = case.command(path)
    try:
        return run_command(argv, timeout), case.text, list(case.argv)
    finally:
        os.unlink(path)
        for extra in Path(tmp).glob(f"case{i}_*"):
            extra.unlink()


def _mutation_worker(seed, indices, timeout, mem_mb, out_q, tmp) -> None:
    _limit_memory(mem_mb)
    for i in indices:
        out_q.put(("start", i))
        outcome, text, argv = run_mutation(seed, i, tmp, timeout)
        out_q.put(("done", i, outcome, text if outcome.bad else "", argv))


def _generation_worker(seed, count, timeout, mem_mb, out_q, tmp) -> None:  # noqa: ARG001
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    from tests.fuzzing.generate import programs

    _limit_memory(mem_mb)
    counter = iter(range(count))

    @hseed(seed)
    @settings(
        max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(programs())
    def body(text: str) -> None:
        i = next(counter, None)
        if i is None:
            return
        out_q.put(("start", i))
        outcome = check_program(text, seed=i, timeout=timeout)
        out_q.put(("done", i, outcome, text if outcome.bad else "", ["generate"]))

    body()
    # hypothesis may stop early when it believes the space exhausted: fill with fresh seeds
    done = next(counter, None)
    if done is not None:
        _generation_worker(seed + 7919, count - done, timeout, 0, out_q, tmp)


def _judge(argv: list[str], timeout: float):
    """The outcome of a (possibly shrunk) text under the same command."""

    def judge(text: str) -> Outcome:
        if argv == ["generate"]:
            return check_program(text, timeout=timeout)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "case.mlir")
            Path(path).write_text(text)
            return run_command([path if a == "{path}" else a for a in argv], timeout)

    return judge


def run(args: argparse.Namespace) -> dict:
    kinds = ["mutate", "generate"] if args.kind == "both" else [args.kind]
    per_kind = {k: args.n // len(kinds) for k in kinds}
    per_kind[kinds[0]] += args.n - sum(per_kind.values())
    counts: dict[str, collections.Counter] = {k: collections.Counter() for k in kinds}
    failures: list[dict] = []
    peak_mb: dict[str, float] = {k: 0.0 for k in kinds}
    seconds: dict[str, list[float]] = {k: [] for k in kinds}
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            n = per_kind[kind]
            jobs = max(1, min(args.jobs, n))
            out_q = ctx.Queue()
            if kind == "mutate":
                indices = [args.only] if args.only is not None else list(range(n))
                parts = [indices[w::jobs] for w in range(jobs)]
                spawn = [(args.seed, p, args.timeout, args.mem_mb, out_q, tmp) for p in parts]
                target = _mutation_worker
            else:
                spawn = [
                    (
                        args.seed * 1000 + w,
                        len(range(w, n, jobs)),
                        args.timeout,
                        args.mem_mb,
                        out_q,
                        tmp,
                    )
                    for w in range(jobs)
                ]
                target = _generation_worker
            procs = [ctx.Process(target=target, args=a, daemon=True) for a in spawn]
            for p in procs:
                p.start()
            expected = sum(len(a[1]) for a in spawn) if kind == "mutate" else n
            got, last = 0, time.perf_counter()
            while got < expected:
                try:
                    msg = out_q.get(timeout=args.timeout * 10)
                except queue.Empty:
                    if (
                        not any(p.is_alive() for p in procs)
                        or time.perf_counter() - last > args.timeout * 10
                    ):
                        counts[kind]["hang"] += expected - got
                        failures.append(
                            {
                                "kind": kind,
                                "outcome": "hang",
                                "message": "a worker stopped answering",
                            }
                        )
                        break
                    continue
                last = time.perf_counter()
                if msg[0] != "done":
                    continue
                _, i, outcome, text, argv = msg
                got += 1
                counts[kind][outcome.kind] += 1
                peak_mb[kind] = max(peak_mb[kind], outcome.peak_rss_mb)
                seconds[kind].append(outcome.seconds)
                if outcome.bad:
                    print(f"{kind} #{i}: {outcome.kind}: {outcome.message[:160]}", flush=True)
                    failures.append(
                        {
                            "kind": kind,
                            "index": i,
                            "outcome": outcome.kind,
                            "message": outcome.message,
                            "argv": argv,
                            "text": text,
                        }
                    )
                if args.progress and got % args.progress == 0:
                    print(f"{kind}: {got}/{expected} {dict(counts[kind])}", flush=True)
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
    elapsed = time.perf_counter() - start
    if args.out:
        _write_failures(Path(args.out), failures, args.timeout, args.minimise)
    return {
        "n": args.n,
        "seed": args.seed,
        "jobs": args.jobs,
        "seconds": round(elapsed, 1),
        "counts": {k: {kk: c[kk] for kk in KINDS if c[kk]} for k, c in counts.items()},
        "median_ms": {
            k: round(1000 * sorted(v)[len(v) // 2], 1) if v else 0 for k, v in seconds.items()
        },
        "max_s": {k: round(max(v), 2) if v else 0 for k, v in seconds.items()},
        "peak_rss_mb": {k: round(v, 1) for k, v in peak_mb.items()},
        "failures": [{k: v for k, v in f.items() if k != "text"} for f in failures],
    }


def _write_failures(out: Path, failures: list[dict], timeout: float, shrink: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for k, f in enumerate(failures):
        text = f.get("text", "")
        if not text:
            continue
        if shrink and f["outcome"] != "hang":  # a hang costs `timeout` per try: kept whole
            judge = _judge(f["argv"], timeout)
            want = Outcome(f["outcome"], f["message"], 0.0)
            text = minimise(text, lambda t, judge=judge, want=want: same_failure(judge(t), want))
        argv = " ".join(f["argv"])
        header = (
            f"// {f['kind']} #{f.get('index')}: {f['outcome']}: {f['message'][:200]}\n"
            f"// shardc {argv}\n"
        )
        (out / f"failure{k}.mlir").write_text(header + text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2000, help="inputs in all")
    p.add_argument("--kind", choices=["both", "mutate", "generate"], default="both")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=20.0, help="CPU seconds per input")
    p.add_argument("--mem-mb", type=int, default=4096, help="address-space limit per worker")
    p.add_argument("--only", type=int, default=None, help="rerun mutation case I alone")
    p.add_argument("--out", default=None, help="write failures (minimised) here")
    p.add_argument("--no-minimise", dest="minimise", action="store_false")
    p.add_argument("--progress", type=int, default=0, help="print counts every N inputs")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    if args.only is not None:
        args.n, args.kind = 1, "mutate"
    if args.kind != "mutate" and importlib.util.find_spec("hypothesis") is None:
        p.error("generating programs needs hypothesis: pip install -e '.[dev]' (or --kind mutate)")
    summary = run(args)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(
            f"{summary['n']} inputs, seed {summary['seed']}, {summary['jobs']} jobs, "
            f"{summary['seconds']} s"
        )
        for kind, c in summary["counts"].items():
            print(
                f"  {kind}: {c}; median {summary['median_ms'][kind]} ms, "
                f"slowest {summary['max_s'][kind]} s, peak RSS {summary['peak_rss_mb'][kind]} MB"
            )
        for f in summary["failures"]:
            print(f"  {f['kind']} #{f.get('index')}: {f['outcome']}: {f['message'][:160]}")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
