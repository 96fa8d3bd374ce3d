"""Issue 31's Flax NNX LM under `shardc.jit(..., auto_shard=True)` against its Megatron plan.

    python benchmarks/autoshard_nnx.py

The model is tests/ecosystem/test_nnx_lm.py's (a 2-layer decoder LM, `nnx.Optimizer` with
`optax.adamw`) at the issue's size (vocab 256, d_model 64, 4 heads, FFN 256, batch 8 x 32) on
`dp=2, tp=4`, its state donated (`donate_argnums=0`: carried state comes back in its layout).
Three plans, each a fresh `shardc.jit` in this process:

- **megatron**: the state annotated with `nnx.with_partitioning` (Megatron on "tp"), the batch
  on "dp"; its reported peak is the budget B;
- **auto, no budget**: the state unannotated (Flax makes it committed, replicated on the mesh),
  `auto_shard=True`;
- **auto, budget B**: the same with `memory_budget=B`.

Columns: the report's bytes moved and peak per device (the compiled program's), auto-shard's
status, gap and where the plan comes from, and the first call's CPU and wall seconds (trace,
compile, run once; the machine is shared, so CPU seconds are the measure of the work).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.ecosystem

import jax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
import tests.ecosystem.test_nnx_lm as lm  # noqa: E402

lm.VOCAB, lm.D, lm.HEADS, lm.FF, lm.SEQ, lm.BATCH = 256, 64, 4, 256, 32, 8


def first_call(name: str, annotate: bool, **options) -> dict:
    mesh = lm.auto_mesh(("dp", "tp"))
    graphdef, state, specs = lm.build(annotate, mesh)
    ins = (specs, P("dp")) if annotate else None
    batch = lm.batch()
    cpu, wall = time.process_time(), time.perf_counter()
    f = shardc.jit(lm.step_for(graphdef), mesh=mesh, in_shardings=ins, donate_argnums=0,
                   **options)
    jax.block_until_ready(f(state, batch))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    report = f.programs()[0].report
    info = report.get("auto_shard") or {}
    row = {
        "plan": name,
        "bytes": report["total_comm_bytes"],
        "peak": report["peak_memory_bytes_per_device"],
        "status": info.get("status", ""),
        "gap": info.get("gap"),
        "source": info.get("source", ""),
        "cpu_s": round(cpu, 1),
        "wall_s": round(wall, 1),
    }
    print(row, flush=True)
    return row


def main() -> None:
    megatron = first_call("megatron", True)
    budget = megatron["peak"]
    free = first_call("auto, no budget", False, auto_shard=True)
    budgeted = first_call(f"auto, budget {budget:,}", False, auto_shard=True,
                          memory_budget=budget)
    print("\n| plan | bytes moved per device | peak per device | status | gap | source "
          "| first call CPU s (wall) |\n|---|---|---|---|---|---|---|")
    for r in (megatron, free, budgeted):
        gap = "" if r["gap"] is None else f"{r['gap']:.3f}"
        print(f"| {r['plan']} | {r['bytes']:,} | {r['peak']:,} | {r['status']} | {gap} "
              f"| {r['source']} | {r['cpu_s']} ({r['wall_s']}) |")
    fits = budgeted["peak"] <= budget
    print(f"\nfits: {fits}; moves <= megatron: {budgeted['bytes'] <= megatron['bytes']}; "
          f"moves <= no budget: {budgeted['bytes'] <= free['bytes']}")


if __name__ == "__main__":
    main()
