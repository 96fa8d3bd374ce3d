"""`while` and `case` for the executors that interpret a module function by function.

The region functions are run with the executor's own `call(func, args)`; how a predicate or a
branch index is read from a runtime value is the executor's (`truth`, `index`): the numpy SPMD
executor checks every device agrees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.control import branch_symbols, num_carried
from shardc.ir.ops.registry import attr

Call = Callable[[Function, Sequence[Any]], Sequence[Any]]


def _function(module: Module, op: Operation, name: str) -> Function:
    func = module.lookup_function(name)
    if func is None:
        raise ExecutionError(f"'{op.name}' op runs @{name}, which is not in the module", op.loc)
    return func


def while_functions(module: Module, op: Operation) -> tuple[Function, Function]:
    return (
        _function(module, op, attr(op, "cond").name),
        _function(module, op, attr(op, "body").name),
    )


def branch_functions(module: Module, op: Operation) -> list[Function]:
    return [_function(module, op, s.name) for s in branch_symbols(op)]


def run_while(
    module: Module, op: Operation, call: Call, args: Sequence[Any], truth: Callable[[Any], bool]
) -> tuple[Any, ...]:
    """Carried values after `@body` ran while `@cond` held (captures passed to both)."""
    cond, body = while_functions(module, op)
    n = num_carried(op)
    carried, captured = tuple(args[:n]), tuple(args[n:])
    while truth(call(cond, (*carried, *captured))[0]):
        carried = tuple(call(body, (*carried, *captured)))
    return carried


def branch_index(index: int, num_branches: int) -> int:
    """StableHLO: an index out of range runs the last branch."""
    return index if 0 <= index < num_branches else num_branches - 1


def run_case(
    module: Module, op: Operation, call: Call, args: Sequence[Any], index: Callable[[Any], int]
) -> tuple[Any, ...]:
    branches = branch_functions(module, op)
    chosen = branches[branch_index(index(args[0]), len(branches))]
    return tuple(call(chosen, tuple(args[1:])))


def single(op: Operation, out: Sequence[Any]) -> Any:
    """An executor's result convention: one value for a single-result op, else a tuple."""
    return out[0] if len(op.results) == 1 else tuple(out)


def control_flow(module: Module, op: Operation, call: Call, xs: Sequence[Any]) -> tuple[Any, ...]:
    """`while` as `lax.while_loop`, `case` as `lax.switch` (index clamped to the last branch),
    for the JAX executors (traced: the region functions are traced once each)."""
    from jax import lax  # noqa: PLC0415 - JAX is optional
    from jax import numpy as jnp

    if op.name == "while":
        cond, body = while_functions(module, op)
        n = num_carried(op)
        captured = tuple(xs[n:])
        return tuple(
            lax.while_loop(
                lambda carry: call(cond, (*carry, *captured))[0],
                lambda carry: tuple(call(body, (*carry, *captured))),
                tuple(xs[:n]),
            )
        )
    branches = branch_functions(module, op)
    index = jnp.asarray(xs[0])
    index = jnp.where((index < 0) | (index >= len(branches)), len(branches) - 1, index)
    fns = [lambda *a, f=f: tuple(call(f, a)) for f in branches]
    return tuple(lax.switch(index, fns, *xs[1:]))
