"""`compile(module)`: the default pipeline, from annotated program to per-device program.

    result = compile(module)        # propagate, reshards, collectives, canonicalize, spmd
    result.module                   # global view: every value sharded, collectives explicit
    result.spmd                              # the per-device program (collectives combined)
    result.report                            # CLI.md's JSON report as a dict
    outputs = result.run(inputs, backend="numpy" | "jax")

The global program is kept beside the SPMD one: the report reads collectives and values from
it, and `--emit native|sdy` prints it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from shardc.ir.collector import long_lived
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.mesh import DeviceMesh
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.ir.types import shard_shape
from shardc.passes import manager
from shardc.passes.analysis.cost import collective_report, issued_report
from shardc.passes.manager import Pass, PassContext, PassManager, parse_pipeline, verify_after
from shardc.passes.spmd.combine_collectives import DEFAULT_THRESHOLD
from shardc.report import build_report

DEFAULT_PIPELINE = (
    "propagation-pipeline,close-shardings,insert-reshards,lower-collectives,canonicalize"
)


# A collective's latency priced in bytes (CompileOptions.collective_latency): 16 KiB.
DEFAULT_LATENCY = 16384
GATHER_WEIGHTS = ("auto", "always", "never")

# How reshards become collectives: shardc's search for the cheapest plan, or Shardy's algorithm.
RESHARD_ALGORITHMS = ("cheapest", "shardy")


@dataclass
class CompileOptions:
    pipeline: str = DEFAULT_PIPELINE
    strategy: str = "aggressive"
    reshard_algorithm: str = "cheapest"
    strict: bool = False
    # Verify the IR after every pass (True), or once, the pipeline's global and per-device
    # results (False); None: after every pass in `compile` and the command, once in `shardc.jit`
    # (verifying ~15 passes' results was ~0.2 s of an 8-layer Llama step's first call; its
    # tests compare every result with `jax.jit`'s, and a pass's own bug still fails the check
    # at the end).
    verify_each: bool | None = None
    # Run `auto-shard` first (docs/autoshard.md); `memory_budget`: bytes per device, None: none;
    # `auto_shard_effort`: the solver's work per MIP solve in ticks, None: the pass's default.
    auto_shard: bool = False
    memory_budget: int | None = None
    auto_shard_effort: int | None = None
    # The arguments (flattened, by index) whose buffers the step may reuse after their last read,
    # for auto-shard's memory rows; None: all of them (what the report's peak assumes).
    donated_args: tuple[int, ...] | None = None
    # A result that is the state an argument carries to the next step (same position, type,
    # no declared sharding) comes back in that argument's layout (auto-shard's `carry=auto`).
    auto_shard_carry: bool = False
    # `shardc.jit`'s persistent compile cache (jit_cache.py, docs/jax.md): a directory, or
    # None for none. Not part of the compile: the cache's key leaves it out.
    cache_dir: str | None = None
    # `combine-collectives` on the per-device program: combine independent collectives up to
    # this many result bytes each (XLA's default, 30 MiB + 7); 0 turns it off (docs/spmd.md).
    combine_threshold: int = DEFAULT_THRESHOLD
    # FSDP's plan (passes/propagation/gather_weights.py, docs/spmd.md "Gathering weights"):
    # "auto" compiles a program whose weights and batch share a mesh axis as propagated, with
    # those weights gathered where they are defined, and (when some are embedding tables only
    # a gather indexes) with the other weights gathered, and keeps the cheapest; "always"
    # compares only the gathered plans; "never" compiles the propagated one.
    gather_weights: str = "auto"
    # What one issued collective costs beside its bytes, in bytes (its launch and
    # synchronisation), when "auto" compares the two plans: ring bytes (or bytes under
    # `lower-collectives{cost=bytes}`) + this x collectives issued by the per-device program.
    collective_latency: int = DEFAULT_LATENCY

    @property
    def verifies_each(self) -> bool:
        """Whether the IR is verified after every pass (`verify_each` None: yes)."""
        return self.verify_each is not False

    def spmd_pipeline(self) -> str:
        """The pipeline `compile` runs on the global program's copy: repeated ops merged
        (`cse`), spmd, then (unless the threshold is 0) calls inlined, what that makes repeat
        merged, and collectives combined."""
        if self.combine_threshold < 0:
            raise ShardcError(
                f"combine_threshold must be 0 (off) or more bytes, not {self.combine_threshold}"
            )
        if self.combine_threshold == 0:
            return "cse,spmd,cse"
        return (f"cse,spmd,inline-calls,cse,"
                f"combine-collectives{{threshold={self.combine_threshold}}}")

    def full_pipeline(self) -> str:
        """The pipeline text `compile` runs: `auto-shard{...}` first when asked for."""
        pipeline = self.pipeline
        if self.strategy != "aggressive":
            pipeline = pipeline.replace(
                "propagation-pipeline", f"propagation-pipeline{{strategy={self.strategy}}}"
            )
        if self.reshard_algorithm not in RESHARD_ALGORITHMS:
            raise ShardcError(
                f"unknown reshard algorithm '{self.reshard_algorithm}' (expected one of "
                f"{', '.join(RESHARD_ALGORITHMS)})"
            )
        if self.reshard_algorithm == "shardy":
            pipeline = pipeline.replace("lower-collectives", "lower-collectives{planner=shardy}")
        if self.auto_shard:
            opts = []
            if self.memory_budget:
                opts.append(f"memory-budget={self.memory_budget}")
            if self.auto_shard_effort is not None:
                opts.append(f"effort={self.auto_shard_effort}")
            if self.donated_args is not None:
                listed = ",".join(str(i) for i in sorted(set(self.donated_args)))
                opts.append(f"donate='{listed}'" if listed else "donate=none")
            if self.auto_shard_carry:
                opts.append("carry=auto")
            braces = "{" + ",".join(opts) + "}" if opts else ""
            pipeline = f"auto-shard{braces},{pipeline}"
        return pipeline


@dataclass
class CompileResult:
    module: Module  # global view after the pipeline
    spmd: Module  # the per-device program
    context: PassContext
    timings: dict[str, float] = field(default_factory=dict)
    _report: dict[str, Any] | None = None
    cache: Any = None  # where shardc.jit's persistent cache keeps it (jit_cache.CacheHandle)

    @property
    def warnings(self) -> list[str]:
        return [w.render() for w in self.context.warnings]

    @property
    def report(self) -> dict[str, Any]:
        if self._report is None:
            self._report = build_report(self.module, self.context, self.timings, self.spmd)
        return self._report

    def run(
        self,
        inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
        backend: str = "numpy",
        limits: Limits = DEFAULT_LIMITS,
        host_callbacks: Sequence[Any] | None = None,
    ) -> list[np.ndarray]:
        """Run the per-device program on every device of the mesh; global arrays in and out
        (`limits.while_iterations` bounds each `while`; `host_callbacks`: the functions of its
        Python host callbacks, executors/host_callbacks.py)."""
        if backend == "numpy":
            from shardc.executors.numpy_exec import NumpyExecutor

            return NumpyExecutor(self.spmd, limits=limits,
                                 host_callbacks=host_callbacks).run(inputs)
        if backend == "jax":
            from shardc.executors.jax_exec import JaxExecutor

            return JaxExecutor(self.spmd, limits=limits,
                               host_callbacks=host_callbacks).run(inputs)
        raise ShardcError(f"unknown backend '{backend}' (expected numpy or jax)")


def clone(module: Module) -> Module:
    """A deep copy of the module."""
    return module.clone()


def compile(module: Module, options: CompileOptions | None = None, *,  # noqa: A001
            consume: bool = False) -> CompileResult:
    """Run the default pipeline on a copy of `module`, then lower that to SPMD. `consume`:
    on `module` itself, which becomes the result's global program (`shardc.jit` compiles a
    module it has just imported and keeps no other reference to: the copy was ~0.04 CPU s
    of a 32-layer Llama step's first call)."""
    with long_lived():  # (ir/collector.py; nested phases inside leave it to this one)
        return _compile(module, options or CompileOptions(), consume)


