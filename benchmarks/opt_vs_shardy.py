"""`shardc opt -p sdy-propagation-pipeline` against jaxlib's Shardy on a JAX-lowered MLP.

    python benchmarks/opt_vs_shardy.py                          # 1024 and 4096 layers, 3 runs
    python benchmarks/opt_vs_shardy.py --layers 1024,4096,16384 --runs 5
    python benchmarks/opt_vs_shardy.py --keep /tmp/mlp          # keep the generated modules
    python benchmarks/opt_vs_shardy.py --write-docs             # update docs/benchmarks.md

This is issue 14's measurement, the end-to-end one a user sees. The program is an N-layer MLP
lowered by JAX (`x = maximum(x @ w_i, 0)`, x `[8, 64]` batch-sharded on `dp`, the `[64, 64]`
weights alternately column- and row-sharded on `tp`, a `["dp"=2, "tp"=4]` mesh), as
`jax.jit(f, in_shardings=...).lower(...).as_text()` prints it: four lines per layer.

- **shardc**: `shardc opt IN -p sdy-propagation-pipeline` minus `shardc opt IN`, each a fresh
  process, so start-up, parsing and printing cancel and what is left is the pipeline, the
  verification after it and the extra printing of the shardings it added.
- **Shardy**: jaxlib's `sdy-propagation-pipeline` run in this process on the parsed module
  (its parse excluded).
- **native opt**: `shardc opt IN.native` (parse and print of shardc's own text, start-up
  included), IN.native being `shardc opt IN --emit native`.

Each run times every side once, interleaved; the table gives medians over the runs and the
ratio of the medians, for wall-clock time and for CPU time (children's `rusage` for the
processes, `time.process_time` for Shardy), which other load on the machine disturbs less.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402

WIDTH = 64


def lower_mlp(layers: int) -> str:
    """The StableHLO + sdy text JAX lowers the N-layer MLP to."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("dp", "tp"))

    def mlp(x, *ws):
        for w in ws:
            x = jnp.maximum(x @ w, 0.0)
        return x

    x = jax.ShapeDtypeStruct((8, WIDTH), jnp.float32)
    ws = [jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32) for _ in range(layers)]
    specs = [P("dp", None)] + [P(None, "tp") if i % 2 == 0 else P("tp", None)
                               for i in range(layers)]
    shardings = [NamedSharding(mesh, s) for s in specs]
    return jax.jit(mlp, in_shardings=shardings).lower(x, *ws).as_text()


def run_process(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one `shardc` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "shardc.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run_shardy(text: str) -> tuple[float, float]:
    """(wall, CPU) seconds of jaxlib's pipeline on the parsed module."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir, passmanager

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        pm = passmanager.PassManager.parse("builtin.module(sdy-propagation-pipeline)")
        start, cpu = time.perf_counter(), time.process_time()
        pm.run(module.operation)
        return time.perf_counter() - start, time.process_time() - cpu


def measure(layers: int, runs: int, folder: Path) -> dict[str, list[tuple[float, float]]]:
    text = lower_mlp(layers)
    sdy = folder / f"mlp{layers}.mlir"
    sdy.write_text(text)
    native = folder / f"mlp{layers}.native.mlir"
    subprocess.run([sys.executable, "-m", "shardc.cli", "opt", str(sdy), "--emit", "native",
                    "-o", str(native)], check=True)
    times: dict[str, list[tuple[float, float]]] = {
        "opt": [], "opt -p": [], "shardy": [], "native": []
    }
    for _ in range(runs):
        times["opt"].append(run_process(["opt", str(sdy), "-o", os.devnull]))
        times["opt -p"].append(run_process(
            ["opt", str(sdy), "-p", "sdy-propagation-pipeline", "-o", os.devnull]))
        times["shardy"].append(run_shardy(text))
        times["native"].append(run_process(["opt", str(native), "-o", os.devnull]))
    return times


def median(pairs: list[tuple[float, float]], k: int) -> float:
    return statistics.median(p[k] for p in pairs)


HEADER = ("| layers | lines | measure | `shardc opt` s | `opt -p` s | shardc pipeline s "
          "| Shardy s | shardc/Shardy | native `shardc opt` s |")


def rows(layers: int, lines: int, times: dict[str, list[tuple[float, float]]]) -> list[str]:
    out = []
    for k, label in ((0, "wall"), (1, "CPU")):
        opt, opt_p = median(times["opt"], k), median(times["opt -p"], k)
        ours, theirs = opt_p - opt, median(times["shardy"], k)
        out.append(
            f"| {layers} | {lines:,} | {label} | {opt:.3f} | {opt_p:.3f} | {ours:.3f} | "
            f"{theirs:.3f} | **{ours / theirs:.2f}** | {median(times['native'], k):.3f} |"
        )
    return out


DOCS_INTRO = """## `shardc opt` against Shardy on a JAX-lowered MLP

Issue 14's end-to-end measurement (`benchmarks/opt_vs_shardy.py`, see its docstring): the
N-layer MLP `x = maximum(x @ w_i, 0)` as `jax.jit(...).lower(...).as_text()` prints it, weights
alternately column- and row-sharded on a `["dp"=2, "tp"=4]` mesh. **shardc pipeline** is
`shardc opt IN -p sdy-propagation-pipeline` minus `shardc opt IN` (fresh processes: start-up,
parsing and printing cancel; what is left is the pipeline, the verification after it and the
printing of the shardings it adds); **Shardy** is jaxlib's `sdy-propagation-pipeline` run in
process on the parsed module. **native `shardc opt`** is a whole `shardc opt` process (start-up,
parse, verify, print) on the module in shardc's own text (`--emit native`). Medians over the
runs, each run interleaving the sides; the CPU rows (children's `rusage` for the processes,
`time.process_time` for Shardy) are what other load on the shared machine disturbs least.

Command: `{command}`

{table}

{load}.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="1024,4096", help="comma-separated layer counts")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (medians)")
    parser.add_argument("--keep", default=None, help="write the modules to this folder")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="shardc-mlp-"))
    folder.mkdir(parents=True, exist_ok=True)
    table = [HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    for layers in (int(n) for n in args.layers.split(",")):
        times = measure(layers, args.runs, folder)
        lines = len((folder / f"mlp{layers}.mlir").read_text().splitlines())
        table += rows(layers, lines, times)
        print("\n".join(table[-2:]), file=sys.stderr, flush=True)
    load = (f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
            f"(2 cores); {args.runs} runs per size")
    print("\n".join(table))
    print(f"\n{load}")
    if args.write_docs:
        shown = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--write-docs"]
        command = " ".join(["python benchmarks/opt_vs_shardy.py", *shown, "--write-docs"])
        write_section("opt-vs-shardy", DOCS_INTRO.format(command=command, table="\n".join(table),
                                                         load=load))


if __name__ == "__main__":
    main()
