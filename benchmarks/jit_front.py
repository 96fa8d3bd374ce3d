"""shardc.jit's first call outside the passes, the per-device program and XLA's compile: JAX's
lowering of the function beside `jax.jit`'s own, the StableHLO import split into what is paid
once per process and what is paid per module, the miss path, and the Python modules the call
imports (with the dataclasses and regular expressions their import builds).

    python benchmarks/jit_front.py                        # nnx,llama8; best of 3
    python benchmarks/jit_front.py --programs llama2 --runs 5

The programs and the mesh are benchmarks/jit.py's; every figure is the thread CPU of the
caller's thread in a fresh process (shardc's modules compiled to bytecode first, as jit.py's
`bytecode` does), best of the runs, the two kinds of process taking turns:

- **jax.jit lower**: `jax.jit(f, in_shardings=...).lower(*args)` and `as_text(debug_info=True)`,
  the first lowering in the process (what shardc.jit's "lower" stage does for the same function);
- **shardc.jit**, one first call: **lower** (`lower_to_text`); **import** (`JaxSource.module`),
  and in it: **modules** (the importer's and chlo legalization's modules, imported there),
  **patterns** (the line reader's regular expressions, compiled on first use), **reading**
  (`import_stablehlo` + `legalize_chlo` with both warm, measured by reading the text a second
  time after the call); **miss path** (`Jitted._miss` less the stages it calls: signature,
  shardings, `Lowered`); **program** (`Lowered.program`: the `JaxArrayProgram`, the executors'
  modules imported there); **JAX compile** (`Lowered.compile` less the program and the
  per-device program's printing and reading, or its trace: JAX's compile path on the caller's
  thread, XLA's compile itself running on threads of its own); **dispatch** (the compiled
  program called: arguments placed, the step dispatched, as `jax.jit`'s first call also
  does); **module imports** (every module the
  call imports, at the top of the import: their `exec`, which includes the next two),
  **dataclasses** and **regexes** (the CPU of the `@dataclass` classes and `re.compile`
  patterns made inside the call).
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jit import child  # noqa: E402
from jit_breakdown import _setup  # noqa: E402  (the programs, mesh and shardings)

PROGRAMS = ("nnx", "llama8")
SHARDC = ("lower", "import", "modules", "patterns", "reading", "miss_path", "program",
          "jax_compile", "dispatch", "module_imports", "dataclasses", "regexes")


def _count(owner: Any, attr: str, key: str, acc: dict[str, float],
           outermost: bool = False) -> None:
    """Wrap `owner.attr` so its thread CPU adds up in `acc[key]` (`outermost`: only the
    outermost of nested calls counts)."""
    original = getattr(owner, attr)
    depth = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not outermost or depth[0] == 0:
                acc[key] = acc.get(key, 0.0) + time.thread_time() - start

    setattr(owner, attr, wrapper)


def jax_side(name: str) -> dict[str, float]:
    jax, _, f, args, (_, named) = _setup(name)
    start = time.thread_time()
    jax.jit(f, in_shardings=named).lower(*args).as_text(debug_info=True)
    return {"lower": time.thread_time() - start}


def shardc_side(name: str) -> dict[str, float]:
    import dataclasses
    import gc
    import importlib._bootstrap as bootstrap
    import re._compiler as re_compiler

    import shardc
    from shardc import jax_api, jit_cache, jitted, stages

    jax, mesh, f, args, (specs, _) = _setup(name)
    acc: dict[str, float] = {}
    texts: list[str] = []
    original_module = jit_cache.JaxSource.module

    def module(self: Any) -> Any:
        """The import stage, its modules and patterns timed apart (the rest: reading)."""
        texts.append(self.text)
        start = time.thread_time()
        import shardc.passes.propagation.legalize_chlo  # noqa: F401
        import shardc.stablehlo  # noqa: F401
        from shardc.stablehlo import line_attrs, line_headers, line_records, line_regions
        imported = time.thread_time()
        for patterns in (line_records.forms, line_headers.patterns, line_attrs._patterns,
                         line_regions._forms):
            patterns()
        acc["modules"], acc["patterns"] = imported - start, time.thread_time() - imported
        return original_module(self)

    jit_cache.JaxSource.module = module  # type: ignore[method-assign]
    _count(jax_api, "lower_to_text", "lower", acc)
    _count(jit_cache.JaxSource, "module", "import", acc)
    _count(jit_cache, "compile_module", "pipeline", acc)
    _count(stages.Lowered, "compile", "compile", acc)
    original_program = stages.Lowered.program

    def program(self: Any) -> Any:
        """The program, its class's `lower` timed once it is imported (here, inside the call:
        importing it beforehand would take the executors' modules out of the call)."""
        made = original_program(self)
        if "per_device_trace" not in acc:
            acc["per_device_trace"] = 0.0
            _count(type(made), "lower", "per_device_trace", acc)
            from shardc.executors import jax_arrays, xla_replicas

            _count(jax_arrays, "replica_text", "per_device_trace", acc)
            _count(xla_replicas, "_parse", "per_device_trace", acc)
        return made

    stages.Lowered.program = program  # type: ignore[method-assign]
    _count(stages.Lowered, "program", "program", acc)
    _count(stages.Compiled, "call_leaves", "dispatch", acc)
    _count(jitted.Jitted, "_miss", "miss", acc)
    _count(bootstrap, "_load_unlocked", "module_imports", acc, outermost=True)
    _count(dataclasses, "_process_class", "dataclasses", acc)
    _count(re_compiler, "compile", "regexes", acc)
    fn = shardc.jit(f, mesh=mesh, in_shardings=specs)
    jax.block_until_ready(fn(*args))
    acc["miss_path"] = acc["miss"] - sum(acc[k] for k in ("lower", "import", "pipeline",
                                                          "compile"))
    acc["jax_compile"] = acc["compile"] - acc["program"] - acc["per_device_trace"]
    from shardc.passes.propagation.legalize_chlo import legalize_chlo
    from shardc.stablehlo import import_stablehlo

    gc.collect()  # (else the full collection the call's objects made due would be timed here)
    start = time.thread_time()
    legalize_chlo(import_stablehlo(texts[0], f"<jax:{name}>"))
    acc["reading"] = time.thread_time() - start
    return {k: acc[k] for k in SHARDC}


