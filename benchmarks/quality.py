"""Quality benchmark: shardc's sharded programs against what JAX/XLA makes of the same shardings.

    python benchmarks/quality.py                      # every zoo model x preset
    python benchmarks/quality.py --models mlp,moe     # a subset
    python benchmarks/quality.py --details            # also list every collective, both sides
    python benchmarks/quality.py --write-docs         # update docs/benchmarks.md
    python benchmarks/quality.py --train sgd          # training steps, plus the JAX GPT steps

For every model of the zoo (`shardc.models.catalogue.MODELS`) and every annotation preset, at the
model's default sizes (stacked models with `--layers` layers, default 2):

- shardc: `shardc.pipeline.compile(module)`; its report gives the collectives, the bytes per
  device and the peak memory per device (docs/cost.md).
- XLA: the same global program as a JAX function (`compiler/executors/jax_global.py`), under
  `jax.jit` with the argument AND result shardings of shardc's compiled module (all closed) as
  `NamedSharding`s on the same 8 CPU devices, `.lower(...).compile()`. The collectives are
  parsed from `compiled.as_text()` (the partitioned, optimised HLO of one device) and costed
  with shardc's definitions: `bytes_per_device` is the larger of a collective's local input and
  output buffers, the ring model is docs/cost.md's. Memory is `compiled.memory_analysis()`:
  argument + output + temp - alias bytes of the per-device program.

With `--train sgd|adam` each model's training step (docs/guide.md, "Training steps") replaces
its forward pass, and rows for the JAX-written GPT training steps of examples/gpt_jax.py and a
max-pooling training step follow (benchmarks/jax_programs.py): there XLA compiles the JAX
function with only its in_shardings, as a JAX user runs it. `--write-docs` then writes the
`quality-train` section.

Before the numbers count, each case is run: shardc's SPMD program on the numpy executor and on
the JAX executor, and XLA's partitioned program, on the same random inputs; the largest
difference (absolute, and relative to the largest output magnitude) is printed and tabled.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docs_section import read_section, write_section  # noqa: E402

from shardc.ir.core import Module  # noqa: E402
from shardc.ir.diagnostics import ShardcError  # noqa: E402
from shardc.ir.types import numpy_dtype  # noqa: E402
from shardc.models.catalogue import MODELS  # noqa: E402
from shardc.passes.analysis.cost import collective_report  # noqa: E402
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline  # noqa: E402
from shardc.pipeline import DEFAULT_PIPELINE, CompileOptions, clone, compile  # noqa: E402

# ----- XLA's collectives, from the compiled HLO text ----------------------------------------------

HLO_KINDS = {
    "all-reduce": "all_reduce",
    "all-gather": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-to-all": "all_to_all",
    "collective-permute": "collective_permute",
}
HLO_BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
    "f32": 4, "s64": 8, "u64": 8, "f64": 8,
}
_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+) = (?P<type>.+?) "
    r"(?P<op>all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?P<start>-start)?"
    r"\((?P<rest>.*)$"
)
_ARRAY = re.compile(r"\b(pred|[subf]\d+|bf16)\[([\d,]*)\]")


@dataclass
class HloCollective:
    """One collective of XLA's partitioned program, costed like shardc's report."""

    kind: str  # shardc's spelling
    name: str
    shapes: list[tuple[int, ...]]  # result arrays (a tuple-shaped collective has several)
    dtype: str
    group_size: int
    groups: list[list[int]] | None
    in_bytes: int
    out_bytes: int
    bytes_per_device: int = 0
    ring_bytes_per_device: int = 0

    def text(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        return (f"{self.kind:<18} {self.dtype}[{shapes}] n={self.group_size} "
                f"bytes={self.bytes_per_device} ring={self.ring_bytes_per_device}")


def _iota_groups(text: str) -> np.ndarray:
    """XLA's iota device list `[a,b]<=[c,d]T(1,0)`: arange reshaped to [c,d], transposed, then
    reshaped to [a,b] (the `[a,b]` part may be absent: a flat list)."""
    m = re.fullmatch(r"(?:\[([\d,]+)\])?<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    if m is None:
        raise ValueError(f"cannot read the iota device list {text!r}")
    dims = [int(d) for d in m.group(2).split(",")]
    ids = np.arange(math.prod(dims)).reshape(dims)
    if m.group(3):
        ids = ids.transpose([int(p) for p in m.group(3).split(",")])
    shape = [int(d) for d in m.group(1).split(",")] if m.group(1) else [-1]
    return ids.reshape(shape)


def _balanced(text: str, start: int) -> str:
    """The bracketed text opening at `text[start]` (`(`, `[` or `{`), brackets included."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = []
    for i in range(start, len(text)):
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return text[start : i + 1]
    raise ValueError(f"unbalanced brackets in {text[start:start + 80]!r}")


