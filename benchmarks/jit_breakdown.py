"""Where the CPU time of `shardc.jit`'s cold first call goes, stage by stage, beside `jax.jit`'s.

    python benchmarks/jit_breakdown.py                      # llama2,llama8,llama32,nnx; 3 runs
    python benchmarks/jit_breakdown.py --programs llama8 --runs 5
    python benchmarks/jit_breakdown.py --write-docs         # update docs/benchmarks.md

The programs and the mesh are benchmarks/jit.py's (benchmarks/jit_programs.py; 2x4 ("dp", "tp")
mesh of 8 CPU devices, the same in_shardings on both sides). Each run is three fresh processes,
the order rotating: `jax.jit`, `shardc.jit` as called by default (no cache) and `shardc.jit`
with `CompileOptions(cache_dir=)` on an empty directory (the benchmark's cold run, which also
writes the entry; shardc's modules compiled to bytecode beforehand, as jit.py's `bytecode`
does). Each times the first `f(*args)` until its result is ready, in CPU seconds of
the whole process (every thread: XLA compiles and runs on threads of its own, shardc writes its
cache entry on one). The default call is split by timing each stage's CPU:

- **lower**: JAX traces and lowers the user's function and prints it (`lower_to_text`);
- **import**: `import_stablehlo` + chlo legalization (`JaxSource.module`);
- **pipeline**: shardc's passes (`shardc.compile`);
- **per-device program**: the per-device program printed by shardc as XLA's module of N
  replicas and read by MLIR (`replica_text`, `xla_replicas._parse`), or, for a program that
  needs it, interpreted in Python under `jax.shard_map`, traced to a jaxpr and lowered to
  StableHLO (`JaxArrayProgram.lower`); *route* says which (`text`, `trace`, `partitioned`);
- **XLA compile**: the process's CPU inside XLA's compile (`backend_compile_and_load`);
- **first run**: the process's CPU from the call's return to its result being ready (the step
  itself, dispatched asynchronously: `jax.jit`'s first call runs it too);
- **rest**: the call's CPU less the above (`Jitted`'s miss around them, placing arguments).

`jax.jit`'s call is split the same way (XLA compile, first run, the rest: its trace and
lowering). The cold call adds **store** (the cache entry: report and both programs as text, on
its thread) and **serialize** (the XLA executable serialized for the cache).

With `--xla-compare`, the default process then compiles its per-device program again, alone
(nothing else running in the process), alternating, best of 2: partitioned, as `jax.jit` would
compile `JaxArrayProgram`'s lowering (Shardy's round trip and the SPMD partitioner over a
manual computation), and as shardc.jit compiled it (N replicas of the body, when the program
fits: compiler/executors/xla_replicas.py). Figures are best of the runs per column (CPU time
still depends on the machine's load: caches, frequency).
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402
from jit import child  # noqa: E402

PROGRAMS = ("llama2", "llama8", "llama32", "nnx")
STAGES = ("lower", "import", "pipeline", "per_device", "xla", "run")
CACHE = ("store", "serialize")  # what the cold call adds


def _timed(owner: Any, attr: str, key: str, acc: dict[str, float]) -> None:
    """Wrap `owner.attr` so its thread CPU time adds up in `acc[key]`."""
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            acc[key] = acc.get(key, 0.0) + time.thread_time() - start

    setattr(owner, attr, wrapper)


def _setup(name: str) -> tuple[Any, Any, Any, Any, Any]:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
    from jit_programs import build

    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=auto)
    f, args, specs = build(name)
    named = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), specs,
                                   is_leaf=lambda s: isinstance(s, P))
    return jax, mesh, f, args, (specs, named)


def _first_call(jax: Any, fn: Callable[..., Any], args: Any, acc: dict[str, float]) -> float:
    """The call's process CPU; `acc["run"]`: the part after it returned (the step running)."""
    start = time.process_time()
    out = fn(*args)
    returned = time.process_time()
    jax.block_until_ready(out)
    end = time.process_time()
    acc["run"] = end - returned
    return end - start


def _xla_timed(acc: dict[str, float]) -> tuple[Callable[..., Any], list[tuple[Any, ...]]]:
    """XLA's compile wrapped: its process CPU adds up in `acc["xla"]`; returns the original
    and the list that collects what XLA was given (backend, module, devices, options)."""
    from jax._src import compiler as jax_compiler

    compiled: list[tuple[Any, ...]] = []
    original = jax_compiler.backend_compile_and_load

    def timed(backend: Any, module: Any, devices: Any, options: Any, callbacks: Any) -> Any:
        compiled.append((backend, module, devices, options))
        start = time.process_time()
        try:
            return original(backend, module, devices, options, callbacks)
        finally:
            acc["xla"] = acc.get("xla", 0.0) + time.process_time() - start

    jax_compiler.backend_compile_and_load = timed
    return original, compiled


