"""Ops that run functions in the per-device program: `call`, `while` and `case` stay as they are
and run their functions, which are lowered like every function; their layouts are checked here."""

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
    for func, offset in region_signatures(low.module, op):
        is_cond = op.name == "while" and func.name == attr(op, "cond").name
        _check_signature(low, op, func, offset, results=not is_cond)
    if op.name == "case":
        m = low.mapping(op.operand(0))
        if m is not None and not m.is_fully_replicated:
            raise PassError(
                f"'case' op: the branch index is {m}; it must be replicated (run "
                "insert-reshards before spmd)",
                op.loc,
            )


def lower_call(low: FunctionLowering, op: Operation) -> None:
    """`call` stays as it is and runs its callee's per-device function. Each device passes its
    blocks and takes the callee's blocks back as they are, so the operands must be laid out as
    the callee's arguments and the results as what it returns (insert-reshards does it): a
    partial sum returned where the caller reads a replicated value would be used unreduced."""
    callee = low.module.lookup_function(attr(op, "callee").name)
    assert callee is not None, "the verifier checks callees exist"
    _check_signature(low, op, callee, 0, results=True)


def _layouts(func: Function) -> tuple[list[NamedMapping | None], list[NamedMapping | None]]:
    """The layouts `func` takes and returns, as its per-device signature records them: read
    back when it is lowered already, else its arguments' and returned values' shardings (what
    spmd will record: a result declared without a sharding returns its value's layout)."""
    if is_spmd(func):
        n_out = len(func.result_types)
        return (list(func.attributes.get("in_shardings", [None] * len(func.args))),
                list(func.attributes.get("out_shardings", [None] * n_out)))
    args = [a.mapping for a in func.args]
    ret = func.return_op
    returned = [v.mapping for v in ret.operands] if ret is not None else []
    outs = [m if m is not None else getattr(t, "mapping", None)
            for m, t in zip(returned, func.result_types, strict=False)]
    return ([None if m is None else closed_layout(m) for m in args],
            [None if m is None else closed_layout(m) for m in outs])


def _check_signature(low: FunctionLowering, op: Operation, func: Function, offset: int,
                     results: bool) -> None:
    """Operand `offset + i` of `op` laid out as `func`'s argument i and (with `results`) op
    result k as what `func` returns k; no sharding is replicated, on any mesh."""
    if low.mesh is None:
        return
    mesh = low.mesh

    def check(v: Value, want: NamedMapping | None, what: str) -> None:
        have = low.layout(v)
        want = want or NamedMapping.fully_replicated(mesh, v.type.rank)
        if same_layout(have, want) or (have.is_fully_replicated and want.is_fully_replicated):
            return
        raise PassError(
            f"'{op.name}' op: {what} is laid out as {have}, but @{func.name} "
            f"{'takes' if what.startswith('operand') else 'returns'} {want}; run "
            "insert-reshards before spmd",
            op.loc,
        )

    args, outs = _layouts(func)
    for i, want in enumerate(args):
        check(op.operand(i + offset), want, f"operand {i + offset}")
    if results:
        for k, want in enumerate(outs[: len(op.results)]):
            check(op.results[k], want, f"result {k}")
