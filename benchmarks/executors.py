"""Executor benchmark: shardc's numpy and JAX executors against their baselines, in one run.

    python benchmarks/executors.py                    # step times, first step up to N = 64
    python benchmarks/executors.py --max-layers 128   # first step for deeper stacks (XLA ~30 s)
    python benchmarks/executors.py --repeat 9         # more runs per step-time median
    python benchmarks/executors.py --write-docs       # update docs/benchmarks.md
    python benchmarks/executors.py --train --write-docs   # training steps (own docs section)

Three measurements, on zoo models (`shardc.models.catalogue.MODELS`) with their `dp_tp` preset
(mesh dp=2, tp=4: 8 devices) and the FSDP preset where noted:

(a) numpy executor: `NumpyExecutor(result.spmd).run(inputs)` (8 simulated devices, global
    arrays in and out) over `run_reference(module, inputs)` (the unsharded program in numpy).
    Target <= 1.5.
(b) JAX executor: one step of the executor's jitted `shard_map` over one step of `jax.jit` of
    the same global program (`compiler/executors/jax_global.py`) with the same argument and
    result `NamedSharding`s, on the same 8 CPU devices. Inputs are already on the devices in
    their shardings and each step ends with `block_until_ready`, so only the step is timed.
    Target <= 1.1.
(c) Time to first step of an N-layer transformer: shardc `compile` + the JAX executor's trace
    and XLA compile (`lower(...).compile()`), against `jax.jit(f, in_shardings=...,
    out_shardings=...).lower(...).compile()` of the unsharded program, N growing by 2-4x up to
    `--max-layers`.

Times are wall-clock (`time.perf_counter`) medians over `--repeat` runs, the sides interleaved
in each run so that load on the machine hits both; ratios are of medians from the same run and
the table also gives the spread (min-max) of the per-run ratios. Every case is checked first:
the largest difference between the sharded run and its baseline is printed and tabled.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import gc  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docs_section import read_section, write_section  # noqa: E402

from shardc.ir.core import Module  # noqa: E402
from shardc.ir.types import numpy_dtype  # noqa: E402
from shardc.models.catalogue import MODELS  # noqa: E402
from shardc.pipeline import compile  # noqa: E402


@dataclass(frozen=True)
class Config:
    """One model at one size for the step-time measurements (a) and (b)."""

    label: str
    model: str
    preset: str
    params: dict[str, Any]
    train: str | None = None  # the model's training step with this optimizer


STEP_CONFIGS = [
    Config("mlp S", "mlp", "dp_tp", dict(batch=256, d_model=512, d_ff=2048, layers=2)),
    Config("mlp M", "mlp", "dp_tp", dict(batch=512, d_model=1024, d_ff=4096, layers=2)),
    Config("mlp M fsdp", "mlp", "fsdp", dict(batch=512, d_model=1024, d_ff=4096, layers=2)),
    Config("transformer S", "transformer", "dp_tp",
           dict(batch=8, seq=128, d_model=256, heads=4, d_head=64, d_ff=1024, layers=2)),
    Config("transformer M", "transformer", "dp_tp",
           dict(batch=8, seq=256, d_model=512, heads=8, d_head=64, d_ff=2048, layers=2)),
]
# Training steps (forward, loss, backward, update: docs/guide.md "Training steps"): `--train`.
TRAIN_CONFIGS = [
    Config("mlp M train sgd", "mlp", "dp_tp",
           dict(batch=512, d_model=1024, d_ff=4096, layers=2), "sgd"),
    Config("transformer S train adam", "transformer", "dp_tp",
           dict(batch=8, seq=128, d_model=256, heads=4, d_head=64, d_ff=1024, layers=2), "adam"),
    Config("gpt S train adam", "gpt", "dp_tp",
           dict(batch=8, seq=128, vocab=4096, d_model=256, heads=4, d_head=64, d_ff=1024,
                layers=2), "adam"),
]


def describe(params: dict[str, Any]) -> str:
    short = {"batch": "b", "d_model": "d", "d_ff": "ff", "layers": "L", "seq": "s",
             "heads": "h", "d_head": "dh"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in params.items())


def random_inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    """Seeded float inputs N(0, 0.05^2) (small, so that deep stacks stay finite); integers
    (token ids, labels, Adam's step count) in [0, 16)."""
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        dtype = numpy_dtype(a.type.dtype)
        if dtype.kind in "iu":
            out.append(rng.integers(0, 16, a.type.shape).astype(dtype))
        else:
            out.append((0.05 * rng.standard_normal(a.type.shape)).astype(dtype))
    return out


def max_rel_err(got: Sequence[Any], want: Sequence[Any]) -> float:
    """Largest |got - want| over all outputs, relative to the largest |want|."""
    err, scale = 0.0, 1e-30
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        err = max(err, float(np.max(np.abs(g - w))))
        scale = max(scale, float(np.max(np.abs(w))))
    return err / scale


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall-clock, process CPU) seconds of one call: CPU time (every thread of this process)
    is less sensitive to other load on the machine than wall-clock time."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


