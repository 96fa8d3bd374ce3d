"""CPU time of each pass of `shardc.jit`'s compile pipeline on the Llama-style training step, and
the compiled programs as text (to check that a change to the passes changes no result).

    python benchmarks/pipeline_passes.py                       # llama2, llama8, llama32; best of 3
    python benchmarks/pipeline_passes.py --programs llama8 --runs 5
    python benchmarks/pipeline_passes.py --programs llama8 --profile tottime   # cProfile, top 40
    python benchmarks/pipeline_passes.py --dump DIR            # write the compiled programs to DIR
    python benchmarks/pipeline_passes.py --first-calls 2       # first calls against jax.jit
    python benchmarks/pipeline_passes.py --programs llama2,nnx --instructions  # callgrind counts

`--programs` takes benchmarks/jit.py's programs: llama2, llama8, llama32 (the layer count), nnx.

The step (benchmarks/jit_programs.py) is lowered by JAX as `shardc.jit` lowers it, on a 2x4
("dp", "tp") mesh of 8 CPU devices, and imported once; each run then compiles a fresh import
with the options `shardc.jit` uses (`CompileOptions()`, IR verified once after each pipeline),
the way `shardc.jit` calls `shardc.pipeline.compile` (`consume=True`: on the fresh import
itself): the global pipeline, a copy (`copy+cse`: the per-device pipeline's first `cse` runs as the
copy is made, as in `compile`), the rest of the per-device pipeline. Each pass is timed alone
(`time.process_time`, CPU time of this process: other load on the shared machine disturbs it
less than wall time), under the same collector pause as `compile`. The figure of a pass is its
best run; `total` is the best whole compile.

`--dump DIR` compiles each program as `shardc.jit` does (`shardc.pipeline.compile`), and the
zoo's examples (examples/*.mlir, examples/jax/*.mlir), and writes every program's global and
per-device module as native text and its report as JSON (without its timings): `diff -r` of two
such directories (before and after a change) shows any result that changed.

`--instructions`: the instructions the CPU runs in `shardc.pipeline.compile` of each program, as
`shardc.jit` calls it, counted by valgrind's callgrind (only the compile: benchmarks/callgrind.py
says how), in a fresh process without JAX: the `cold` compile is the first of the process (the
pass modules imported, every memo empty: what `shardc.jit`'s first call pays), the `warm` one
follows a first compile of the same program. Counts agree within ~0.1% from run to run whatever
the machine's load, where CPU seconds move by 5-10% on the shared machine: a change to the passes
is measured by the counts of main and of the change. (Python's own bytecode files must be
written: the script compiles shardc's first.)

`--first-calls ROUNDS`: the first call of `jax.jit` and of `shardc.jit` (no persistent cache) on
each program, as benchmarks/jit.py makes them, in 2 x ROUNDS fresh processes (each side first in
half of them), as CPU seconds of the process (XLA's compile threads included, for both sides):
the best of each side and their ratio.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def jax_source(name: str) -> tuple[Any, Any]:
    """The step's `JaxSource` (JAX's text) and the options `shardc.jit` compiles it with."""
    import jax
    from jit_programs import build

    import shardc

    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=auto)
    f, args, specs = build(name)
    lowered = shardc.jit(f, mesh=mesh, in_shardings=specs).lower(*args)
    return lowered.source, lowered.options


def timed_compile(module: Any, options: Any, times: dict[str, float],
                  profile: cProfile.Profile | None = None,
                  profiled: frozenset[str] = frozenset()) -> tuple[Any, Any]:
    """`shardc.pipeline.compile`, each pass timed into `times` (CPU seconds, summed by name);
    with `profile`, the passes named in `profiled` (all when empty) run under it."""
    from shardc.ir.collector import long_lived
    from shardc.passes.manager import parse_pipeline, verify_after
    from shardc.passes.propagation.rules import registry  # noqa: F401
    from shardc.pipeline import PassContext, spmd_copy

    def run(passes: list[Any], work: Any, ctx: Any, what: str) -> None:
        for p in passes:
            start = time.process_time()
            on = profile is not None and (not profiled or p.name in profiled)
            if on:
                profile.enable()
            p.run(work, ctx)
            if on:
                profile.disable()
            times[p.name] = times.get(p.name, 0.0) + time.process_time() - start
        start = time.process_time()
        verify_after(work, what)
        times["verify"] = times.get("verify", 0.0) + time.process_time() - start

    with long_lived():
        ctx = PassContext(strict=options.strict, verify_each=False)
        work = module  # (`shardc.jit` compiles its fresh import in place: no first copy)
        run(parse_pipeline(options.full_pipeline()), work, ctx, "the pipeline")
        start = time.process_time()
        # (the copy, with the per-device pipeline's first `cse` run as it is made)
        spmd, passes = spmd_copy(work, parse_pipeline(options.spmd_pipeline()), ctx)
        times["copy+cse"] = time.process_time() - start
        run(passes, spmd, ctx, "the per-device pipeline")
    return work, spmd


def measure(name: str, runs: int, profile: str | None,
            profiled: frozenset[str] = frozenset()) -> dict[str, float]:
    source, options = jax_source(name)
    best: dict[str, float] = {}
    prof = cProfile.Profile() if profile else None
    for _ in range(runs):
        module = source.module()
        times: dict[str, float] = {}
        start = time.process_time()
        timed_compile(module, options, times, prof, profiled)
        times["total"] = time.process_time() - start
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
    if prof is not None:
        pstats.Stats(prof).sort_stats(profile).print_stats(40)
    return best


def dump(name: str, text_global: str, text_spmd: str, out: Path,
         report: dict[str, Any] | None = None) -> None:
    (out / f"{name}.global.mlir").write_text(text_global)
    (out / f"{name}.spmd.mlir").write_text(text_spmd)
    if report is not None:  # (its CPU timings left out: they differ from run to run)
        import json

        kept = {k: v for k, v in report.items() if k != "timings_s"}
        (out / f"{name}.report.json").write_text(json.dumps(kept, indent=1, sort_keys=True))


def dump_all(programs: list[str], out: Path) -> None:
    from shardc.ir.parser import parse_module
    from shardc.ir.printer import print_module
    from shardc.pipeline import CompileOptions, compile

    out.mkdir(parents=True, exist_ok=True)
    for name in programs:
        source, options = jax_source(name)
        result = compile(source.module(), options, consume=True)
        dump(name, print_module(result.module), print_module(result.spmd), out, result.report)
    examples = sorted((ROOT / "examples").glob("*.mlir")) + sorted(
        (ROOT / "examples" / "jax").glob("*.mlir"))
    for path in examples:
        text = path.read_text()
        if "stablehlo." in text or "sdy." in text:
            from shardc.stablehlo import import_stablehlo

            module = import_stablehlo(text, str(path))
        else:
            module = parse_module(text, str(path))
        result = compile(module, CompileOptions(), consume=True)
        label = f"{path.parent.name}_{path.stem}"
        dump(label, print_module(result.module), print_module(result.spmd), out, result.report)


def first_call_child(name: str, shardc_first: bool) -> dict[str, float]:
    """In this (fresh) process: the CPU seconds of the first call of `jax.jit` and of
    `shardc.jit` (no persistent cache), the sides in the order given."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
    from jit_programs import build

    import shardc

    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=auto)
    f, args, specs = build(name)
    named = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), specs,
                                   is_leaf=lambda s: isinstance(s, P))
    fns = {"jax": jax.jit(f, in_shardings=named),
           "shardc": shardc.jit(f, mesh=mesh, in_shardings=specs)}
    out = {}
    for side in ("shardc", "jax") if shardc_first else ("jax", "shardc"):
        start = time.process_time()
        jax.block_until_ready(fns[side](*args))
        out[side] = time.process_time() - start
    return out