def _compile(module: Module, options: CompileOptions, consume: bool) -> CompileResult:
    # (registers the verifier of written sharding rules, which a pipeline's passes need not
    # import: make_pass imports only the modules of the passes it names)
    from shardc.passes.propagation.rules import registry  # noqa: F401

    if options.gather_weights not in GATHER_WEIGHTS:
        raise ShardcError(f"unknown gather_weights '{options.gather_weights}' (expected one of "
                          f"{', '.join(GATHER_WEIGHTS)})")
    pipeline = options.full_pipeline()
    # (a choice made before propagation: not for a pipeline without it, nor one that names the
    # pass itself, nor auto-shard's, which chooses every sharding)
    if (options.gather_weights == "never" or options.auto_shard or "gather-weights" in pipeline
            or "propagat" not in pipeline):
        return _compile_pipeline(module, options, pipeline, consume)
    from shardc.passes.propagation.gather_weights import weight_gathers

    gathers = weight_gathers(module)
    if not gathers:
        return _compile_pipeline(module, options, pipeline, consume)
    plans = ["gather-weights"]
    if any(g.table for g in gathers) and not all(g.table for g in gathers):
        plans.append("gather-weights{tables=false}")
    if options.gather_weights == "auto":
        plans.insert(0, "")
    results, names = [], []
    for p in plans:
        try:
            text = f"{p},{pipeline}" if p else pipeline
            # (each plan on its own copy: the module is compiled again for the next)
            results.append(_compile_pipeline(module, options, text, consume=False))
        except ShardcError:
            # a gathered plan this program cannot take (the propagated one, compiled first,
            # raises as it always did); `always` with none that compiles raises the last error
            if p == "" or (options.gather_weights == "always" and p == plans[-1] and not results):
                raise
            continue
        names.append(p or "as propagated")
    cost = "bytes" if "cost=bytes" in pipeline else "ring"
    # priced from the two programs alone: the report (and the work it defers until asked,
    # such as the other reshard algorithm's plans) is built only for the plan kept
    figures = [plan_figures(r) for r in results]
    prices = [plan_cost(f, cost, options.collective_latency) for f in figures]
    kept = prices.index(min(prices))
    chosen = results[kept]
    chosen.context.data["gather_weights"] = {
        "kept": names[kept], "cost": cost, "collective_latency": options.collective_latency,
        "plans": [{"plan": n, "bytes": f["total_comm_bytes"], "ring_bytes": f["total_ring_bytes"],
                   "issued": f["issued"]["count"], "price": price}
                  for n, f, price in zip(names, figures, prices)],
    }
    return chosen