@dataclass
class Series:
    """Interleaved timings of several sides; medians and per-run ratio spreads."""

    times: dict[str, list[float]] = field(default_factory=dict)

    def add(self, side: str, t: float) -> None:
        self.times.setdefault(side, []).append(t)

    def median(self, side: str) -> float:
        return statistics.median(self.times[side])

    def ratio(self, num: str, den: str) -> tuple[float, float, float]:
        """(median ratio, min, max of the per-run ratios)."""
        per_run = [a / b for a, b in zip(self.times[num], self.times[den], strict=True)]
        return self.median(num) / self.median(den), min(per_run), max(per_run)


# ----- (a) and (b): step times ----------------------------------------------------------------


@dataclass
class StepRow:
    config: Config
    series: Series
    numpy_err: float
    jax_err: float

    def cells(self) -> list[str]:
        s = self.series
        a, a_lo, a_hi = s.ratio("numpy", "reference")
        b, b_lo, b_hi = s.ratio("jax_exec", "jit")
        a_cpu = s.ratio("numpy:cpu", "reference:cpu")[0]
        b_cpu = s.ratio("jax_exec:cpu", "jit:cpu")[0]
        return [
            self.config.label, self.config.preset, describe(self.config.params),
            f"{s.median('reference') * 1e3:.1f}", f"{s.median('numpy') * 1e3:.1f}",
            f"**{a:.2f}** ({a_lo:.2f}-{a_hi:.2f})", f"{a_cpu:.2f}",
            f"{s.median('jit') * 1e3:.1f}", f"{s.median('jax_exec') * 1e3:.1f}",
            f"**{b:.2f}** ({b_lo:.2f}-{b_hi:.2f})", f"{b_cpu:.2f}",
            f"{self.numpy_err:.0e} / {self.jax_err:.0e}",
        ]


STEP_HEADER = [
    "case", "preset", "sizes", "reference ms", "numpy exec ms", "(a) numpy/ref", "(a) CPU",
    "jax.jit ms", "JAX exec ms", "(b) JAX exec/jit", "(b) CPU", "rel err (a) / (b)",
]


def executor_inputs(executor: Any, inputs: list[np.ndarray]) -> list[Any]:
    """`inputs` placed on the JAX executor's mesh in its input shardings (divisible dims)."""
    import jax

    named = jax.sharding.NamedSharding
    return [
        jax.device_put(x, named(executor.mesh, executor._spec(m)))
        for x, m in zip(inputs, executor.in_shardings, strict=True)
    ]


def step_row(config: Config, repeat: int) -> StepRow:
    import jax

    from shardc.executors.jax_exec import JaxExecutor
    from shardc.executors.jax_global import jit_global
    from shardc.executors.numpy_exec import NumpyExecutor
    from shardc.executors.reference import run_reference

    module = MODELS[config.model].build(config.preset, train=config.train, **config.params)
    result = compile(module)
    inputs = random_inputs(module)
    numpy_exec = NumpyExecutor(result.spmd)
    jax_exec = JaxExecutor(result.spmd)
    # NOTE: `_fn` is the executor's jitted shard_map; calling it on device-resident arrays
    # times the step alone (`run` adds host padding, transfers and the copy back).
    exec_step = jax_exec._fn
    exec_args = executor_inputs(jax_exec, inputs)
    jitted, _, in_shardings, _ = jit_global(result.module)
    jit_args = [jax.device_put(x, s) for x, s in zip(inputs, in_shardings, strict=True)]

    reference = run_reference(module, inputs)
    numpy_err = max_rel_err(numpy_exec.run(inputs), reference)
    jax_err = max_rel_err(exec_step(*exec_args), jitted(*jit_args))  # compiles both
    print(f"  check {config.label}: numpy exec vs reference {numpy_err:.1e}, JAX exec vs "
          f"jax.jit {jax_err:.1e} (max abs err / max |output|)", file=sys.stderr)

    sides: list[tuple[str, Callable[[], Any]]] = [
        ("reference", lambda: run_reference(module, inputs)),
        ("numpy", lambda: numpy_exec.run(inputs)),
        ("jit", lambda: jax.block_until_ready(jitted(*jit_args))),
        ("jax_exec", lambda: jax.block_until_ready(exec_step(*exec_args))),
    ]
    for _, fn in sides[2:]:  # warm up the jitted steps once more
        fn()
    series = Series()
    for rep in range(repeat):
        order = sides if rep % 2 == 0 else sides[::-1]
        for name, fn in order:
            gc.collect()
            wall, cpu = timed(fn)
            series.add(name, wall)
            series.add(name + ":cpu", cpu)
    return StepRow(config, series, numpy_err, jax_err)


