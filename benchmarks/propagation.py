"""Propagation benchmark: shardc's `propagation-pipeline` against Shardy's, in one run.

    python benchmarks/propagation.py                    # N = 16, 64, 256, 1024, 4096
    python benchmarks/propagation.py --max-n 1024       # a quicker sweep
    python benchmarks/propagation.py --no-shardy        # shardc only (no jaxlib needed)
    python benchmarks/propagation.py --max-n 16384 --max-ops 300000   # issue 14's sizes
    python benchmarks/propagation.py --write-docs       # also update docs/benchmarks.md

Two programs, each N layers deep, built with `shardc.ir.builder.Builder` on a
`["dp"=2, "tp"=4]` mesh:

- `mlp`: N Megatron MLP blocks, `x + (tanh(x @ w1) @ w2)`, the input sharded on its batch dim
  (`dp`), `w1` column-parallel and `w2` row-parallel (`tp`).
- `transformer`: N pre-norm transformer blocks: layer norm, multi-head attention (q/k/v/o
  projections Megatron-sharded, heads split by reshape + transpose, batched `dot_general` for
  scores and context, a max-subtracted softmax), residual, layer norm, MLP, residual.

Only the weights and the input carry shardings; propagation decides every other value.

For every N the table reports the ops in the program, shardc's time for the
`propagation-pipeline` pass (verification off; best of `--repeat` runs), ops/s, t(4N)/t(N)
(linear time keeps it below 4.5), the same growth of a bare walk over the program (the
control: what the memory hierarchy alone adds), and jaxlib's in-process
`sdy-propagation-pipeline` on the exported StableHLO of the same program, parse + pipeline and
pipeline alone, its t(4N)/t(N), and the ratio shardc / Shardy (pipeline alone).

How it measures: in rounds, each round timing every size once, shardc then Shardy, each side
keeping its best per size; every shardc run is a fresh process (`--child`), so no run inherits
the heap an earlier, larger module left. Times are CPU times (`time.process_time`; both sides
run on one thread), so other load on the machine skews the ratio less. Agreement compares
shardc's shardings value by value with Shardy's pipeline cut right after propagation
(tests/shardy_compare.py), up to `--check-max-n`.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docs_section import write_section  # noqa: E402

from shardc.ir.builder import Builder, MeshHandle  # noqa: E402
from shardc.ir.core import Module, Value  # noqa: E402
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline  # noqa: E402

# Small shapes: propagation time depends on the op count, not on tensor sizes.
BATCH, SEQ, MODEL, HEADS, HEAD_DIM, HIDDEN = 8, 16, 64, 4, 16, 256

# ----- the programs ---------------------------------------------------------------------------


def mlp(n: int) -> Module:
    """N Megatron MLP blocks with residuals: `x = x + tanh(x @ w1) @ w2`."""
    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((BATCH, MODEL), "f32", mesh.spec("dp", None), name="x")
        for i in range(n):
            w1 = f.arg((MODEL, HIDDEN), "f32", mesh.spec(None, "tp"), name=f"w1_{i}")
            w2 = f.arg((HIDDEN, MODEL), "f32", mesh.spec("tp", None), name=f"w2_{i}")
            x = b.add(x, b.matmul(b.tanh(b.matmul(x, w1)), w2))
        f.returns(x)
    return b.module


def _layer_norm(b: Builder, x: Value) -> Value:
    """`(x - mean) * rsqrt(var + eps)` over the last dim of a (batch, seq, model) tensor."""
    shape = x.type.shape
    inv_d = b.broadcast(b.constant(1.0 / shape[-1]), shape[:-1], ())
    mean = b.broadcast(b.multiply(b.reduce(x, (2,)), inv_d), shape, (0, 1))
    centered = b.subtract(x, mean)
    var = b.multiply(b.reduce(b.square(centered), (2,)), inv_d)
    eps = b.broadcast(b.constant(1e-5), shape[:-1], ())
    scale = b.broadcast(b.rsqrt(b.add(var, eps)), shape, (0, 1))
    return b.multiply(centered, scale)


def _project(b: Builder, x: Value, w: Value) -> Value:
    """(batch, seq, in) x (in, out) -> (batch, seq, out)."""
    return b.dot_general(x, w, ((2,), (0,)))


def _heads(b: Builder, x: Value) -> Value:
    """(batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim)."""
    return b.transpose(b.reshape(x, (BATCH, SEQ, HEADS, HEAD_DIM)), (0, 2, 1, 3))


def _softmax(b: Builder, s: Value) -> Value:
    shape = s.type.shape
    peak = b.broadcast(b.reduce(s, (3,), "maximum"), shape, (0, 1, 2))
    e = b.exponential(b.subtract(s, peak))
    return b.divide(e, b.broadcast(b.reduce(e, (3,)), shape, (0, 1, 2)))


def _attention(b: Builder, x: Value, wq: Value, wk: Value, wv: Value, wo: Value) -> Value:
    q, k, v = (_heads(b, _project(b, x, w)) for w in (wq, wk, wv))
    scores = b.dot_general(q, k, ((3,), (3,)), batching=((0, 1), (0, 1)))  # (b, h, s, s)
    probs = _softmax(b, scores)
    context = b.dot_general(probs, v, ((3,), (2,)), batching=((0, 1), (0, 1)))  # (b, h, s, d)
    merged = b.reshape(b.transpose(context, (0, 2, 1, 3)), (BATCH, SEQ, HEADS * HEAD_DIM))
    return _project(b, merged, wo)


def _weights(f, mesh: MeshHandle, i: int) -> dict[str, Value]:
    col, row = mesh.spec(None, "tp"), mesh.spec("tp", None)  # Megatron: column then row
    inner = HEADS * HEAD_DIM
    shapes = {
        "wq": ((MODEL, inner), col),
        "wk": ((MODEL, inner), col),
        "wv": ((MODEL, inner), col),
        "wo": ((inner, MODEL), row),
        "w1": ((MODEL, HIDDEN), col),
        "w2": ((HIDDEN, MODEL), row),
    }
    return {k: f.arg(s, "f32", m, name=f"{k}_{i}") for k, (s, m) in shapes.items()}


def transformer(n: int) -> Module:
    """N pre-norm transformer blocks (attention and MLP, each with a residual)."""
    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((BATCH, SEQ, MODEL), "f32", mesh.spec("dp", None, None), name="x")
        for i in range(n):
            w = _weights(f, mesh, i)
            x = b.add(x, _attention(b, _layer_norm(b, x), w["wq"], w["wk"], w["wv"], w["wo"]))
            h = b.tanh(_project(b, _layer_norm(b, x), w["w1"]))
            x = b.add(x, _project(b, h, w["w2"]))
        f.returns(x)
    return b.module


PROGRAMS: dict[str, Callable[[int], Module]] = {"mlp": mlp, "transformer": transformer}

# ----- measuring ------------------------------------------------------------------------------


def num_ops(module: Module) -> int:
    return sum(1 for _ in module.walk())


def pipeline_call(module: Module) -> Callable[[], object]:
    """The measured call: shardc's `propagation-pipeline` pass (verification off) on `module`,
    after a full collection (what the module's building left is not the call's)."""
    manager = PassManager(parse_pipeline("propagation-pipeline"), verify_each=False)
    gc.collect()
    return functools.partial(manager.run, module, PassContext(verify_each=False))


def time_shardc(module: Module) -> float:
    """CPU time of shardc's `propagation-pipeline` pass (verification off) on `module`."""
    call = pipeline_call(module)
    start = time.process_time()
    call()
    return time.process_time() - start


