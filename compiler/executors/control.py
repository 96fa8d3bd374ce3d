"""`while` and `case` for the executors that interpret a module function by function.

The region functions are run with the executor's own `call(func, args)`; how a predicate or a
branch index is read from a runtime value is the executor's (`truth`, `index`): the numpy SPMD
executor checks every device agrees.

A `while` runs at most `limits.while_iterations` times (`--limit while-iterations=N`): a loop
whose condition still holds then is a located error, not a run that never ends. The numpy
executors count in Python; under JAX the count is carried through `lax.while_loop` and a loop
stopped by it reports itself through a host callback (`LoopWatch`), read after the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.limits import DEFAULT_LIMITS, Limits, while_limit_error
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
    module: Module,
    op: Operation,
    call: Call,
    args: Sequence[Any],
    truth: Callable[[Any], bool],
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[Any, ...]:
    """Carried values after `@body` ran while `@cond` held (captures passed to both)."""
    cond, body = while_functions(module, op)
    n = num_carried(op)
    carried, captured = tuple(args[:n]), tuple(args[n:])
    for _ in range(limits.while_iterations):
        if not truth(call(cond, (*carried, *captured))[0]):
            return carried
        carried = tuple(call(body, (*carried, *captured)))
    if truth(call(cond, (*carried, *captured))[0]):
        raise while_limit_error(op.loc, limits)
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


class LoopWatch:
    """The `while` ops of a traced JAX program that stopped at the iteration limit: traced code
    calls back `stopped(index)`; `check()` after the run raises the first one's error."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS):
        self.limits = limits
        self.ops: list[Operation] = []
        self.hit: set[int] = set()

    def stopped(self, index: Any) -> None:
        self.hit.add(int(index))

    def check(self) -> None:
        if not self.ops:
            return  # no loop in the program: no callback to wait for
        import jax  # noqa: PLC0415 - JAX is optional

        jax.effects_barrier()
        if self.hit:
            first = min(self.hit)
            self.hit.clear()
            raise while_limit_error(self.ops[first].loc, self.limits)


def control_flow(
    module: Module, op: Operation, call: Call, xs: Sequence[Any], watch: LoopWatch | None = None
) -> tuple[Any, ...]:
    """`while` as `lax.while_loop`, `case` as `lax.switch` (index clamped to the last branch),
    for the JAX executors (traced: the region functions are traced once each). With a `watch`,
    a loop runs at most its limit's iterations and reports to it when stopped there."""
    from jax import lax  # noqa: PLC0415 - JAX is optional
    from jax import numpy as jnp

    if op.name == "while":
        cond, body = while_functions(module, op)
        n = num_carried(op)
        captured = tuple(xs[n:])

        def holds(carry: Sequence[Any]) -> Any:
            return call(cond, (*carry, *captured))[0]

        def step(carry: Sequence[Any]) -> tuple[Any, ...]:
            return tuple(call(body, (*carry, *captured)))

        if watch is None:
            return tuple(lax.while_loop(holds, step, tuple(xs[:n])))
        return _watched_loop(watch, op, holds, step, tuple(xs[:n]))
    branches = branch_functions(module, op)
    index = jnp.asarray(xs[0])
    index = jnp.where((index < 0) | (index >= len(branches)), len(branches) - 1, index)
    fns = [lambda *a, f=f: tuple(call(f, a)) for f in branches]
    return tuple(lax.switch(index, fns, *xs[1:]))


def _watched_loop(
    watch: LoopWatch, op: Operation, holds: Callable, step: Callable, init: tuple[Any, ...]
) -> tuple[Any, ...]:
    """`lax.while_loop` with an iteration count carried beside the values; past the limit the
    loop stops and, when its condition still holds, tells `watch` (a host callback)."""
    import jax  # noqa: PLC0415 - JAX is optional
    from jax import lax
    from jax import numpy as jnp

    limit = min(watch.limits.while_iterations, (1 << 31) - 1)
    index = len(watch.ops)
    watch.ops.append(op)
    carry, count = lax.while_loop(
        lambda s: jnp.logical_and(holds(s[0]), s[1] < limit),
        lambda s: (step(s[0]), s[1] + 1),
        (init, jnp.int32(0)),
    )
    stopped = jnp.logical_and(count >= limit, holds(carry))
    lax.cond(stopped, lambda: jax.debug.callback(watch.stopped, index), lambda: None)
    return tuple(carry)