def _device_ids(text: str) -> np.ndarray:
    """A mesh's `device_ids` (logical partition ids): an iota (`[2,4]T(1,0)`,
    `[8]<=[2,4]T(1,0)`) or an explicit list."""
    text = text.strip()
    if "<=" in text:
        return _iota_groups(text).reshape(-1)
    m = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if m is None:  # an explicit list
        return np.array([int(d) for d in re.findall(r"\d+", text)])
    dims = [int(d) for d in m.group(1).split(",")]
    ids = np.arange(math.prod(dims)).reshape(dims)
    if m.group(2):
        ids = ids.transpose([int(p) for p in m.group(2).split(",")])
    return ids.reshape(-1)


def _mesh_groups(rest: str, start: int) -> tuple[int, list[list[int]] | None]:
    """`mesh['a'=4,'b'=2], device_ids=([2,4]T(1,0)) {'a'}`: groups vary over the named axes."""
    axes_text = _balanced(rest, start)
    axes = [(a, int(n)) for a, n in re.findall(r"'([^']+)'=(\d+)", axes_text)]
    sizes = [n for _, n in axes]
    pos = start + len(axes_text)
    ids = np.arange(math.prod(sizes))
    m = re.match(r",\s*device_ids=", rest[pos:])
    if m:
        pos += m.end()
        ids_text = _balanced(rest, pos)
        pos += len(ids_text)
        ids = _device_ids(ids_text[1:-1])
    selected = _balanced(rest, rest.index("{", pos))
    chosen = re.findall(r"'([^']+)'(?::\((\d+)\)(\d+))?", selected)
    names = [a for a, _ in axes]
    if any(pre for _, pre, _ in chosen):  # sub-axes: only the group size is read
        return math.prod(int(size) for _, _, size in chosen), None
    picked = [names.index(a) for a, _, _ in chosen]
    grid = ids.reshape(sizes)
    others = [d for d in range(len(sizes)) if d not in picked]
    n = math.prod(sizes[d] for d in picked)
    return n, grid.transpose(others + picked).reshape(-1, n).tolist()


def _replica_groups(rest: str, num_devices: int) -> tuple[int, list[list[int]] | None]:
    """Group size and groups of a collective's attribute text (every HLO spelling we meet)."""
    m = re.search(r"replica_groups=", rest)
    if m is None:
        return num_devices, [list(range(num_devices))]
    pos = m.end()
    if rest.startswith("mesh[", pos):
        return _mesh_groups(rest, pos + len("mesh"))
    if rest.startswith("{", pos):
        text = _balanced(rest, pos)
        groups = [[int(d) for d in g.split(",") if d] for g in re.findall(r"\{([\d,]*)\}", text)]
        groups = [g for g in groups if g]
        if not groups:  # `{}`: every device in one group
            return num_devices, [list(range(num_devices))]
        return len(groups[0]), groups
    end = re.search(r",\s*[a-z_]+=|$", rest[pos:])
    assert end is not None
    groups_array = _iota_groups(rest[pos : pos + end.start()])
    return int(groups_array.shape[-1]), groups_array.tolist()


