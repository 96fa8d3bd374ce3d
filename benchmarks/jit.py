"""shardc.jit against jax.jit: time to the first result and time per call, side by side.

    python benchmarks/jit.py                  # 3 runs, each in a fresh process
    python benchmarks/jit.py --runs 5
    python benchmarks/jit.py --write-docs     # update docs/benchmarks.md

Three JAX functions on a 2x4 ("dp", "tp") mesh of 8 CPU devices, with the same in_shardings
for both sides:

- `tiny`: `x * 2 + 1` on a 64x128 f32 array sharded over both axes: the per-call overhead;
- `mlp`: a Megatron MLP, (256x1024) @ (1024x4096), relu, @ (4096x1024);
- `transformer`: 4 pre-norm blocks (attention with 8 heads, MLP), batch 8 x 128 tokens x 256.

**First call**: the first `f(*args)` of a new `jax.jit` / `shardc.jit` function until the result
is ready (tracing, lowering and XLA's compile for both; shardc also imports the module, runs its
pipeline and traces its per-device program). Each run is a fresh process, so neither side finds
its program in JAX's in-process caches; the sides alternate which goes first. shardc's share is
split into JAX lowering + import, shardc's pipeline, and the per-device program's trace + XLA
compile (`Compiled.timings`).

**Per call**: the median over 200 calls (`tiny`: 2000) of one call until its result is ready,
with the arguments already on the devices in their shardings, the two sides interleaved in
blocks of 10 calls.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402

PROGRAMS = ("tiny", "mlp", "transformer")


def build(name: str) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """`(f, args, in_specs)` for program `name`."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec as P

    rng = np.random.default_rng(0)

    def arr(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    if name == "tiny":
        return (lambda x: x * 2 + 1), (arr(64, 128),), (P("dp", "tp"),)
    if name == "mlp":
        def mlp(x, w1, w2):
            return jax.nn.relu(x @ w1) @ w2

        args = (arr(256, 1024), arr(1024, 4096, scale=0.03), arr(4096, 1024, scale=0.03))
        return mlp, args, (P("dp"), P(None, "tp"), P("tp"))
    d, heads, layers = 256, 8, 4

    def norm(h):
        mu = h.mean(-1, keepdims=True)
        return (h - mu) * jax.lax.rsqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    def block(h, p):
        b, t, _ = h.shape
        q, k, v = (jnp.einsum("btd,de->bte", norm(h), p[n]).reshape(b, t, heads, d // heads)
                   for n in ("wq", "wk", "wv"))
        att = jax.nn.softmax(jnp.einsum("bthe,bshe->bhts", q, k) / (d // heads) ** 0.5, -1)
        ctx = jnp.einsum("bhts,bshe->bthe", att, v).reshape(b, t, d)
        h = h + ctx @ p["wo"]
        return h + jax.nn.gelu(norm(h) @ p["w1"]) @ p["w2"]

    def transformer(x, params):
        for p in params:
            x = block(x, p)
        return x

    params = [{"wq": arr(d, d, scale=0.05), "wk": arr(d, d, scale=0.05),
               "wv": arr(d, d, scale=0.05), "wo": arr(d, d, scale=0.05),
               "w1": arr(d, 4 * d, scale=0.05), "w2": arr(4 * d, d, scale=0.05)}
              for _ in range(layers)]
    spec = {"wq": P(None, "tp"), "wk": P(None, "tp"), "wv": P(None, "tp"), "wo": P("tp"),
            "w1": P(None, "tp"), "w2": P("tp")}
    return transformer, (arr(8, 128, d), params), (P("dp"), [spec] * layers)


def one_run(name: str, shardc_first: bool) -> dict[str, Any]:
    """Both sides' first call and per-call times for program `name` (in this process)."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardc

    # Auto axes: with make_mesh's default (Explicit) jax.jit rejects the row-parallel matmul
    # ("contracting dimensions are sharded") unless told its output sharding.
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=auto)
    f, args, specs = build(name)
    named = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), specs,
                                   is_leaf=lambda s: isinstance(s, P))
    ref = jax.jit(f, in_shardings=named)
    ours = shardc.jit(f, mesh=mesh, in_shardings=specs)
    first: dict[str, float] = {}
    results = {}
    for side in (("shardc", "jax") if shardc_first else ("jax", "shardc")):
        fn = ours if side == "shardc" else ref
        start = time.perf_counter()
        results[side] = jax.block_until_ready(fn(*args))
        first[side] = time.perf_counter() - start
    error = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                for a, b in zip(jax.tree_util.tree_leaves(results["shardc"]),
                                jax.tree_util.tree_leaves(results["jax"])))
    # A new shape in the same process: both sides trace and compile again, but neither pays
    # for its one-time start (module imports, parser tables, JAX's own warm-up).
    bigger = (np.concatenate([args[0], args[0]]), *args[1:])
    warm: dict[str, float] = {}
    for side in (("shardc", "jax") if shardc_first else ("jax", "shardc")):
        fn = ours if side == "shardc" else ref
        start = time.perf_counter()
        jax.block_until_ready(fn(*bigger))
        warm[side] = time.perf_counter() - start
    compiled = next(iter(ours._programs.values()))
    placed = jax.device_put(args, named)
    calls = 2000 if name == "tiny" else 200
    times: dict[str, list[float]] = {"jax": [], "shardc": []}
    for _ in range(calls // 10):
        for side, fn in (("jax", ref), ("shardc", ours)):
            for _ in range(10):
                start = time.perf_counter()
                jax.block_until_ready(fn(*placed))
                times[side].append(time.perf_counter() - start)
    return {"first": first, "warm": warm, "breakdown": compiled.timings, "error": error,
            "call": {k: statistics.median(v) for k, v in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # NAME:shardc_first
    args = parser.parse_args()
    if args.one:
        name, order = args.one.split(":")
        print(json.dumps(one_run(name, order == "1")))
        return
    rows = []
    for name in args.programs.split(","):
        runs = []
        for r in range(args.runs):
            proc = subprocess.run(
                [sys.executable, __file__, "--one", f"{name}:{r % 2}"], cwd=ROOT,
                capture_output=True, text=True, check=True,
            )
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows.append((name, runs))
        print(row_text(name, runs), flush=True)
    load = os.getloadavg()[0]
    body = section(rows, args.runs, load)
    print(f"\nload average (1 min) at the end: {load:.1f}")
    if args.write_docs:
        write_section("jit", body)


def _median(runs: list[dict[str, Any]], *path: str) -> float:
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(value)
    return statistics.median(values)


def row_text(name: str, runs: list[dict[str, Any]]) -> str:
    jf, sf = _median(runs, "first", "jax"), _median(runs, "first", "shardc")
    lower = _median(runs, "breakdown", "jax_lower_import")
    pipeline = _median(runs, "breakdown", "shardc_compile")
    xla = _median(runs, "breakdown", "xla_compile")
    jc, sc = _median(runs, "call", "jax") * 1e6, _median(runs, "call", "shardc") * 1e6
    ratios = [r["call"]["shardc"] / r["call"]["jax"] for r in runs]
    error = max(r["error"] for r in runs)
    jw, sw = _median(runs, "warm", "jax"), _median(runs, "warm", "shardc")
    return (f"| {name} | {jf:.3f} | {sf:.3f} | {sf / jf:.2f} | {lower:.3f} / {pipeline:.3f} / "
            f"{xla:.3f} | {jw:.3f} | {sw:.3f} | {sw / jw:.2f} | {jc:,.0f} | {sc:,.0f} | "
            f"{sc / jc:.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | {error:.1e} |")


def section(rows: list[tuple[str, list[dict[str, Any]]]], runs: int, load: float) -> str:
    lines = [
        "## shardc.jit against jax.jit",
        "",
        "The same JAX function and in_shardings given to `jax.jit` and to `shardc.jit` on a 2x4",
        "mesh of 8 CPU devices (JAX 0.10.2): time to the first result (a fresh process per run,",
        "so no in-process cache helps either side) and time per call once compiled (arguments",
        "already placed, each call until its result is ready). Medians over "
        f"{runs} runs; shardc's",
        "first call split into JAX lowering + import / shardc's pipeline / trace + XLA compile",
        "of the per-device program. \"New shape\" is the first call with a doubled batch in",
        "the same process: a recompile without either side's one-time start-up (module imports,",
        "parser tables). The per-call ratio's spread is over the runs. Programs and method:",
        "`benchmarks/jit.py`.",
        "",
        "Command: `python benchmarks/jit.py --write-docs`",
        "",
        "| program | jax.jit first call s | shardc.jit first call s | ratio | shardc: lower+import "
        "/ pipeline / per-device program s | new shape: jax.jit s | shardc.jit s | ratio | "
        "jax.jit per call µs | shardc.jit per call µs | ratio (spread) | max abs diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(row_text(name, rs) for name, rs in rows),
        "",
        f"Machine: 2 cores shared with other jobs (1-minute load average {load:.1f} at the end),",
        "so absolute times are noisy; the ratios come from the same runs.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