def jax_side(name: str) -> dict[str, Any]:
    jax, _, f, args, (_, named) = _setup(name)
    acc: dict[str, float] = {}
    _xla_timed(acc)
    total = _first_call(jax, jax.jit(f, in_shardings=named), args, acc)
    return {"total": total, "xla": acc["xla"], "run": acc["run"],
            "rest": total - acc["xla"] - acc["run"]}


def shardc_side(name: str, cache_dir: str, xla_compare: bool) -> dict[str, Any]:
    """`cache_dir` "": shardc.jit's default (no cache), split by stage; else the cold call."""
    from jax.experimental import serialize_executable

    import shardc
    from shardc import jax_api, jit_cache
    from shardc.executors import jax_arrays, xla_replicas
    from shardc.executors.jax_arrays import JaxArrayProgram
    from shardc.executors.xla_replicas import ReplicaExecutable

    jax, mesh, f, args, (specs, _) = _setup(name)
    acc: dict[str, float] = {}
    _timed(jax_api, "lower_to_text", "lower", acc)
    _timed(jit_cache.JaxSource, "module", "import", acc)
    _timed(jit_cache, "compile_module", "pipeline", acc)
    _timed(JaxArrayProgram, "lower", "per_device", acc)
    _timed(jax_arrays, "replica_text", "per_device", acc)
    _timed(xla_replicas, "_parse", "per_device", acc)
    _timed(jit_cache.CompileCache, "store", "store", acc)
    _timed(serialize_executable, "serialize", "serialize", acc)
    _timed(ReplicaExecutable, "serialize", "serialize", acc)
    original, compiled = _xla_timed(acc)
    options = shardc.CompileOptions(cache_dir=cache_dir) if cache_dir else None
    fn = shardc.jit(f, mesh=mesh, in_shardings=specs, options=options)
    total = _first_call(jax, fn, args, acc)
    out: dict[str, Any] = {"total": total, **{k: acc.get(k, 0.0) for k in (*STAGES, *CACHE)}}
    out["rest"] = total - sum(out[k] for k in STAGES)
    (program,) = fn.programs()
    out["ops"] = sum(len(g.body) for g in program.spmd.functions.values())
    out["route"] = program.program().route
    if xla_compare and len(compiled) == 1:
        out.update(_xla_compare(original, *compiled[0], program.program()))
    return out


def _xla_compare(compile_fn: Callable[..., Any], backend: Any, module: Any, devices: Any,
                 options: Any, program: Any) -> dict[str, Any]:
    """XLA's compile CPU of the per-device program, alone, best of 2 each, alternating: as
    `jax.jit` compiles it (a manual computation over every axis, SPMD-partitioned) and as
    the module XLA was given (N replicas of the body, when it fits)."""
    from jax._src import compiler

    order = [list(program.in_shardings[0]._device_assignment)]  # 1 replica of N partitions
    partitioned = compiler.get_compile_options(1, len(order[0]), device_assignment=order,
                                               backend=backend)
    times: dict[str, list[float]] = {"partitioned": [], "given": []}
    for _ in range(2):
        start = time.process_time()
        compile_fn(backend, program.lower().compiler_ir(), devices, partitioned, [])
        times["partitioned"].append(time.process_time() - start)
        start = time.process_time()
        compile_fn(backend, module, devices, options, [])
        times["given"].append(time.process_time() - start)
    return {"xla_partitioned": min(times["partitioned"]), "xla_given": min(times["given"]),
            "replicas": program.replicas}


def measure(name: str, runs: int, xla_compare: bool) -> dict[str, Any]:
    """Best of `runs` per column, the three processes rotating which goes first."""
    got: dict[str, list[dict[str, Any]]] = {"jax": [], "default": [], "cold": []}
    for r in range(runs):
        with tempfile.TemporaryDirectory(prefix="shardc-cache-") as cache_dir:
            sides = [("jax", "--jax", name),
                     ("default", "--shardc", f"{name}:{int(xla_compare)}:"),
                     ("cold", "--shardc", f"{name}:0:{cache_dir}")]
            for kind, flag, value in sides[r % 3:] + sides[:r % 3]:
                got[kind].append(child(__file__, flag, value))
    return {"name": name, "runs": runs,
            **{kind: {k: min(run[k] for run in got[kind]) for k in got[kind][0]}
               for kind in got}}