def parse_hlo_collectives(text: str, num_devices: int) -> list[HloCollective]:
    """Every collective in a compiled HLO module's text, with shardc's cost definitions."""
    out: list[HloCollective] = []
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m is None:
            continue
        kind = HLO_KINDS[m.group("op")]
        arrays = [(t, tuple(int(d) for d in dims.split(",") if d))
                  for t, dims in _ARRAY.findall(m.group("type"))]
        if m.group("start"):
            # async start: a tuple of (operands..., results..., contexts); keep the results'
            # half, which is what the synchronous op would return.
            arrays = arrays[len(arrays) // 2 :] if len(arrays) > 1 else arrays
        rest = m.group("rest")
        if kind == "collective_permute":
            pairs = re.search(r"source_target_pairs=(\{.*?\}\})", rest)
            groups = ([[int(a), int(b)] for a, b in re.findall(r"\{(\d+),(\d+)\}", pairs.group(1))]
                      if pairs else None)
            n = 2
        else:
            n, groups = _replica_groups(rest, num_devices)
        dtype = arrays[0][0]
        out_bytes = sum(math.prod(s) * HLO_BYTES[t] for t, s in arrays)
        in_bytes = {"all_gather": out_bytes // n, "reduce_scatter": out_bytes * n}.get(
            kind, out_bytes
        )
        c = HloCollective(kind, m.group("name"), [s for _, s in arrays], dtype, n, groups,
                          in_bytes, out_bytes)
        c.bytes_per_device = max(in_bytes, out_bytes)
        c.ring_bytes_per_device = ring_bytes(c, [HLO_BYTES[t] for t, _ in arrays],
                                             [s for _, s in arrays])
        out.append(c)
    return out


def ring_bytes(c: HloCollective, elem_bytes: list[int], shapes: list[tuple[int, ...]]) -> int:
    """docs/cost.md's ring model (`passes/analysis/collectives/ring_cost.py`) for one XLA
    collective; a tuple-shaped collective is the sum over its arrays."""
    n = c.group_size
    if c.kind == "collective_permute":
        return c.in_bytes
    if n <= 1:
        return 0
    if c.kind == "all_gather":
        return (n - 1) * c.in_bytes
    if c.kind in ("reduce_scatter", "all_to_all"):  # (n-1) output shards / input pieces
        return (n - 1) * (c.out_bytes if c.kind == "reduce_scatter" else c.in_bytes // n)
    # all_reduce: 2 (n-1) ceil(elements / n) per array
    return sum(2 * (n - 1) * -(-math.prod(s) // n) * eb for s, eb in zip(shapes, elem_bytes))


# ----- one case -----------------------------------------------------------------------------------


@dataclass
class Case:
    model: str
    preset: str
    mesh: dict[str, int]
    params: dict[str, Any]
    shardc_bytes: int = 0
    shardc_ring: int = 0
    shardc_count: int = 0  # collectives that communicate (all_slice excluded)
    shardc_slices: int = 0
    shardc_memory: int = 0
    shardc_note: str = ""
    xla_bytes: int = 0
    xla_ring: int = 0
    xla_count: int = 0
    xla_memory: int = 0
    xla_memory_parts: dict[str, int] = field(default_factory=dict)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    shardc_collectives: list[str] = field(default_factory=list)
    xla_collectives: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        if self.xla_bytes == 0:
            return None if self.shardc_bytes else 1.0
        return self.shardc_bytes / self.xla_bytes

    def cells(self) -> list[str]:
        ratio = "inf" if self.ratio is None else f"{self.ratio:.2f}"
        mesh = ",".join(f"{k}={v}" for k, v in self.mesh.items())
        slices = f" (+{self.shardc_slices} slice)" if self.shardc_slices else ""
        err = "-" if self.max_rel_err is None else f"{self.max_rel_err:.1e}"
        note = f" {self.shardc_note}" if self.shardc_note else ""
        return [
            self.model, self.preset, mesh, f"{self.shardc_bytes:,}", f"{self.xla_bytes:,}", ratio,
            f"{self.shardc_ring:,}", f"{self.xla_ring:,}",
            f"{self.shardc_count}{slices}", str(self.xla_count),
            f"{self.shardc_memory:,}", f"{self.xla_memory:,}", err + note,
        ]


HEADER = [
    "model", "preset", "mesh", "shardc B/dev", "XLA B/dev", "shardc/XLA", "shardc ring",
    "XLA ring", "# coll shardc", "# coll XLA", "shardc peak mem", "XLA mem", "max rel err",
]


def describe(params: dict[str, Any]) -> str:
    short = {"batch": "b", "d_model": "d", "d_ff": "ff", "seq": "s", "heads": "h", "d_head": "dh"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in params.items())


def random_inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs: integers in [0, 16) (token ids, labels), floats N(0, 0.5^2)."""
    rng = np.random.default_rng(seed)
    inputs = []
    for a in module.main.args:
        dtype = numpy_dtype(a.type.dtype)
        if dtype.kind in "iu":
            inputs.append(rng.integers(0, 16, a.type.shape).astype(dtype))
        else:
            inputs.append((0.5 * rng.standard_normal(a.type.shape)).astype(dtype))
    return inputs


def shardc_global(module: Module, cost: str = "ring") -> tuple[Module, Any, str]:
    """(global compiled module, CompileResult or None, note). When the `spmd` lowering rejects
    the program, the global pipeline alone still says what shardc would communicate."""
    pipeline = DEFAULT_PIPELINE
    if cost != "ring":
        pipeline = pipeline.replace("lower-collectives", f"lower-collectives{{cost={cost}}}")
    try:
        result = compile(module, CompileOptions(pipeline=pipeline))
        return result.module, result, ""
    except ShardcError as e:
        if "spmd" not in str(e):
            raise
        load_all_passes()
        work = clone(module)
        PassManager(parse_pipeline(pipeline)).run(work, PassContext())
        return work, None, "(no SPMD run: " + str(e).split("error: ", 1)[-1][:60] + "...)"


def run_case(
    model: str,
    preset: str,
    params: dict[str, Any],
    check: bool,
    cost: str = "ring",
    train: str | None = None,
) -> Case:
    """A zoo model (its training step with `train`): XLA gets shardc's argument and result
    shardings."""
    import jax

    from shardc.executors.jax_global import jit_global

    spec = MODELS[model]
    module = spec.build(preset, train=train, **params)
    case = Case(model, preset, dict(spec.presets[preset].mesh), params)
    compiled_module, result = measure_shardc(case, module, cost)
    jitted, mesh, _, _ = jit_global(compiled_module)
    args = [jax.ShapeDtypeStruct(a.type.shape, numpy_dtype(a.type.dtype))
            for a in module.main.args]
    measure_xla(case, jitted.lower(*args).compile(), mesh.size)
    if check:
        check_case(case, module, result, jitted)
    return case


def measure_shardc(case: Case, module: Module, cost: str = "ring") -> tuple[Module, Any]:
    """Fill in shardc's figures; (the compiled global module, the CompileResult or None)."""
    compiled_module, result, case.shardc_note = shardc_global(module, cost)
    report = result.report if result is not None else collective_report(compiled_module)
    moving = [c for c in report["collectives"] if c["kind"] != "all_slice"]
    case.shardc_bytes = report["total_comm_bytes"]
    case.shardc_ring = report["total_ring_bytes"]
    # What the per-device program issues (after combine-collectives), as XLA's HLO is counted;
    # the global program's count when there is no per-device program.
    issued = report.get("issued")
    case.shardc_count = issued["count"] if issued is not None else len(moving)
    case.shardc_slices = len(report["collectives"]) - len(moving)
    case.shardc_memory = report["peak_memory_bytes_per_device"]
    case.shardc_collectives = [
        f"{c['kind']:<18} {c['dtype']}[{'x'.join(map(str, c['local_shape'])) or 'scalar'}] "
        f"axes={','.join(c['axes'])} n={c['group_size']} bytes={c['bytes_per_device']} "
        f"ring={c['ring_bytes_per_device']}"
        for c in report["collectives"]
    ]
    return compiled_module, result


def measure_xla(case: Case, executable: Any, num_devices: int) -> None:
    """Fill in XLA's figures from its compiled (partitioned) executable."""
    collectives = parse_hlo_collectives(executable.as_text(), num_devices)
    for c in collectives:
        if c.groups is not None:
            flat = sorted(d for g in c.groups for d in g)
            assert c.kind == "collective_permute" or flat == list(range(num_devices)), c
    case.xla_bytes = sum(c.bytes_per_device for c in collectives)
    case.xla_ring = sum(c.ring_bytes_per_device for c in collectives)
    case.xla_count = len(collectives)
    case.xla_collectives = [c.text() for c in collectives]
    ma = executable.memory_analysis()
    parts = {
        "argument": ma.argument_size_in_bytes, "output": ma.output_size_in_bytes,
        "temp": ma.temp_size_in_bytes, "alias": ma.alias_size_in_bytes,
    }
    case.xla_memory_parts = parts
    case.xla_memory = parts["argument"] + parts["output"] + parts["temp"] - parts["alias"]


def check_case(
    case: Case, module: Module, result: Any, xla: Callable[..., Any],
    inputs: list[np.ndarray] | None = None,
) -> None:
    """Run shardc's program on both executors and `xla(*inputs)` (flat outputs) on the same
    inputs; record the largest difference."""
    from shardc.executors.jax_exec import JaxExecutor

    inputs = random_inputs(module) if inputs is None else inputs
    want = [np.asarray(o) for o in xla(*inputs)]
    runs = []
    label = f"{case.model}/{case.preset}"
    if result is not None:
        runs.append(("numpy", result.run(inputs, backend="numpy")))
        try:
            runs.append(("jax", JaxExecutor(result.spmd).run(inputs)))
        except ShardcError as e:  # a translation the JAX executor lacks: say so, go on
            message = str(e).split("error: ", 1)[-1]
            print(f"  check {label} shardc[jax]: cannot run: {message}", file=sys.stderr)
            case.shardc_note += " (numpy executor only: the JAX executor failed)"
    abs_err, rel_err = 0.0, 0.0
    for backend, got in runs:
        for g, w in zip(got, want, strict=True):
            err = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
            scale = max(float(np.max(np.abs(w))), 1e-30) if w.size else 1.0
            abs_err, rel_err = max(abs_err, err), max(rel_err, err / scale)
            print(f"  check {label} shardc[{backend}] vs XLA: max abs err {err:.2e}"
                  f", relative {err / scale:.2e}", file=sys.stderr)
    if runs:
        case.max_abs_err, case.max_rel_err = abs_err, rel_err


# ----- the table and the docs ---------------------------------------------------------------------


def markdown(cases: list[Case]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.cells()) + " |" for c in cases]
    return "\n".join(lines)


def write_docs(section_body: str, section: str = "quality") -> None:
    """Replace (or add) a quality section of docs/benchmarks.md; other sections untouched."""
    write_section(section, section_body)


def docs_section(table: str, command: str, findings: str) -> str:
    import jax

    return "\n".join([
        "## Quality: shardc against XLA's SPMD partitioner",
        "",
        "Every zoo model × preset, compiled by shardc and by `jax.jit` with the same argument and",
        "result shardings (taken from shardc's compiled module) on 8 CPU devices (JAX "
        f"{jax.__version__}),",
        "at the models' default sizes with 2 layers, plus three rows at larger sizes. XLA's",
        "collectives are parsed from `compiled.as_text()` and costed with shardc's definitions",
        "(docs/cost.md): `B/dev` sums each collective's larger local buffer (input or output),",
        "`ring` is the ring model. `# coll` counts the collectives that move data: for shardc",
        "those its per-device program issues (after `combine-collectives`, with its default",
        "threshold, XLA's; a combined op counts once, as XLA's tuple all-reduce does); shardc's",
        "`all_slice` (a local slice, which XLA spells `dynamic-slice`) is shown apart.",
        "",
        "Both memory columns are per device, but they are not the same quantity. shardc's is the",
        "peak of its live-set walk over the unfused program: every value materialised and freed",
        "after its last use, arguments included until their last use. XLA's is",
        "`memory_analysis()` (argument + output + temp − alias bytes of the per-device",
        "executable), which is after fusion (fused intermediates never exist) and buffer reuse,",
        "with every argument held for the whole step. `max rel err` is the largest",
        "|shardc − XLA| over both shardc executors (numpy and JAX) divided by the largest",
        "|XLA output|.",
        "",
        f"Command: `{command}`",
        "",
        table,
        "",
        "### Findings",
        "",
        findings.rstrip(),
    ])


def training_docs_section(table: str, command: str, findings: str) -> str:
    import jax

    return "\n".join([
        "## Quality: training steps",
        "",
        "One training step (forward, loss, backward, optimizer update; docs/guide.md, \"Training",
        "steps\") of every zoo model × preset, measured as in the section above: XLA gets the",
        "argument and result shardings of shardc's compiled module (the updated parameters are",
        "declared sharded as the parameters are). The `gpt (JAX)` rows are the JAX-written GPT",
        "training steps of `examples/gpt_jax.py`: shardc compiles the shipped StableHLO",
        "(`examples/jax/gpt_train_*.mlir`), XLA compiles the same function under `jax.jit` with",
        "only the user's `in_shardings` (XLA decides the results' shardings and everything",
        "else), as a JAX user would run it. The `max-pool (JAX)` rows are a max-pooling step",
        "(`reduce_window` and its gradient `select_and_scatter`, 2x2 windows of stride 2 on an",
        "8x8x8x4 NHWC input; benchmarks/jax_programs.py) lowered live, with the batch, channel",
        "or pooled dim sharded, compiled the same way.",
        f"8 CPU devices, JAX {jax.__version__}.",
        "",
        f"Command: `{command}`",
        "",
        table,
        "",
        "### Findings",
        "",
        findings.rstrip(),
    ])


def default_findings(cases: list[Case]) -> str:
    worse = [c for c in cases if c.ratio is None or c.ratio > 1.0]
    if not worse:
        return "- shardc <= XLA in bytes per device on every case."
    return "\n".join(f"- {c.model}/{c.preset}: shardc moves more bytes than XLA "
                     f"({c.shardc_bytes:,} vs {c.xla_bytes:,})." for c in worse)


def existing_findings(section: str = "quality") -> str | None:
    """The Findings list of the quality section already in docs/benchmarks.md (kept when the
    table is regenerated, since it is analysis written by a person)."""
    m = re.search(r"### Findings\n\n(.*)", read_section(section) or "", re.S)
    return m.group(1).rstrip("\n") if m else None


def jax_rows(check: bool, cost: str) -> list[Case]:
    """The JAX-written GPT and max-pool training steps (benchmarks/jax_programs.py), one row per
    sharding."""
    import itertools

    from jax_programs import gpt_programs, pool_programs

    cases = []
    programs = itertools.chain(
        (("gpt (JAX)", p) for p in gpt_programs()),
        (("max-pool (JAX)", p) for p in pool_programs()),
    )
    for model, program in programs:
        case = Case(model, program.name, program.mesh, {})
        _, result = measure_shardc(case, program.module, cost)
        measure_xla(case, program.executable, math.prod(program.mesh.values()))
        if check:
            check_case(case, program.module, result, program.run)
        cases.append(case)
        print("| " + " | ".join(case.cells()) + " |", file=sys.stderr, flush=True)
    return cases


# Larger sizes for the presets whose best plan depends on the ratio of activations to weights.
MLP_M = dict(batch=512, d_model=1024, d_ff=4096)
TRANSFORMER_M = dict(batch=8, seq=256, d_model=512, heads=8, d_head=64, d_ff=2048)
LARGER = [("mlp", "fsdp", MLP_M), ("mlp", "dp_tp", MLP_M), ("transformer", "fsdp", TRANSFORMER_M)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models")
    parser.add_argument("--layers", type=int, default=2, help="depth of the stacked models")
    parser.add_argument("--no-check", action="store_true", help="skip the numerical check")
    parser.add_argument("--no-larger", action="store_true",
                        help="skip the larger-size rows (mlp, transformer at realistic sizes)")
    parser.add_argument("--details", action="store_true", help="print every collective")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--findings", type=Path, default=None,
        help="a markdown file with the Findings list for the docs (default: keep the one "
        "already there)",
    )
    parser.add_argument(
        "--cost", choices=("ring", "bytes"), default="ring",
        help="shardc's lower-collectives cost model (its default: ring)",
    )
    parser.add_argument(
        "--train", choices=("sgd", "adam"), default=None,
        help="each model's training step with this optimizer instead of its forward pass",
    )
    args = parser.parse_args(argv)

    cases: list[Case] = []
    for name in args.models.split(","):
        spec = MODELS[name]
        params = {"layers": args.layers} if "layers" in spec.parameters() else {}
        for preset in spec.presets:
            case = run_case(name, preset, params, not args.no_check, args.cost, args.train)
            cases.append(case)
            print("| " + " | ".join(case.cells()) + " |", file=sys.stderr, flush=True)
            if args.details:
                print(f"\n{name}/{preset}", file=sys.stderr)
                print("  shardc:\n    " + "\n    ".join(case.shardc_collectives or ["-"]),
                      file=sys.stderr)
                print("  XLA:\n    " + "\n    ".join(case.xla_collectives or ["-"]),
                      file=sys.stderr)
                print(f"  XLA memory: {case.xla_memory_parts}", file=sys.stderr)
    if not args.no_larger:
        for name, preset, sizes in LARGER:
            if name not in args.models.split(","):
                continue
            params = {**sizes, "layers": args.layers}
            case = run_case(name, preset, params, not args.no_check, args.cost, args.train)
            case.model = f"{name} ({describe(sizes)})"
            cases.append(case)
            print("| " + " | ".join(case.cells()) + " |", file=sys.stderr, flush=True)
    if args.train:
        cases += jax_rows(not args.no_check, args.cost)
    table = markdown(cases)
    print(table)
    worse = [c for c in cases if c.ratio is None or c.ratio > 1.0]
    print(f"\nshardc <= XLA on {len(cases) - len(worse)}/{len(cases)} cases")
    if args.write_docs:
        section = "quality-train" if args.train else "quality"
        if args.findings is not None:
            findings = args.findings.read_text()
        else:
            findings = existing_findings(section) or default_findings(cases)
        shown = [a for a in (argv or sys.argv[1:]) if not a.startswith("--findings")]
        if args.findings is not None and str(args.findings) in shown:
            shown.remove(str(args.findings))
        command = "python " + " ".join(["benchmarks/quality.py", *shown])
        if args.train:
            write_docs(training_docs_section(table, command, findings), section)
        else:
            write_docs(docs_section(table, command, findings))


if __name__ == "__main__":
    main()