# ----- (c): time to first step ----------------------------------------------------------------


@dataclass
class FirstStepRow:
    layers: int
    ops: int
    runs: int
    shardc_compile: float
    shardc_passes: float
    exec_compile: float
    xla_compile: float
    spread: tuple[float, float]

    @property
    def ratio(self) -> float:
        return (self.shardc_compile + self.exec_compile) / self.xla_compile

    def cells(self) -> list[str]:
        return [
            str(self.layers), f"{self.ops:,}", str(self.runs),
            f"{self.shardc_compile:.2f}", f"{self.shardc_passes:.2f}",
            f"{self.exec_compile:.2f}", f"{self.shardc_compile + self.exec_compile:.2f}",
            f"{self.xla_compile:.2f}",
            f"**{self.ratio:.2f}** ({self.spread[0]:.2f}-{self.spread[1]:.2f})",
        ]


FIRST_HEADER = [
    "layers", "ops", "runs", "shardc compile s", "of which passes s", "JAX exec compile s",
    "shardc total s", "jax.jit compile s", "shardc/XLA",
]


def first_step_once(layers: int, xla_first: bool) -> tuple[int, float, float, float, float]:
    """(ops, shardc compile s, of which passes, executor trace+compile s, jax.jit compile s)
    for a fresh `layers`-deep transformer (new objects, so no cache is hit)."""
    import jax

    from shardc.executors.jax_exec import JaxExecutor
    from shardc.executors.jax_global import global_function
    from shardc.jax_api import mesh_to_jax, to_jax_shardings

    module = MODELS["transformer"].build("dp_tp", layers=layers)
    func = module.main
    args = [jax.ShapeDtypeStruct(a.type.shape, numpy_dtype(a.type.dtype)) for a in func.args]
    # XLA gets the closed argument/result shardings shardc settles on (the metadata only: the
    # program it compiles is the unsharded source).
    closed = compile(module).module
    mesh = mesh_to_jax(closed.meshes["mesh"])
    ins, outs = to_jax_shardings(closed, mesh)
    named = jax.sharding.NamedSharding
    times: dict[str, float] = {}

    def shardc_side() -> None:
        start = time.perf_counter()
        result = compile(module)
        times["compile"] = time.perf_counter() - start
        times["passes"] = sum(t for k, t in result.timings.items() if k != "copy")
        start = time.perf_counter()
        executor = JaxExecutor(result.spmd)
        specs = [
            jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=named(executor.mesh, executor._spec(m)))
            for a, m in zip(args, executor.in_shardings, strict=True)
        ]
        executor._fn.lower(*specs).compile()
        times["exec"] = time.perf_counter() - start

    def xla_side() -> None:
        start = time.perf_counter()
        f = global_function(module)
        jax.jit(f, in_shardings=ins, out_shardings=outs).lower(*args).compile()
        times["xla"] = time.perf_counter() - start

    for side in (xla_side, shardc_side) if xla_first else (shardc_side, xla_side):
        gc.collect()
        side()
    return len(func.body), times["compile"], times["passes"], times["exec"], times["xla"]


def first_step_row(layers: int, repeat: int) -> FirstStepRow:
    runs = [first_step_once(layers, xla_first=i % 2 == 1) for i in range(repeat)]
    ops = runs[0][0]
    med = [statistics.median(r[i] for r in runs) for i in range(1, 5)]
    per_run = [(r[1] + r[3]) / r[4] for r in runs]
    return FirstStepRow(layers, ops, len(runs), med[0], med[1], med[2], med[3],
                        (min(per_run), max(per_run)))


def layer_sweep(max_layers: int) -> list[int]:
    sizes = [n for n in (1, 4, 16, 32, 64, 128, 256, 512, 1024) if n <= max_layers]
    return sizes or [max_layers]