def first_calls(programs: list[str], rounds: int) -> None:
    """Each program's first calls in `rounds` x 2 fresh processes (each side first in half):
    the best CPU seconds of each side and their ratio."""
    import json
    import subprocess

    for name in programs:
        best: dict[str, float] = {}
        ratios = []
        for i in range(2 * rounds):
            out = subprocess.run(
                [sys.executable, __file__, "--first-child", f"{name}:{i % 2}"],
                check=True, capture_output=True, text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            ratios.append(got["shardc"] / got["jax"])
            for k, v in got.items():
                best[k] = min(best.get(k, v), v)
        print(f"{name}: first call CPU s, best of {2 * rounds} fresh processes: jax.jit "
              f"{best['jax']:.2f}, shardc.jit {best['shardc']:.2f}, ratio "
              f"{best['shardc'] / best['jax']:.2f} (per process {min(ratios):.2f}-"
              f"{max(ratios):.2f})", flush=True)


def instructions(programs: list[str]) -> None:
    """Each program's cold and warm compile in callgrind (`--instructions`)."""
    import compileall
    import pickle
    import tempfile

    import callgrind

    for folder in ("compiler", "ir", "passes"):  # (a module compiled from source costs more)
        compileall.compile_dir(ROOT / folder, quiet=2)
    with tempfile.TemporaryDirectory(prefix="shardc-instr-") as tmp:
        for name in programs:
            saved = Path(tmp) / f"{name}.pickle"
            saved.write_bytes(pickle.dumps(jax_source(name)))
            counts = []
            for kind in ("cold", "warm"):
                events, _ = callgrind.run(
                    [sys.executable, __file__, "--instructions-child", f"{saved}:{kind}"],
                    Path(tmp) / "callgrind.out")
                counts.append(events["Ir"])
            print(f"{name}: instructions in compile (callgrind): cold {counts[0]:,}, "
                  f"warm {counts[1]:,}", flush=True)


def instructions_child(saved: str, kind: str) -> None:
    """In this (fresh, valgrind's) process: one compile of the saved program counted, the
    first of the process (`cold`) or after one (`warm`)."""
    import pickle

    from callgrind import counted

    from shardc import jit_cache  # noqa: F401  (what `shardc.jit` has imported by its compile)
    from shardc.pipeline import compile

    source, options = pickle.loads(Path(saved).read_bytes())
    if kind == "warm":
        compile(source.module(), options, consume=True)
    module = source.module()
    counted(lambda: compile(module, options, consume=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", default="llama2,llama8,llama32")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", choices=("tottime", "cumtime"), default=None,
                    help="profile the passes (all runs) and print the top 40 functions")
    ap.add_argument("--passes", default="",
                    help="with --profile: profile only these passes (comma-separated names)")
    ap.add_argument("--dump", type=Path, default=None,
                    help="write the compiled programs and the zoo's as native text to this folder")
    ap.add_argument("--first-calls", type=int, default=0, metavar="ROUNDS",
                    help="instead: the first calls of jax.jit and shardc.jit, CPU s, in "
                    "2 x ROUNDS fresh processes per program")
    ap.add_argument("--instructions", action="store_true",
                    help="instead: the instructions of each program's cold and warm compile, "
                    "counted by valgrind's callgrind")
    ap.add_argument("--first-child", help=argparse.SUPPRESS)  # NAME:SHARDC_FIRST
    ap.add_argument("--instructions-child", help=argparse.SUPPRESS)  # PICKLE:cold|warm
    args = ap.parse_args()
    programs = args.programs.split(",")
    if args.first_child:
        import json

        name, shardc_first = args.first_child.split(":")
        print(json.dumps(first_call_child(name, shardc_first == "1")))
        return
    if args.instructions_child:
        saved, kind = args.instructions_child.rsplit(":", 1)
        instructions_child(saved, kind)
        return
    if args.first_calls:
        first_calls(programs, args.first_calls)
        return
    if args.instructions:
        instructions(programs)
        return
    if args.dump is not None:
        dump_all(programs, args.dump)
        return
    for name in programs:
        best = measure(name, args.runs, args.profile,
                       frozenset(filter(None, args.passes.split(","))))
        print(f"{name}: CPU seconds per pass, best of {args.runs}")
        for k, v in sorted(best.items(), key=lambda kv: -kv[1]):
            print(f"  {k:<40} {v:8.4f}")


if __name__ == "__main__":
    main()
