"""Control flow: `while` and `case`, their regions outlined into private functions.

%r0, %r1 = while %i0, %x0, %w {body = @main_while_body, captures = 1, cond = @main_while_cond}
    : tensor<i32>, tensor<16x32xf32>
%r = case %idx, %a {branches = [@main_case_0, @main_case_1]} : tensor<16x16xf32>

`while`: the first N operands are the loop-carried initial values (N = number of results), the
trailing `captures` operands are read-only values the regions read (StableHLO regions capture
them from the enclosing scope). `@cond: (carried..., captured...) -> tensor<i1>`,
`@body: (carried..., captured...) -> (carried...)`.

`case`: operand 0 is the `tensor<i32>` branch index (out of range: the last branch); the other
operands are captured values, passed to every branch in order. Each branch:
`(captured...) -> (results...)`.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.types import TensorType

# Ops whose attributes name functions that stand for their regions: op name -> attribute names.
REGION_ATTRS = {"while": ("cond", "body"), "case": ("branches",)}


def region_functions(op: Operation) -> list[str]:
    """The names of the functions `op` runs as regions (cond, body / the branches, in order)."""
    names: list[str] = []
    for key in REGION_ATTRS.get(op.name, ()):
        value = op.attributes.get(key)
        if isinstance(value, Symbol):
            names.append(value.name)
        elif isinstance(value, tuple):
            names.extend(v.name for v in value if isinstance(v, Symbol))
    return names


def region_signatures(module: Module, op: Operation) -> list[tuple[Function, int]]:
    """The region functions of a `while`/`case` (cond, body / the branches), each with the index
    of the operand that feeds its argument 0 (while: 0; case: 1, after the branch index)."""
    offset = 1 if op.name == "case" else 0
    funcs = [module.lookup_function(name) for name in region_functions(op)]
    return [(f, offset) for f in funcs if f is not None]


def num_carried(op: Operation) -> int:
    """`while`: the number of loop-carried values (= results); the rest are captures."""
    return len(op.results)


def branch_symbols(op: Operation) -> tuple[Symbol, ...]:
    return tuple(attr(op, "branches"))


def _lookup(op: Operation, sym: Symbol, role: str) -> Function | None:
    func = op.function
    module = func.module if func is not None else None
    if module is None:
        return None
    callee = module.lookup_function(sym.name)
    if callee is None:
        raise op_error(op, f"{role} @{sym.name} is not defined in this module")
    return callee


def _check_args(op: Operation, callee: Function, role: str, values: Sequence[Value]) -> None:
    if len(callee.args) != len(values):
        raise op_error(
            op, f"{role} @{callee.name} takes {len(callee.args)} arguments, expected {len(values)}"
        )
    for i, (v, a) in enumerate(zip(values, callee.args)):
        if v.type.tensor != a.type.tensor:
            raise op_error(
                op,
                f"{role} @{callee.name} argument {i} has type {a.type.tensor}, "
                f"expected {v.type.tensor}",
            )


def _check_results(
    op: Operation, callee: Function, role: str, types: Sequence[TensorType]
) -> None:
    got = callee.result_types
    if len(got) != len(types):
        raise op_error(
            op, f"{role} @{callee.name} returns {len(got)} values, expected {len(types)}"
        )
    for i, (g, t) in enumerate(zip(got, types)):
        if g.tensor != t.tensor:
            raise op_error(
                op, f"{role} @{callee.name} result {i} has type {g.tensor}, expected {t.tensor}"
            )


def _verify_while(op: Operation) -> None:
    n = num_carried(op)
    captures = attr(op, "captures")
    if captures < 0:
        raise op_error(op, f"captures must be >= 0, got {captures}")
    if op.num_operands != n + captures:
        raise op_error(
            op,
            f"has {n} results, so it takes {n} carried operands + {captures} captured, got "
            f"{op.num_operands} operands",
        )
    for k in range(n):
        if op.operand(k).type.tensor != op.results[k].type.tensor:
            raise op_error(
                op,
                f"carried operand {k} has type {op.operand(k).type.tensor} but result {k} has "
                f"type {op.results[k].type.tensor}",
            )
    cond = _lookup(op, attr(op, "cond"), "cond")
    body = _lookup(op, attr(op, "body"), "body")
    if cond is None or body is None:
        return
    _check_args(op, cond, "cond", op.operands)
    _check_results(op, cond, "cond", [TensorType((), "i1")])
    _check_args(op, body, "body", op.operands)
    _check_results(op, body, "body", [r.type for r in op.results])


def _verify_case(op: Operation) -> None:
    if op.num_operands < 1:
        raise op_error(op, "takes the branch index as operand 0")
    index = op.operand(0).type
    if index.shape != () or index.dtype != "i32":
        raise op_error(op, f"branch index must be tensor<i32>, got {index.tensor}")
    branches = attr(op, "branches")
    if (
        not isinstance(branches, tuple)
        or not branches
        or any(not isinstance(b, Symbol) for b in branches)
    ):
        raise op_error(op, "attribute 'branches' must be a non-empty array of symbols, e.g. [@f]")
    captured = op.operands[1:]
    for i, sym in enumerate(branches):
        branch = _lookup(op, sym, f"branch {i}")
        if branch is None:
            continue
        _check_args(op, branch, f"branch {i}", captured)
        _check_results(op, branch, f"branch {i}", [r.type for r in op.results])


register(
    OpDef(
        "while",
        None,
        None,
        {"cond": req("symbol"), "body": req("symbol"), "captures": opt("int", 0)},
        None,
        _verify_while,
        summary="loop: carried values through @body while @cond holds",
    )
)
register(
    OpDef(
        "case",
        None,
        None,
        {"branches": req("any")},
        None,
        _verify_case,
        summary="run branch `index` (out of range: the last) on the captured operands",
    )
)