# ----- output -----------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def docs_section(step_table: str, first_table: str, command: str, notes: str) -> str:
    import jax

    return "\n".join([
        "## Executors",
        "",
        f"`benchmarks/executors.py`, JAX {jax.__version__} on CPU with 8 simulated devices "
        f"({os.cpu_count()} cores).",
        "Times are wall-clock medians, with the sides interleaved in every run. Ratios are of",
        "medians from the same run; `(lo-hi)` is the spread of the per-run ratios, and `CPU` is",
        "the same ratio of process CPU times (all threads), which other load on the machine",
        "disturbs less than wall-clock time.",
        "",
        "- (a) The numpy executor (8 simulated devices, global arrays in and out) over the",
        "  unsharded numpy reference. Target ≤ 1.5.",
        "- (b) One step of the JAX executor's jitted `shard_map` over one step of `jax.jit` of",
        "  the same program with the same `in_shardings`/`out_shardings`, inputs already on the",
        "  devices. Target ≤ 1.1.",
        "- `rel err` is max |sharded − baseline| / max |baseline| on the first, checked run.",
        "",
        f"Command: `{command}`",
        "",
        step_table,
        "",
        "(c) Time to first step of an N-layer transformer (`dp_tp`, default sizes). shardc's",
        "side is `compile` (default pipeline, verification on), plus the JAX executor's trace",
        "and XLA compile of the SPMD program. The baseline is",
        "`jax.jit(f, in_shardings, out_shardings).lower(...).compile()` of the unsharded program.",
        "The \"of which passes\" column is the pass time inside shardc's `compile`; the rest of",
        "`compile` is mostly the print/parse copies of the module.",
        "",
        first_table,
        "",
        notes.rstrip(),
    ])


def write_docs(body: str) -> None:
    """Replace (or add) the executors section of docs/benchmarks.md; other sections untouched."""
    write_section("executors", body)


def existing_notes(section: str = "executors") -> str | None:
    """The notes after the tables in an executors section of the docs (analysis written by a
    person, kept when the numbers are regenerated): everything from `### Notes` on."""
    m = re.search(r"(### Notes\n.*)", read_section(section) or "", re.S)
    return m.group(1).rstrip("\n") if m else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per step-time median")
    parser.add_argument(
        "--max-layers", type=int, default=64,
        help="deepest transformer for the time to first step (1, 4, 16, 32, 64, 128, ...)",
    )
    parser.add_argument(
        "--first-step-repeat", type=int, default=3,
        help="runs per time-to-first-step median (1 from 64 layers up)",
    )
    parser.add_argument("--cases", default=",".join(c.label for c in STEP_CONFIGS),
                        help="comma-separated step-time cases (empty: none)")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--train", action="store_true",
        help="the training-step rows only (their own docs section; no time to first step)",
    )
    parser.add_argument("--notes", type=Path, default=None,
                        help="markdown notes for the docs (default: keep the ones there)")
    args = parser.parse_args(argv)

    if args.train:
        train_main(args, argv)
        return
    wanted = [c for c in args.cases.split(",") if c]
    step_rows = []
    for config in STEP_CONFIGS:
        if config.label not in wanted:
            continue
        row = step_row(config, args.repeat)
        step_rows.append(row)
        print("| " + " | ".join(row.cells()) + " |", file=sys.stderr, flush=True)
    first_rows = []
    for layers in layer_sweep(args.max_layers):
        repeat = args.first_step_repeat if layers < 64 else 1
        first = first_step_row(layers, repeat)
        first_rows.append(first)
        print("| " + " | ".join(first.cells()) + " |", file=sys.stderr, flush=True)
    step_table = table(STEP_HEADER, [r.cells() for r in step_rows])
    first_table = table(FIRST_HEADER, [r.cells() for r in first_rows])
    print(step_table + "\n\n" + first_table)
    if args.write_docs:
        notes = args.notes.read_text() if args.notes else existing_notes() or "### Notes\n"
        shown = [a for a in (argv or sys.argv[1:])
                 if not a.startswith("--notes") and (args.notes is None or a != str(args.notes))]
        command = "python " + " ".join(["benchmarks/executors.py", *shown])
        write_docs(docs_section(step_table, first_table, command, notes))


def train_main(args: argparse.Namespace, argv: list[str] | None) -> None:
    """`--train`: the training-step rows, in the `executors-train` docs section."""
    rows = []
    for config in TRAIN_CONFIGS:
        row = step_row(config, args.repeat)
        rows.append(row)
        print("| " + " | ".join(row.cells()) + " |", file=sys.stderr, flush=True)
    step_table = table(STEP_HEADER, [r.cells() for r in rows])
    print(step_table)
    if args.write_docs:
        notes = args.notes.read_text() if args.notes else (
            existing_notes("executors-train") or "### Notes\n"
        )
        shown = [a for a in (argv or sys.argv[1:])
                 if not a.startswith("--notes") and (args.notes is None or a != str(args.notes))]
        command = "python " + " ".join(["benchmarks/executors.py", *shown])
        import jax

        write_section("executors-train", "\n".join([
            "## Executors: training steps",
            "",
            f"`benchmarks/executors.py --train`, JAX {jax.__version__} on CPU with 8 simulated "
            f"devices ({os.cpu_count()} cores):",
            "one training step (docs/guide.md, \"Training steps\") of zoo models under `dp_tp`,"
            " measured",
            "as (a) and (b) of the section above.",
            "",
            f"Command: `{command}`",
            "",
            step_table,
            "",
            notes.rstrip(),
        ]))


if __name__ == "__main__":
    main()
