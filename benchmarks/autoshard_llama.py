"""Auto-sharding a Llama-3-8B-shaped training step against a MaxText-style expert plan.

    python benchmarks/autoshard_llama.py                         # 64 and 256 devices, 32 layers
    python benchmarks/autoshard_llama.py --meshes 64 --layers 2  # quicker
    python benchmarks/autoshard_llama.py --mesh-search           # also 64's other mesh shapes
    python benchmarks/autoshard_llama.py --write-docs            # update docs/benchmarks.md

The step is examples/llama_jax.py's: Llama-3-8B's shape (32 layers, d_model 4096, 32 heads and
8 KV heads of 128, SwiGLU 14336, vocab 128256, RMSNorm, RoPE, bf16 weights, AdamW with f32
moments), global batch one sequence of 2048 tokens per device, lowered from
`jax.ShapeDtypeStruct`s (nothing is allocated). On each mesh:

- **expert**: the step with the MaxText-style shardings (FSDP on the embed dims, tensor
  parallelism on heads, MLP and vocab, the batch on data x fsdp, activation constraints) compiled
  with shardc's default pipeline (calls inlined first, as XLA does);
- **auto**: the same step with no sharding at all, `auto-shard{memory-budget=B}` with B the
  expert's peak bytes per device, then the default pipeline.

Every run is a fresh process (`--child`), so its peak resident memory is its own. Times are CPU
seconds of that process (the machine is shared; wall time is not a measure of the work). The
columns: the auto-sharded plan's bytes per device and peak (measured on the compiled program),
the expert's, their ratio, the solver's status, its proven gap (against the larger of HiGHS's
bound and the free optimum), the pass's CPU seconds (build: graph + formulation; solve), the
verify compile, and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))  # tests.test_examples: the one loader of examples/*.py

MESHES: dict[str, tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...]]] = {
    # name: (shape, axis names, the batch's axes)
    "64": ((8, 8), ("fsdp", "tensor"), ("fsdp",)),
    "256": ((4, 8, 8), ("data", "fsdp", "tensor"), ("data", "fsdp")),
}
SEARCH = {"64": [(4, 16), (16, 4), (2, 32), (32, 2)]}  # other (fsdp, tensor) shapes of 64


def _lower(shape: tuple[int, ...], names: tuple[str, ...], batch: tuple[str, ...], layers: int,
           expert: bool):
    import jax
    from jax.sharding import AbstractMesh

    from shardc.ir.mesh import DeviceMesh
    from shardc.jax_api import from_jax
    from shardc.passes.propagation.autoshard.inline import inline_calls
    from tests.test_examples import load_example

    lm = load_example("llama_jax")
    devices = 1
    for n in shape:
        devices *= n
    cfg = lm.llama3_8b(layers=layers, batch=devices, seq=2048)
    mesh = AbstractMesh(shape, names)
    if expert:
        specs = lm.expert_specs(cfg, batch, "fsdp", "tensor")
        acts = lm.expert_activations(batch, "tensor")
    else:
        specs, acts = lm.unannotated_specs(cfg), None
    with jax.sharding.use_abstract_mesh(mesh):
        module = from_jax(lm.make_step(cfg, acts), *lm.abstract_args(cfg), mesh=mesh,
                          in_shardings=specs)
    if not module.meshes:
        module.add_mesh(DeviceMesh.create("mesh", dict(zip(names, shape))))
    inline_calls(module, module.main)
    return module


def child(shape: tuple[int, ...], names: tuple[str, ...], batch: tuple[str, ...], layers: int,
          budget: int | None, options: str) -> dict[str, Any]:
    """One run (expert when `budget` is None) in this process; its figures."""
    from shardc.pipeline import DEFAULT_PIPELINE, CompileOptions, compile

    start = time.process_time()
    module = _lower(shape, names, batch, layers, budget is None)
    lowered = time.process_time() - start
    start = time.process_time()
    if budget is None:
        result = compile(module, CompileOptions(verify_each=False))
    else:
        opts = ",".join([f"memory-budget={budget}", *([options] if options else [])])
        result = compile(module, CompileOptions(pipeline=f"auto-shard{{{opts}}},"
                                                + DEFAULT_PIPELINE, verify_each=False))
    report = result.report
    out = {
        "comm": report["total_comm_bytes"],
        "peak": report["peak_memory_bytes_per_device"],
        "lower_s": round(lowered, 1),
        "compile_s": round(time.process_time() - start, 1),
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    info = report.get("auto_shard")
    if info is not None:
        t = info["time_s"]
        out.update({
            "status": info["status"], "gap": info["gap"], "source": info["source"],
            "bound": info["dual_bound"], "free": info["free_optimum"],
            "build_s": round(t.get("graph", 0) + t.get("formulate", 0), 1),
            "solve_s": round(t.get("solve", 0), 1), "verify_s": round(t.get("verify", 0), 1),
            "variables": info["graph"]["variables"], "groups": info["graph"]["groups"],
            "nodes": info["graph"]["nodes"], "planned": info["graph"]["planned_reshards"],
            "warnings": result.warnings,
        })
    return out


def _run(mesh: str, shape: tuple[int, ...], layers: int, budget: int | None,
         options: str) -> dict[str, Any]:
    names, batch = MESHES[mesh][1], MESHES[mesh][2]
    argv = [sys.executable, __file__, "--child", json.dumps(
        {"shape": shape, "names": names, "batch": batch, "layers": layers, "budget": budget,
         "options": options})]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| devices | mesh | layers | expert GB moved | auto GB moved | auto / expert | expert "
        "peak GB (= budget) | auto peak GB | status | proven gap | build s | solve s | "
        "verify s | peak RSS GB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e, a = r["expert"], r["auto"]
        if "error" in a or "error" in e:
            lines.append(f"| {r['devices']} | {r['mesh']} | {r['layers']} | "
                         f"{e.get('error', _gb(e.get('comm', 0)))} | {a.get('error', '')} |"
                         + " |" * 9)
            continue
        gap = "n/a" if a["gap"] is None else f"{100 * a['gap']:.2f}%"
        lines.append(
            f"| {r['devices']} | {r['mesh']} | {r['layers']} | {_gb(e['comm'])} | "
            f"{_gb(a['comm'])} | {a['comm'] / max(e['comm'], 1):.2f} | {_gb(e['peak'])} | "
            f"{_gb(a['peak'])} | {a['status']} ({a['source']}) | {gap} | {a['build_s']} | "
            f"{a['solve_s']} | {a['verify_s']} | {a['rss'] / 1e9:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--meshes", default="64,256")
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--options", default="follow=updates",
                   help="extra auto-shard options (pass syntax)")
    p.add_argument("--mesh-search", action="store_true",
                   help="also 64 devices' other (fsdp, tensor) shapes, same budget")
    p.add_argument("--write-docs", action="store_true")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        c = json.loads(args.child)
        print(json.dumps(child(tuple(c["shape"]), tuple(c["names"]), tuple(c["batch"]),
                               c["layers"], c["budget"], c["options"])))
        return 0
    rows = []
    for mesh in args.meshes.split(","):
        shapes = [MESHES[mesh][0]]
        if args.mesh_search:
            shapes += SEARCH.get(mesh, [])
        expert = _run(mesh, MESHES[mesh][0], args.layers, None, "")
        for shape in shapes:
            auto = _run(mesh, shape, args.layers, expert.get("peak"), args.options)
            row = {"devices": mesh, "mesh": "x".join(map(str, shape)), "layers": args.layers,
                   "expert": expert, "auto": auto}
            rows.append(row)
            print(json.dumps(row), flush=True)
    text = table(rows)
    print(text)
    if args.write_docs:
        from docs_section import write_section

        write_section("autoshard-llama", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
