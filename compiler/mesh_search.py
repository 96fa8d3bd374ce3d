"""Trying every shape of a mesh: auto-shard on each factorization of its devices into the same
named axes, each shape's best plan reported.

    trials = search_meshes(module, CompileOptions(auto_shard=True, memory_budget=B))
    for t in trials: t.axes, t.comm_bytes, t.peak, t.status, t.gap, t.error
    best = best_trial(trials)          # the fitting plan that moves least (first of equals)

`shardc compile --auto-shard --mesh-search` runs it and compiles the best shape; the report's
`mesh_search` key lists every trial. For 64 devices on (fsdp, tensor): 1x64, 2x32, 4x16, 8x8,
16x4, 32x2, 64x1. Each shape is a full auto-shard (its own free optimum, budget and proof), so
the search costs one pass per shape; a shape no plan fits, or whose program does not divide, is
reported with its error rather than stopping the search.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.printer import print_module
from shardc.pipeline import CompileOptions, CompileResult, compile, with_mesh

__all__ = ["MeshTrial", "best_trial", "factorizations", "search_meshes"]


@dataclass
class MeshTrial:
    axes: dict[str, int]
    comm_bytes: int | None = None
    peak: int | None = None
    status: str | None = None
    gap: float | None = None
    fits: bool = False
    error: str | None = None
    result: CompileResult | None = None

    def summary(self) -> dict[str, Any]:
        return {"mesh": ",".join(f"{k}={v}" for k, v in self.axes.items()),
                "comm_bytes": self.comm_bytes, "peak_memory_bytes_per_device": self.peak,
                "status": self.status, "gap": self.gap, "fits_budget": self.fits,
                "error": self.error}


def factorizations(devices: int, names: tuple[str, ...]) -> Iterator[dict[str, int]]:
    """Every way to write `devices` as a product of one size per axis, smallest first axis
    first."""
    if len(names) == 1:
        yield {names[0]: devices}
        return
    for size in range(1, devices + 1):
        if devices % size == 0:
            for rest in factorizations(devices // size, names[1:]):
                yield {names[0]: size, **rest}


def search_meshes(module: Module, options: CompileOptions) -> list[MeshTrial]:
    """Compile `module` with auto-shard on every shape of its one mesh (module docstring)."""
    if not options.auto_shard:
        raise ShardcError("the mesh search runs auto-shard: pass auto_shard=True")
    if len(module.meshes) != 1:
        raise ShardcError(f"the mesh search needs one mesh, the module declares "
                          f"{len(module.meshes)}")
    (mesh,) = module.meshes.values()
    text = print_module(module)
    trials = []
    for axes in factorizations(mesh.num_devices, tuple(mesh.axis_names)):
        trial = MeshTrial(axes)
        try:
            result = compile(with_mesh(text, axes), dataclasses.replace(options))
        except ShardcError as e:
            trial.error = str(e).splitlines()[0]
        else:
            info = result.report.get("auto_shard", {})
            trial.result = result
            trial.comm_bytes = result.report["total_comm_bytes"]
            trial.peak = result.report["peak_memory_bytes_per_device"]
            trial.status, trial.gap = info.get("status"), info.get("gap")
            trial.fits = bool(info.get("fits_budget", True))
        trials.append(trial)
    return trials


def best_trial(trials: list[MeshTrial]) -> MeshTrial | None:
    fitting = [t for t in trials if t.result is not None and t.fits]
    return min(fitting, key=lambda t: t.comm_bytes or 0) if fitting else None
