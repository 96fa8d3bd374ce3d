"""Combined collectives: what shardc's per-device program issues, with and without
`combine-collectives`, against XLA's compiled HLO for the same JAX function, and the time per
call of both programs on 8 CPU devices.

    python benchmarks/combine.py                  # GPT (JAX) and Flax NNX steps
    python benchmarks/combine.py --calls 400
    python benchmarks/combine.py --write-docs     # its section of docs/benchmarks.md

Programs: the JAX GPT training steps of examples/gpt_jax.py (SGD; dp, tp, dp_tp, fsdp;
benchmarks/jax_programs.py) and a Flax NNX 2-layer LM with `optax.adamw` (dp, dp_tp;
benchmarks/nnx_programs.py, only when flax and optax are installed). For each, XLA is
`jax.jit(step, in_shardings=...)` as a JAX user runs it; shardc compiles the same lowering
(StableHLO text) with `combine_threshold=0` and with the default (XLA's 30 MiB + 7).

Columns: `# coll` is collectives that move data; shardc's are the report's `issued` (the
per-device program the executors run), XLA's are parsed from `compiled.as_text()`
(benchmarks/quality.py). `B/dev` sums each collective's larger local buffer. `shardc HLO` is the
count of collectives in the HLO XLA compiles from shardc's per-device program (the JAX
executor's `shard_map`; XLA:CPU's own all-reduce combiner runs on it too). Per call: the best
of `--calls` calls (the least disturbed by other work on a shared machine) of each compiled
program (`jax.stages.Compiled`, so neither side pays Python
dispatch: that is benchmarks/jit.py's subject) on arrays already on the devices, the three
programs interleaved in blocks of 10 calls, as a ratio to XLA's measured in the same run.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402
from jax_programs import JaxProgram, gpt_programs  # noqa: E402
from nnx_programs import available, nnx_programs  # noqa: E402
from quality import parse_hlo_collectives  # noqa: E402

HEADER = ["program", "sharding", "# coll XLA", "# coll shardc (off)", "# coll shardc",
          "shardc HLO", "B/dev XLA", "B/dev shardc", "per call shardc/jax (off)",
          "per call shardc/jax"]


def _timed(fn: Any, args: Any) -> float:
    import jax

    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def measure(model: str, program: JaxProgram, calls: int) -> list[str]:
    import jax

    from shardc.executors.jax_arrays import JaxArrayProgram
    from shardc.pipeline import CompileOptions, compile

    devices = math.prod(program.mesh.values())
    xla = parse_hlo_collectives(program.executable.as_text(), devices)
    flat = jax.tree.leaves(program.args)
    mesh = jax.make_mesh(tuple(program.mesh.values()), tuple(program.mesh))
    runs: dict[str, tuple[Any, Any]] = {}
    issued: dict[str, dict[str, Any]] = {}
    hlo_count = 0
    for label, options in (("off", CompileOptions(combine_threshold=0)),
                           ("on", CompileOptions())):
        result = compile(program.module, options)
        issued[label] = result.report["issued"]
        shardc_program = JaxArrayProgram(result.spmd, devices=list(mesh.devices.flat), mesh=mesh)
        # On the devices in the program's own shardings (as XLA's arguments below): an array
        # left on one device would be copied to all of them on every call.
        placed = [jax.device_put(x, s) for x, s in zip(flat, shardc_program.in_shardings)]
        executable = shardc_program.compile()  # what shardc.jit runs, called as is like XLA's
        jax.block_until_ready(executable(*placed))
        runs[label] = (executable, placed)
        if label == "on":
            hlo_count = len(parse_hlo_collectives(executable.as_text(), devices))
    placed_args = jax.device_put(program.args, program.executable.input_shardings[0])
    xla_fn = program.executable  # the compiled step: called as is, no tracing per call
    jax.block_until_ready(xla_fn(*placed_args))
    times: dict[str, list[float]] = {"jax": [], "off": [], "on": []}
    for _ in range(max(1, calls // 10)):
        for _ in range(10):
            times["jax"].append(_timed(xla_fn, placed_args))
        for label in ("off", "on"):
            fn, args = runs[label]
            for _ in range(10):
                times[label].append(_timed(fn, args))
    best = {k: min(v) for k, v in times.items()}
    return [
        model, program.name, str(len(xla)), str(issued["off"]["count"]),
        str(issued["on"]["count"]), str(hlo_count),
        f"{sum(c.bytes_per_device for c in xla):,}", f"{issued['on']['bytes']:,}",
        f"{best['off'] / best['jax']:.2f}", f"{best['on'] / best['jax']:.2f}",
    ]


def section(rows: list[list[str]], command: str, note: str) -> str:
    import jax

    table = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([
        "## Combined collectives",
        "",
        "What shardc's per-device program issues with `combine-collectives` off and on (its",
        "default threshold, XLA's 30 MiB + 7; docs/spmd.md, \"Combined collectives\") against",
        "XLA's compiled HLO for the same `jax.jit` function, and the time per call of each",
        f"program relative to `jax.jit` in the same run (8 CPU devices, JAX {jax.__version__}).",
        "`shardc HLO` counts the collectives in the HLO XLA compiles from shardc's per-device",
        "program. See benchmarks/combine.py for the columns.",
        "",
        f"Command: `{command}`",
        "",
        *table,
        "",
        note.rstrip(),
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls timed per program")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    rows = []
    programs = [("gpt (JAX)", p) for p in gpt_programs()]
    if available():
        programs += [("Flax NNX + adamw", p) for p in nnx_programs()]
    else:
        print("flax or optax is not installed: no NNX rows", file=sys.stderr)
    for model, program in programs:
        rows.append(measure(model, program, args.calls))
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
    if args.write_docs:
        shown = " ".join(a for a in (argv or sys.argv[1:]) if a != "--write-docs")
        command = f"python benchmarks/combine.py {shown}".strip()
        write_section("combine", section(rows, command, note(rows)))


def note(rows: list[list[str]]) -> str:
    """The findings under the table; the per-call range is this run's."""
    ratios = [float(r[c]) for r in rows for c in (-2, -1)]
    return NOTE.format(low=min(ratios), high=max(ratios))


NOTE = """\
- The `(off)` columns are the program without combining: every gradient's all-reduce where it
  is produced. Combined, the data-parallel steps issue one all-reduce, as XLA does; the tensor-
  parallel ones keep the all-reduces that depend on each other (one per layer's activations).
- On `gpt (JAX)` / fsdp shardc issues fewer collectives than XLA at fewer bytes. It compiles
  FSDP's plan (docs/spmd.md, "Gathering weights (FSDP)"): the 12 weight matrices are gathered
  in one combined all-gather and the gradients reduced in one combined all-reduce, and the
  embedding table stays sharded. As propagated (68 collectives, 51 combined) they sat on
  the dependent forward/backward chain, where no combiner can merge them.
- On CPU XLA combines all-reduces itself (no byte limit) but not all-gathers or
  reduce-scatters; shardc's JAX executor issues one collective per combined op either way.
- Per call, shardc's compiled per-device program runs about as fast as XLA's own: where the
  plans are the same both are compiled by XLA from the same operations, so the ratios are 1.0
  within the noise of a shared 2-core machine ({low:.2f}-{high:.2f} here, best of the calls
  each); on `gpt (JAX)` / fsdp shardc's plan moves less and issues fewer collectives. shardc's
  side is the executable `shardc.jit` runs: N replicas of the per-device program where it
  fits (docs/jax.md, "What the first call costs"), whose HLO the `shardc HLO` column counts.
"""


if __name__ == "__main__":
    main()
