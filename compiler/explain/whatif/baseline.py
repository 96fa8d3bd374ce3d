"""The program as compiled, kept so that changes to it can be measured: the input, the global
program after the pipeline, and a copy taken right after propagation.

    base = compile_baseline(module, CompileOptions())
    base.module          # the global program (every collective explicit), as `compile` makes it
    base.propagated      # a copy right after the propagation pass (None: the pipeline has none)
    base.input_value(v)  # the value of the input program a value of `base.module` stands for
    base.totals          # (communication bytes, ring bytes, peak memory) per device

`compile` (compiler/pipeline.py) copies the input and runs the pipeline on the copy; here the
same passes run in two parts around a second copy, with propagation audited for choices
(passes/propagation/audit.py), and the values of the three programs are paired up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.ir.core import Module, Operation, Value
from shardc.passes.analysis.cost import collective_report
from shardc.passes.manager import Pass, PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.propagation.audit import ChoiceAudit
from shardc.pipeline import CompileOptions, with_chosen_plan

PROPAGATION_PASSES = ("propagation-pipeline", "propagate")


def pair_values(a: Module, b: Module) -> list[tuple[Value, Value]]:
    """The values of `b`, a `clone` of `a`, paired with `a`'s (arguments then results, in
    function and program order)."""
    pairs: list[tuple[Value, Value]] = []
    for fa, fb in zip(a.functions.values(), b.functions.values(), strict=True):
        pairs += list(zip(fa.args, fb.args, strict=True))
        for oa, ob in zip(fa.body, fb.body, strict=True):
            pairs += list(zip(oa.results, ob.results, strict=True))
    return pairs


def pair_ops(a: Module, b: Module) -> list[tuple[Operation, Operation]]:
    pairs: list[tuple[Operation, Operation]] = []
    for fa, fb in zip(a.functions.values(), b.functions.values(), strict=True):
        pairs += list(zip(fa.body, fb.body, strict=True))
    return pairs


@dataclass
class Totals:
    """What a compiled program costs per device: collectives' bytes (and ring-model bytes), and
    the peak of live memory (passes/analysis/cost.py)."""

    comm_bytes: int
    ring_bytes: int
    peak_bytes: int

    @classmethod
    def of(cls, module: Module) -> Totals:
        report = collective_report(module)
        return cls(report["total_comm_bytes"], report["total_ring_bytes"],
                   report["peak_memory_bytes_per_device"])


@dataclass
class Baseline:
    """See the module docstring."""

    input: Module
    options: CompileOptions
    module: Module
    context: PassContext
    back_end: list[Pass]
    propagated: Module | None = None
    totals: Totals = field(default_factory=lambda: Totals(0, 0, 0))
    _to_input: dict[int, Value] = field(default_factory=dict)
    _to_work: dict[int, Value] = field(default_factory=dict)  # propagated copy -> module
    _to_copy: dict[int, Value] = field(default_factory=dict)  # module -> propagated copy
    _ops_to_work: dict[int, Operation] = field(default_factory=dict)
    _ops_to_copy: dict[int, Operation] = field(default_factory=dict)

    @property
    def audit(self) -> ChoiceAudit:
        return self.context.data["propagation_audit"]

    def input_value(self, v: Value) -> Value | None:
        """The input program's value `v` (of `module` or `propagated`) stands for, if any."""
        v = self._to_work.get(id(v), v)
        return self._to_input.get(id(v))

    def work_value(self, v: Value) -> Value | None:
        """`module`'s value for a value of the propagated copy."""
        return self._to_work.get(id(v))

    def copy_value(self, v: Value) -> Value | None:
        """The propagated copy's value for a value of `module`."""
        return self._to_copy.get(id(v))

    def work_op(self, op: Operation) -> Operation | None:
        return self._ops_to_work.get(id(op))

    def copy_op(self, op: Operation) -> Operation | None:
        return self._ops_to_copy.get(id(op))


def compile_baseline(module: Module, options: CompileOptions | None = None) -> Baseline:
    """Compile `module` as `shardc.pipeline.compile` does (the global program only), keeping a
    copy of it right after propagation (see the module docstring)."""
    # the plan compile keeps (FSDP's, say), which the what-ifs then recompile as it is
    options = with_chosen_plan(module, options or CompileOptions())
    load_all_passes()
    ctx = PassContext(strict=options.strict, verify_each=options.verifies_each)
    ctx.data["propagation_audit"] = ChoiceAudit()
    work = module.clone()
    to_input = {id(w): v for v, w in pair_values(module, work)}
    passes = parse_pipeline(options.full_pipeline())
    cut = next((i + 1 for i, p in enumerate(passes) if p.name in PROPAGATION_PASSES), 0)
    manager = PassManager(passes[:cut], verify_each=options.verifies_each)
    manager.run(work, ctx)
    base = Baseline(module, options, work, ctx, passes[cut:], _to_input=to_input)
    if cut:
        copy = work.clone()
        base.propagated = copy
        for w, c in pair_values(work, copy):
            base._to_work[id(c)] = w
            base._to_copy[id(w)] = c
        for w, c in pair_ops(work, copy):
            base._ops_to_work[id(c)] = w
            base._ops_to_copy[id(w)] = c
    PassManager(passes[cut:], verify_each=options.verifies_each).run(work, ctx)
    base.totals = Totals.of(work)
    return base


def compile_global(module: Module, options: CompileOptions) -> Module:
    """The global program `compile` makes of `module` (no per-device program)."""
    load_all_passes()
    ctx = PassContext(strict=options.strict, verify_each=options.verifies_each)
    work = module.clone()
    PassManager(parse_pipeline(options.full_pipeline()), verify_each=options.verifies_each).run(
        work, ctx
    )
    return work
