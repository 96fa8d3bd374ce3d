"""`while` and `case` in the per-device program: they stay as they are and run their region
functions, which are lowered like every function; their layouts are checked here."""

from __future__ import annotations

from shardc.ir.core import Function, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering, closed_layout, is_spmd


def lower_region_op(low: FunctionLowering, op: Operation) -> None:
    """`while`/`case` stay as they are and run the region functions, which are lowered like
    every function (per-device functions on local blocks). insert-reshards laid the operands
    out as the functions' arguments and the results as their results; checked here."""
    def layouts(func: Function, key: str, declared: list) -> list[NamedMapping | None]:
        if is_spmd(func):  # already lowered: its signature records the global layouts
            return list(func.attributes.get(key, [None] * len(declared)))
        return [None if m is None else closed_layout(m) for m in declared]

    def check(v: Value, want: NamedMapping | None, what: str) -> None:
        have = low.layout(v) if low.mesh is not None else None
        if want is None or have is None:
            return
        if not same_layout(have, closed_layout(want)):
            raise PassError(
                f"'{op.name}' op: {what} is laid out as {have}, but the region function "
                f"expects {want}; run insert-reshards before spmd",
                op.loc,
            )

    for func, offset in region_signatures(low.module, op):
        args = layouts(func, "in_shardings", [a.mapping for a in func.args])
        for i, want in enumerate(args):
            check(op.operand(i + offset), want, f"operand {i + offset}")
        if op.name == "while" and func.name == attr(op, "cond").name:
            continue
        results = [getattr(t, "mapping", None) for t in func.result_types]
        for k, want in enumerate(layouts(func, "out_shardings", results)):
            check(op.results[k], want, f"result {k}")
    if op.name == "case":
        m = low.mapping(op.operand(0))
        if m is not None and not m.is_fully_replicated:
            raise PassError(
                f"'case' op: the branch index is {m}; it must be replicated (run "
                "insert-reshards before spmd)",
                op.loc,
            )
