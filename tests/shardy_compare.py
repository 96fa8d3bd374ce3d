"""Compare shardc's propagation with Shardy's, value by value.

Shardy's side is either a stored result (tests/data/stablehlo/extras/*.open.mlir: JAX's
program after jaxlib's `sdy-propagation-pipeline` minus its closing and reshard steps) or a
live run of jaxlib's passes. Constant sub-computations are left out of the comparison: both
tools split them per user before propagating, but Shardy merges them again afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.ir.core import Module, Operation
from shardc.ir.ops import ELEMENTWISE, OPS
from shardc.ir.types import DistributedTensorType


def _non_constant_ops(func, skip_dead: bool = False) -> list[Operation]:
    from shardc.ir.symbols import callee_name
    from shardc.passes.ingest.split_constants import constant_functions
    from shardc.passes.propagation.liveness import dead_ops

    # A call of a constant function is a constant expression too (Shardy's splitter copies it
    # per user, callee and all).
    pure = constant_functions(func.module) if func.module is not None else set()
    constant: set[int] = set()
    dead = dead_ops(func) if skip_dead else set()
    out = []
    for op in func.body:
        if id(op) in dead:
            continue
        # A constant expression (Shardy's constant splitter/merger moves these, so their
        # position differs): shape ops and element-wise ops of constants only.
        kind_ok = op.name in ("broadcast_in_dim", "reshape", "convert") or (
            op.name in OPS and OPS[op.name].has(ELEMENTWISE)
        ) or (op.name == "call" and callee_name(op) in pure)
        derived = kind_ok and all(
            v.defining_op is not None and id(v.defining_op) in constant for v in op.operands
        )
        scalar_bcast = op.name == "broadcast_in_dim" and op.operand(0).type.rank == 0
        if op.name in ("constant", "iota") or derived or scalar_bcast:
            constant.add(id(op))
            continue
        out.append(op)
    return out


def _scalar_none(mapping):
    """A sharding that says nothing no sharding would not say: a scalar's `<@mesh, []>` and
    an all-open sharding with no axes (`[{?}, {?}]`, which Shardy writes on every result of an
    op once any of its results has a sharding). Both compare equal to no sharding."""
    if mapping is None or mapping.replicated or mapping.unreduced:
        return mapping
    if all(not d.axes and not d.is_closed for d in mapping.dims):
        return None
    return mapping


def _counterpart(theirs: Module, fname: str, ours: Module):
    """`fname` in Shardy's module, or the one function Shardy renamed it to (`@f` -> `@f_1`:
    its call-graph passes rename a private function called from several places)."""
    g = theirs.functions.get(fname)
    if g is not None:
        return g
    renamed = [n for n in theirs.functions
               if n.startswith(fname + "_") and n[len(fname) + 1:].isdigit()
               and n not in ours.functions]
    return theirs.functions[renamed[0]] if len(renamed) == 1 else None


def constant_trees(module: Module) -> dict[tuple, list[tuple[str, str]]]:
    """For every operand of a non-constant op that a constant sub-computation feeds: the tree's
    ops (operands first) with their shardings, keyed by (function, index among the non-constant
    ops, op name, operand). Compares what `compare_modules` leaves out: which copy of a constant
    each user reads, sharded how."""
    out = {}
    for fname, f in module.functions.items():
        users = _non_constant_ops(f)
        ids = {id(o) for o in users}
        for k, op in enumerate(users):
            for i, v in enumerate(op.operands):
                nodes = _tree(v, ids)
                if nodes:
                    out[(fname, k, op.name, i)] = nodes
    return out


def _tree(value, stop: set[int]) -> list[tuple[str, str]]:
    """The ops computing `value` back to the ops in `stop`, operands first, with shardings."""
    d = value.defining_op
    if d is None or id(d) in stop:
        return []
    nodes = [n for o in d.operands for n in _tree(o, stop)]
    return [*nodes, (d.name, str(_scalar_none(value.mapping)))]


@dataclass
class Agreement:
    compared: int = 0
    equal: int = 0
    differences: list[str] = field(default_factory=list)
    structural: list[str] = field(default_factory=list)

    def add(self, where: str, ours, theirs) -> None:
        ours, theirs = _scalar_none(ours), _scalar_none(theirs)
        a = str(ours) if ours is not None else "<none>"
        b = str(theirs) if theirs is not None else "<none>"
        self.compared += 1
        if a == b:
            self.equal += 1
        else:
            self.differences.append(f"{where}: shardc {a} | shardy {b}")


def compare_modules(ours: Module, theirs: Module, name: str = "") -> Agreement:
    from shardc.ir.symbols import region_symbols
    from shardc.stablehlo.inlining import region_only_functions

    out = Agreement()
    # An outlined region's arguments and results are not values in Shardy's text (a block
    # argument carries no sharding there; it is the op's result or a captured outer value, both
    # compared where they are defined): compare only the ops inside. Region functions are paired
    # through the ops that run them (their names depend on how each side outlined them).
    regions = region_only_functions(ours)
    pairs = []
    for fname, f in ours.functions.items():
        if fname in regions:
            continue
        g = _counterpart(theirs, fname, ours)
        if g is None:
            out.structural.append(f"{name}: @{fname} missing in Shardy's result")
            continue
        pairs.append((fname, f, g))
    done: set[str] = set()
    while pairs:
        fname, f, g = pairs.pop(0)
        done.add(fname)
        if fname not in regions:
            for i, (a, b) in enumerate(zip(f.args, g.args)):
                out.add(f"{name}@{fname} arg {i}", a.mapping, b.mapping)
            for i, (a, b) in enumerate(zip(f.result_types, g.result_types)):
                ma = a.mapping if isinstance(a, DistributedTensorType) else None
                mb = b.mapping if isinstance(b, DistributedTensorType) else None
                out.add(f"{name}@{fname} result {i}", ma, mb)
        fo, go = _non_constant_ops(f, skip_dead=True), _non_constant_ops(g)
        names_a = [o.name for o in fo]
        names_b = ["sharding_constraint" if o.name == "reshard" else o.name for o in go]
        if names_a != names_b:
            out.structural.append(f"{name}@{fname}: op sequences differ")
            continue
        for k, (a, b) in enumerate(zip(fo, go)):
            for ra, rb in zip(a.results, b.results):
                out.add(f"{name}@{fname} op {k} ({a.name})", ra.mapping, rb.mapping)
            for ra, rb in zip(region_symbols(a), region_symbols(b)):
                fa, fb = ours.functions.get(ra), theirs.functions.get(rb)
                if ra in regions and ra not in done and fa is not None and fb is not None:
                    pairs.append((ra, fa, fb))
    return out


def shardy_pipeline_until_propagation() -> str:
    """jaxlib's `sdy-propagation-pipeline`, cut right after its propagation pass."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import passmanager

    with jmlir.make_ir_context():
        text = str(passmanager.PassManager.parse("builtin.module(sdy-propagation-pipeline)"))
    text = text.replace("sdy-save-module,", "").replace(",sdy-save-module", "")
    start = text.index("sdy-user-priority-propagate")
    end = text.index("}", start) + 1
    return text[:end] + ")"


def run_shardy(text: str, pipeline: str) -> str:
    """Run jaxlib's Shardy passes on StableHLO+sdy text in-process."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir, passmanager

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(pipeline).run(module.operation)
        return str(module)


def importable_corpus() -> list[str]:
    """Names of the stored JAX programs (tests/data/stablehlo/<name>.mlir) shardc imports."""
    from pathlib import Path

    from shardc.ir.diagnostics import ShardcError
    from shardc.stablehlo import import_stablehlo

    data = Path(__file__).parent / "data" / "stablehlo"
    names = []
    for path in sorted(data.glob("*.mlir")):
        name = path.name[: -len(".mlir")]
        if "." in name:
            continue
        try:
            import_stablehlo(path.read_text(), str(path))
        except ShardcError:
            continue
        names.append(name)
    return names