def time_walk(module: Module, repeat: int = 5) -> float:
    """Best time of a bare walk over the module reading the sharding of every operand and
    result of every op: the control for t(4N)/t(N). The walk does a fixed amount of work per
    op, so its growth is what the memory hierarchy alone adds as the program outgrows the
    caches; propagation cannot grow more slowly than the objects it has to read."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for func in module.functions.values():
            for op in func.body:
                for v in op.operands:
                    v.type.mapping  # noqa: B018 - the read is the work
                for v in op.results:
                    v.type.mapping  # noqa: B018
        best = min(best, time.process_time() - start)
    return best


def time_shardy(text: str) -> tuple[float, float]:
    """(parse + pipeline, pipeline alone) CPU times of jaxlib's `sdy-propagation-pipeline`."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir, passmanager

    with jmlir.make_ir_context():
        gc.collect()
        start = time.process_time()
        module = ir.Module.parse(text)
        parsed = time.process_time()
        passmanager.PassManager.parse("builtin.module(sdy-propagation-pipeline)").run(
            module.operation
        )
        end = time.process_time()
    return end - start, end - parsed


def agreement(build: Callable[[], Module], text: str) -> str:
    """`equal/compared` values between shardc's and Shardy's propagation (+ structural notes)."""
    from shardc.stablehlo import import_stablehlo
    from tests.shardy_compare import (
        compare_modules,
        run_shardy,
        shardy_pipeline_until_propagation,
    )

    load_all_passes()
    theirs = import_stablehlo(run_shardy(text, shardy_pipeline_until_propagation()), "shardy")
    ours = build()
    PassManager(parse_pipeline("propagation-pipeline"), verify_each=False).run(
        ours, PassContext(verify_each=False)
    )
    result = compare_modules(ours, theirs)
    out = f"{result.equal}/{result.compared}"
    if result.structural:
        out += " (structural: " + "; ".join(result.structural) + ")"
    if result.differences:
        print("\n".join(result.differences[:10]), file=sys.stderr)
    return out


