"""`export-pipeline` (Shardy's `sdy-export-pipeline`): Shardy's export passes, in its order and
with its options.

    constant-or-scalar-merger, sink-data-flow-edges{sink-debug-*}    (those if dump-* options),
    remove-sharding-groups, sharding-constraint-to-reshard,         unless avoid-export-...
    update-non-divisible-input-output-shardings,
    remove-sub-axes-in-input-output-shardings,                      if update-non-divisible-...
    close-existing-shardings,
    insert-explicit-reshards{enable-full-version=C or P},           unless avoid-export-...
      sdy-per-instruction-partitioning{...}                         if P, else if C:
      canonicalize{enable-patterns=sdy-reshard}, reshard-to-collectives,
      canonicalize{enable-patterns=sdy-collective},
      sdy-remove-all-gather-reduce-scatter-for-cmv1                 if C and that option
    remove-propagation-debug-info                                   if dump-* options
    drop-sharding-rules                                             unless keep-sharding-rules
    sdy-inline-meshes                                               if inline-meshes (default)

(C = enable-insert-explicit-collectives, P = enable-per-instruction-partitioning.) As in Shardy,
`dump-sharding-origins` / `dump-propagation-edges` keep the debugging attributes Shardy's
propagation options wrote (passes/propagation/shardy_debug.py) through the sink, for the module
dumps, and remove them at the end. Steps shardc does not have yet are named by their sdy name,
so they run once registered; until then the pipeline stops with an error naming the missing
pass and the option that leaves it out.
Not reproduced: Shardy's `sdy-verify-unreduced-axes` check before the explicit reshards, and
its module dumps (`dump-directory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError
from shardc.passes.manager import (
    ALIASES,
    PASSES,
    Pass,
    PassContext,
    PassManager,
    load_pass,
    parse_pipeline,
    register_alias,
    register_pass,
)


@register_pass("export-pipeline")
@dataclass(frozen=True)
class ExportPipeline(Pass):
    """Shardy's export passes in order (`sdy-export-pipeline`)."""

    replica_count: int = 1
    partition_count: int = 1
    dump_directory: str = ""
    avoid_export_for_partitioning: bool = False
    enable_insert_explicit_collectives: bool = False
    remove_all_gather_reduce_scatter_for_cmv1: bool = False
    enable_per_instruction_partitioning: bool = False
    per_instruction_partitioning_filter: str = ""
    keep_sharding_rules: bool = False
    dump_sharding_origins: bool = False
    dump_propagation_edges: bool = False
    avoid_reshards_on_calls: bool = False  # accepted, unused (as in Shardy)
    update_non_divisible_input_output_shardings: bool = True
    inline_meshes: bool = True

    def steps(self) -> list[str]:
        if self.dump_directory:
            raise PassError("export-pipeline: dump-directory is not supported (use "
                            "`shardc opt --print-ir-after-all`)")
        debug = self.dump_sharding_origins or self.dump_propagation_edges
        export = not self.avoid_export_for_partitioning
        collectives = self.enable_insert_explicit_collectives
        per_instruction = self.enable_per_instruction_partitioning
        sink = "sink-data-flow-edges"
        if debug:  # the debugging attributes of the edge ops go onto their data-flow ops
            origins = str(self.dump_sharding_origins).lower()
            edges = str(self.dump_propagation_edges).lower()
            sink += (f"{{sink-debug-sharding-origins={origins} "
                     f"sink-debug-propagation-edge-sharding={edges}}}")
        steps = ["constant-or-scalar-merger", sink]
        if export:
            steps += ["remove-sharding-groups", "sharding-constraint-to-reshard"]
        if self.update_non_divisible_input_output_shardings:
            steps += ["update-non-divisible-input-output-shardings",
                      "remove-sub-axes-in-input-output-shardings"]
        steps.append("close-existing-shardings")
        if export:
            full = str(collectives or per_instruction).lower()
            steps.append(f"insert-explicit-reshards{{enable-full-version={full}}}")
            if per_instruction:
                steps.append(
                    "sdy-per-instruction-partitioning{"
                    f"filter='{self.per_instruction_partitioning_filter}' "
                    f"replica-count={self.replica_count} "
                    f"partition-count={self.partition_count}}}")
            elif collectives:
                steps += ["canonicalize{enable-patterns=sdy-reshard}", "reshard-to-collectives"]
            steps.append("canonicalize{enable-patterns=sdy-collective}")
            if collectives and self.remove_all_gather_reduce_scatter_for_cmv1:
                steps.append("sdy-remove-all-gather-reduce-scatter-for-cmv1")
        if debug:
            steps.append("remove-propagation-debug-info")
        if not self.keep_sharding_rules:
            steps.append("drop-sharding-rules")
        if export and self.inline_meshes:
            steps.append("sdy-inline-meshes")
        return steps

    def run(self, module: Module, ctx: PassContext) -> None:
        steps = self.steps()
        for step in steps:
            name = step.split("{")[0]
            if name not in PASSES and name not in ALIASES:
                load_pass(name)  # (a pipeline imports only the pass modules it names)
            if name not in PASSES and name not in ALIASES:
                option = {"sdy-inline-meshes": "inline-meshes=false",
                          "sdy-per-instruction-partitioning":
                              "enable-per-instruction-partitioning=false",
                          "sdy-remove-all-gather-reduce-scatter-for-cmv1":
                              "remove-all-gather-reduce-scatter-for-cmv1=false"}.get(name, "")
                raise PassError(f"export-pipeline: this shardc has no '{name}' pass yet; "
                                f"run with {option} to leave it out")
        pipeline = parse_pipeline(",".join(steps))
        PassManager(pipeline, verify_each=ctx.verify_each).run(module, ctx)


register_alias("sdy-export-pipeline", "export-pipeline")
