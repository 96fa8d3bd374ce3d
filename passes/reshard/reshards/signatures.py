"""Before rewriting ops, insert-reshards fixes one closed sharding for every function argument
and result, and for the values a `while`/`case` links with its region functions."""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.manual import fill_all, sync_all
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.propagation.layouts import closed, per_mapping, replicated


def close_regions(module: Module) -> None:
    """Give the region functions of every `while`/`case` the closed shardings of the values
    they stand for: a carried value k (result k, cond and body argument k, body result k) and
    a case result k (every branch's result k) have one sharding, as have a captured operand
    and its arguments; the loop condition is a replicated `tensor<i1>`. Where propagation left
    them unsharded, the operand's (a loop's operand k, a captured operand) or the first
    source's sharding is taken. The returns of the region functions are then
    resharded like any function's (a body result that differs from its carried sharding gets a
    reshard before the body's return, as in Shardy)."""

    def one(values: Sequence[Value], op: Operation | None = None) -> NamedMapping | None:
        """The first sharding of `values`; with `op`, they must not have two different ones."""
        found = [closed(v.mapping) for v in values if v.mapping is not None]
        if op is not None and any(not same_layout(m, found[0]) for m in found[1:]):
            texts = ", ".join(sorted({str(m) for m in found}))
            raise PassError(
                f"'{op.name}' op: the values that stand for one loop-carried or captured value "
                f"have different shardings ({texts}); give them one sharding (propagate does)",
                op.loc,
            )
        return found[0] if found else None

    def set_all(values: Sequence[Value], m: NamedMapping | None) -> None:
        if m is not None:
            for v in values:
                v.set_mapping(m)

    def set_result(func: Function, k: int, m: NamedMapping | None) -> None:
        t = func.result_types[k]
        func.result_types[k] = DistributedTensorType(t.shape, t.dtype, m)

    for op in list(module.walk()):
        if op.name not in ("while", "case"):
            continue
        sigs = region_signatures(module, op)
        # Captured operands and the arguments they feed.
        first_capture = len(op.results) if op.name == "while" else 1
        for j in range(first_capture, op.num_operands):
            args = [f.args[j - o] for f, o in sigs]
            set_all(args, one(args, op) or one([op.operand(j)]))
        # Carried values / case results and the region results that feed them.
        bodies = [f for f in sigs if op.name == "case" or f[0].name == op.attr("body").name]
        for k, r in enumerate(op.results):
            targets = [r]
            if op.name == "while":
                targets += [f.args[k] for f, _ in sigs]
            sources = [f.return_op.operand(k) for f, _ in bodies if f.return_op is not None]
            if op.name == "while":
                sources.insert(0, op.operand(k))
            m = one(targets, op) or one(sources)
            set_all(targets, m)
            for f, _ in bodies:
                set_result(f, k, m)
        if op.name == "while":
            cond = next(f for f, _ in sigs if f.name == op.attr("cond").name)
            mesh = next((v.mapping.mesh for v in (*op.operands, *op.results) if v.mapping), None)
            if mesh is not None:
                set_result(cond, 0, replicated(mesh, 0))


def close_signatures(module: Module) -> None:
    """Close every sharding (open dims are treated as closed) and give function results without
    a declared sharding the one of the value they return."""
    fill_all(module)
    close = per_mapping(closed)  # (once per distinct sharding, not once per value)
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(close(a.mapping))
        for op in func.body:
            for r in op.results:
                m = r.mapping
                if m is not None:
                    r.set_mapping(close(m))
        ret = func.return_op
        for i, t in enumerate(func.result_types):
            mapping = getattr(t, "mapping", None)
            if mapping is None and ret is not None and i < ret.num_operands:
                mapping = ret.operand(i).mapping
            if mapping is not None:
                func.result_types[i] = DistributedTensorType(t.shape, t.dtype, closed(mapping))
    sync_all(module)