@dataclass
class Row:
    program: str
    n: int
    ops: int
    shardc: float
    growth: float | None = None  # t(4N)/t(N) against the row with N/4
    walk: float | None = None  # time_walk on the same program
    walk_growth: float | None = None  # the walk's t(4N)/t(N)
    shardy_total: float | None = None
    shardy_pipeline: float | None = None
    shardy_growth: float | None = None  # Shardy's pipeline t(4N)/t(N)
    agree: str = ""

    def cells(self) -> list[str]:
        def ms(t: float | None) -> str:
            return "–" if t is None else f"{t * 1e3:,.0f}" if t >= 0.1 else f"{t * 1e3:.1f}"

        ratio = "–" if not self.shardy_pipeline else f"{self.shardc / self.shardy_pipeline:.2f}"
        return [
            self.program,
            str(self.n),
            f"{self.ops:,}",
            ms(self.shardc),
            f"{self.ops / self.shardc:,.0f}",
            "–" if self.growth is None else f"{self.growth:.2f}",
            "–" if self.walk_growth is None else f"{self.walk_growth:.2f}",
            ms(self.shardy_total),
            ms(self.shardy_pipeline),
            "–" if self.shardy_growth is None else f"{self.shardy_growth:.2f}",
            ratio,
            self.agree or "–",
        ]


HEADER = [
    "program",
    "N",
    "ops",
    "shardc ms",
    "shardc ops/s",
    "t(4N)/t(N)",
    "bare walk t(4N)/t(N)",
    "Shardy parse+pipeline ms",
    "Shardy pipeline ms",
    "Shardy t(4N)/t(N)",
    "shardc/Shardy",
    "agreement",
]


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def run(
    sizes: list[int],
    programs: list[str],
    shardy: bool,
    check_max_n: int,
    repeat: int,
    max_ops: int | None = None,
) -> list[Row]:
    rows: list[Row] = []
    for name in programs:
        program_rows = _measure_program(name, sizes, shardy, check_max_n, repeat, max_ops)
        for row in program_rows:
            print("| " + " | ".join(row.cells()) + " |", file=sys.stderr, flush=True)
        rows += program_rows
    return rows


def measure_in_child(name: str, n: int, text_path: Path | None) -> dict:
    """One run of shardc on the N-layer program, in this (fresh) process: the pipeline's CPU
    time on a module just built, then the bare walk on a second one, whose StableHLO goes to
    `text_path` if given."""
    module = PROGRAMS[name](n)
    ops = num_ops(module)
    shardc = time_shardc(module)
    del module
    fresh = PROGRAMS[name](n)
    walk = time_walk(fresh)
    if text_path is not None:
        from shardc.stablehlo import export_stablehlo

        text_path.write_text(export_stablehlo(fresh))
    return {"ops": ops, "shardc": shardc, "walk": walk}