def row(m: dict[str, Any]) -> str:
    j, s, c = m["jax"], m["default"], m["cold"]
    cells = [m["name"], f"{s['ops']:,}", f"{j['total']:.2f}", f"{s['total']:.2f}",
             f"**{s['total'] / j['total']:.2f}**"]
    cells += [f"{s[k]:.2f}" for k in (*STAGES, "rest")]
    cells += [f"{j['xla']:.2f} / {j['run']:.2f} / {j['rest']:.2f}"]
    cells += [f"{c[k]:.2f}" for k in CACHE]
    cells += [f"{c['total']:.2f}", f"{c['total'] / j['total']:.2f}"]
    cells.append(s["route"])
    if "xla_given" in s:
        given = f"{s['xla_given']:.2f}" if s["replicas"] else "- (partitioned)"
        cells.append(f"{s['xla_partitioned']:.2f} / {given}")
    else:
        cells.append("-")
    return "| " + " | ".join(cells) + " |"


def section(measured: list[dict[str, Any]], runs: int, load: float) -> str:
    import jax

    lines = [
        "### Where shardc.jit's first call spends its CPU time",
        "",
        f"The programs of the shardc.jit table (JAX {jax.__version__}), {runs} "
        f"run{'s' * (runs != 1)}, each three fresh processes (`benchmarks/jit_breakdown.py`): "
        "`jax.jit`, `shardc.jit` as called by "
        "default (no cache) and `shardc.jit` cold with `CompileOptions(cache_dir=)` on an empty "
        "directory (writing the entry); shardc's modules compiled to bytecode beforehand, as an "
        "installed shardc's are. CPU seconds of the whole process (all threads) for the "
        "first call until its result is ready, best of the runs per column. The default call "
        "split by stage: JAX's lowering of the function, the StableHLO import, shardc's "
        "pipeline, the per-device program (printed by shardc as XLA's module of N replicas "
        "and read by MLIR, or traced by JAX under `jax.shard_map`: *route*), XLA's "
        "compile, the first run (CPU from the call's return to the result being ready: the "
        "step itself, on XLA's threads) and the rest; `jax.jit`'s call split the same way "
        "(its rest: trace and lowering). The cold call adds the cache entry (store, on its "
        "thread) and the executable's serialization. *XLA alone*: XLA's compile CPU of the "
        "per-device program rerun "
        "alone in the default process, best of 2: partitioned, as `jax.jit` would compile "
        "`JaxArrayProgram`'s lowering (a manual computation over every axis, through Shardy "
        "and the SPMD partitioner) / as shardc.jit compiles it, N replicas of the body "
        "(docs/jax.md, \"What the first call costs\").",
        "",
        "Command: `python benchmarks/jit_breakdown.py --xla-compare --write-docs`",
        "",
        "| program | per-device ops | jax.jit CPU s | shardc.jit default CPU s | ratio | lower | "
        "import | pipeline | per-device program | XLA compile | first run | rest | jax.jit: XLA "
        "compile / first run / rest | cold: store | cold: serialize | shardc.jit cold CPU s | "
        "ratio | route | XLA alone: partitioned / replicas s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(row(m) for m in measured),
        "",
        f"Machine: 2 cores shared with other jobs (1-minute load average {load:.1f} at the "
        "end); CPU time is steadier than wall time under load, not immune to it.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--xla-compare", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--jax", help=argparse.SUPPRESS)  # NAME
    parser.add_argument("--shardc", help=argparse.SUPPRESS)  # NAME:XLA_COMPARE:CACHE_DIR
    args = parser.parse_args()
    if args.jax:
        print(json.dumps(jax_side(args.jax)))
        return
    if args.shardc:
        name, compare, cache_dir = args.shardc.split(":", 2)
        print(json.dumps(shardc_side(name, cache_dir, compare == "1")))
        return
    measured = []
    for name in args.programs.split(","):
        measured.append(measure(name, args.runs, args.xla_compare))
        print(row(measured[-1]), flush=True)
    load = os.getloadavg()[0]
    print(f"\nload average (1 min) at the end: {load:.1f}")
    if args.write_docs:
        write_section("jit-breakdown", section(measured, args.runs, load))


if __name__ == "__main__":
    main()