def plan_figures(result: CompileResult) -> dict[str, Any]:
    """What `plan_cost` reads of a compiled program, without building its report."""
    figures = collective_report(result.module)
    figures["issued"] = issued_report(result.spmd)
    return figures


def with_chosen_plan(module: Module, options: CompileOptions) -> CompileOptions:
    """`options` whose pipeline is the one `compile` keeps for `module`: with `gather-weights`
    (and its `tables` option) in front when a gathered plan is the cheapest. For tools that
    run the pipeline themselves (`shardc explain`'s baseline and its what-ifs), so that they
    see the program `compile` makes; the choice costs the compiles `compile`'s does."""
    from shardc.passes.propagation.gather_weights import weight_gathers

    if (options.gather_weights == "never" or options.auto_shard
            or "gather-weights" in options.pipeline or not weight_gathers(module)):
        return options
    kept = compile(module, options).report.get("gather_weights", {}).get("kept")
    if kept is None or kept == "as propagated":
        return options
    return replace(options, pipeline=f"{kept},{options.pipeline}")


def plan_cost(report: dict[str, Any], cost: str, latency: int) -> int:
    """A compiled program's communication as `gather_weights="auto"` prices it: its bytes per
    device (ring-model or plain, as lower-collectives' `cost`) + `latency` per collective the
    per-device program issues (after combining)."""
    moved = report["total_ring_bytes"] if cost == "ring" else report["total_comm_bytes"]
    issued = report.get("issued")
    count = issued["count"] if issued is not None else len(report["collectives"])
    return moved + latency * count


def _compile_pipeline(module: Module, options: CompileOptions, pipeline: str,
                      consume: bool) -> CompileResult:
    each = options.verifies_each
    ctx = PassContext(strict=options.strict, verify_each=each)
    start = time.perf_counter()
    work = module if consume else clone(module)
    ctx.timings["copy"] = time.perf_counter() - start
    PassManager(parse_pipeline(pipeline), verify_each=each).run(work, ctx)
    if not each:
        verify_after(work, "the pipeline")
    spmd, passes = spmd_copy(work, parse_pipeline(options.spmd_pipeline()), ctx)
    PassManager(passes, verify_each=each).run(spmd, ctx)
    if not each:
        verify_after(spmd, "the per-device pipeline")
    return CompileResult(work, spmd, ctx, dict(ctx.timings))


def spmd_copy(module: Module, passes: list[Pass], ctx: PassContext) -> tuple[Module, list[Pass]]:
    """The copy of the global program the per-device pipeline `passes` runs on, and the passes
    left to run: a pipeline that starts with `cse` (every pipeline `compile` makes) has it run
    as the copy is made (`cse.merged_copy`; timed as the pass)."""
    if not passes or passes[0].name != "cse":
        return clone(module), passes
    from shardc.passes.spmd.cse import merged_copy

    start = time.perf_counter()
    copy = merged_copy(module)
    ctx.timings["cse"] = ctx.timings.get("cse", 0.0) + time.perf_counter() - start
    if ctx.verify_each:  # (the pass manager's check after a pass, as it would have run it)
        manager.verify_after(copy, "pass 'cse'")
    return copy, passes[1:]


def local_shape(value) -> list[int]:
    return list(shard_shape(value.type.shape, value.mapping))


def with_mesh(text: str, axes: dict[str, int], filename: str = "<input>") -> Module:
    """Parse native `text` with its (single) mesh's axis sizes replaced by `axes`, or with a
    mesh `@mesh` of those axes added when the text declares none. An axis-less mesh (JAX's
    `@empty_mesh` of 0-d arguments) is not one to resize, and stays."""
    module = parse_module(text, filename)
    meshes = [m for m in module.meshes.values() if not m.is_empty]
    if not meshes:
        name = "mesh" if "mesh" not in module.meshes else "jit_mesh"
        mesh = DeviceMesh.create(name, axes)
        return parse_module(f"mesh @{name} = {mesh.text()}\n\n" + text, filename)
    if len(meshes) > 1:
        raise ShardcError(
            f"--mesh cannot choose between the {len(meshes)} meshes this module declares"
        )
    (old,) = meshes
    if set(old.axis_names) != set(axes):
        raise ShardcError(
            f"--mesh names axes {sorted(axes)}, but mesh @{old.name} has axes "
            f"{list(old.axis_names)}; give a size for exactly those axes"
        )
    new = DeviceMesh.create(old.name, {a: axes[a] for a in old.axis_names})
    printed = print_module(module)
    before = f"mesh @{old.name} = {old.text()}"
    return parse_module(printed.replace(before, f"mesh @{old.name} = {new.text()}", 1), filename)