def _child(name: str, n: int, text_path: Path | None) -> dict:
    command = [sys.executable, __file__, "--child", name, str(n)]
    if text_path is not None:
        command += ["--text", str(text_path)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def _measure_program(
    name: str,
    sizes: list[int],
    shardy: bool,
    check_max_n: int,
    repeat: int,
    max_ops: int | None,
) -> list[Row]:
    """Every size of one program, in rounds: each round times every size once, shardc then
    Shardy, so a burst of load on the shared machine falls on all sizes and both sides alike
    rather than on all the runs of one size; each side keeps its best time per size. Every
    shardc run is a fresh process: what earlier, larger modules left in Python's heap would
    otherwise scatter a smaller module's objects (and the walk's) and slow it down."""
    rows: list[Row] = []
    texts: dict[int, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(repeat):
            last: tuple[int, int] | None = None  # (N, ops) of the previous size
            for i, n in enumerate(sizes):
                if round_ == 0:
                    too_big = max_ops is not None and last is not None and (
                        last[1] * n // last[0] > max_ops
                    )
                    if too_big:
                        break  # ops grow linearly with N: this size and every larger one too
                elif i >= len(rows) or rows[i].ops >= 100_000:
                    continue  # measured once: one run above 100k ops
                path = Path(tmp, f"{name}{n}.mlir") if shardy and round_ == 0 else None
                got = _child(name, n, path)
                if round_ == 0:
                    rows.append(Row(name, n, got["ops"], got["shardc"], walk=got["walk"]))
                    last = (n, got["ops"])
                    if path is not None:
                        texts[n] = path.read_text()
                row = rows[i]
                row.shardc = min(row.shardc, got["shardc"])
                row.walk = min(row.walk, got["walk"])  # type: ignore[type-var]
                if shardy:
                    total, pipeline = time_shardy(texts[n])
                    row.shardy_total = min(row.shardy_total or total, total)
                    row.shardy_pipeline = min(row.shardy_pipeline or pipeline, pipeline)
    by_n = {row.n: row for row in rows}
    for row in rows:
        prev = by_n.get(row.n // 4)
        if prev is not None:
            row.growth = row.shardc / prev.shardc
            row.walk_growth = row.walk / prev.walk  # type: ignore[operator]
            if shardy:
                row.shardy_growth = row.shardy_pipeline / prev.shardy_pipeline  # type: ignore[operator]
        if shardy and row.n <= check_max_n:
            row.agree = agreement(functools.partial(PROGRAMS[name], row.n), texts[row.n])
    return rows


def write_docs(table: str, command: str) -> None:
    """Replace (or add) the propagation section of docs/benchmarks.md."""
    section = "\n".join(
        [
            "## Propagation",
            "",
            "shardc's `propagation-pipeline` against jaxlib's in-process `sdy-propagation-pipeline`"
            " on the same program, measured in the same run (`benchmarks/propagation.py`, see "
            "benchmarks/README.md). Times are CPU times, the best of 3 runs below 100k ops "
            "(one run above) taken in rounds: each round times every size once, shardc then "
            "Shardy, and every shardc run is a fresh process; `shardc/Shardy` divides shardc's "
            "time by Shardy's pipeline alone (its parse "
            "excluded); agreement counts the values both give the same sharding (checked up to "
            "N = 1024). `bare walk t(4N)/t(N)` is the control: the growth of a walk that only "
            "reads the sharding of every operand and result of every op of the same program "
            "(fixed work per op), i.e. what the memory hierarchy alone adds as the program "
            "outgrows the caches. On a shared 2-core machine the figures move by about ±10% "
            "between runs.",
            "",
            f"Command: `{command}`",
            "",
            table,
        ]
    )
    write_section("propagation", section)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-n", type=int, default=16)
    parser.add_argument("--max-n", type=int, default=4096, help="largest N (sizes grow by 4x)")
    parser.add_argument("--programs", default="mlp,transformer")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (1 above 100k ops)")
    parser.add_argument("--no-shardy", action="store_true", help="skip jaxlib's Shardy")
    parser.add_argument("--max-ops", type=int, default=None,
                        help="leave out the sizes of a program above about this many ops")
    parser.add_argument(
        "--check-max-n",
        type=int,
        default=1024,
        help="check agreement with Shardy up to this N (re-importing Shardy's output is slow)",
    )
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--instructions", action="store_true",
                        help="instead: instructions per size under valgrind's callgrind "
                        "(benchmarks/propagation_instructions.py)")
    parser.add_argument("--cache-sim", action="store_true",
                        help="with --instructions: also the simulated last-level cache's misses")
    parser.add_argument("--functions", type=int, default=0, metavar="K",
                        help="with --instructions: the K C functions grown most per step")
    parser.add_argument("--profiles", type=Path, default=None,
                        help="with --instructions: keep callgrind's profiles in this folder")
    parser.add_argument("--child", nargs=2, metavar=("PROGRAM", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--instructions-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--text", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        load_all_passes()
        print(json.dumps(measure_in_child(args.child[0], int(args.child[1]), args.text)))
        return
    if args.instructions_child:
        from callgrind import counted

        load_all_passes()
        module = PROGRAMS[args.instructions_child[0]](int(args.instructions_child[1]))
        ops = num_ops(module)
        counted(pipeline_call(module))
        print(json.dumps({"ops": ops}))
        return

    sizes = []
    n = args.min_n
    while n <= args.max_n:
        sizes.append(n)
        n *= 4
    programs = args.programs.split(",")
    if args.instructions:
        import propagation_instructions

        propagation_instructions.main(Path(__file__), args, sizes, programs)
        return
    rows = run(sizes, programs, not args.no_shardy, args.check_max_n, args.repeat,
               args.max_ops)
    table = markdown(rows)
    print(table)
    growth = [r.growth for r in rows if r.growth is not None]
    if growth:
        verdict = "yes" if max(growth) < 4.5 else "NO"
        print(f"\nlinear: {verdict} (max t(4N)/t(N) {max(growth):.2f})")
    if args.write_docs:
        write_docs(table, "python " + " ".join(["benchmarks/propagation.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