def measure(name: str, runs: int) -> dict[str, Any]:
    got: dict[str, list[dict[str, float]]] = {"jax": [], "shardc": []}
    for r in range(runs):
        sides = [("jax", "--jax"), ("shardc", "--shardc")]
        for kind, flag in sides[r % 2:] + sides[:r % 2]:
            got[kind].append(child(__file__, flag, name))

    def best(kind: str, k: str) -> float:
        return min(run[k] for run in got[kind])

    return {"name": name, "runs": runs, "jax": best("jax", "lower"),
            **{k: best("shardc", k) for k in SHARDC}}


def row(m: dict[str, Any]) -> str:
    ms = [f"{m['jax'] * 1e3:.0f}"] + [f"{m[k] * 1e3:.1f}" for k in SHARDC]
    return f"| {m['name']} | " + " | ".join(ms) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--jax", help=argparse.SUPPRESS)  # NAME
    parser.add_argument("--shardc", help=argparse.SUPPRESS)  # NAME
    args = parser.parse_args()
    if args.jax or args.shardc:
        result = jax_side(args.jax) if args.jax else shardc_side(args.shardc)
        print(json.dumps(result))
        return
    print("CPU ms, best of", args.runs)
    print("| program | jax.jit lower | shardc.jit: lower | import | (modules | patterns | "
          "reading) | miss path | program | JAX compile | dispatch | module imports | "
          "(dataclasses | regexes) |")
    print("|---" * 14 + "|")
    for name in args.programs.split(","):
        print(row(measure(name, args.runs)), flush=True)
    print(f"\nload average (1 min) at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
