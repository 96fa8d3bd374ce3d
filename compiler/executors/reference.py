"""The reference interpreter: runs the global (unsharded) program in numpy.

    outputs = run_reference(module, {"x": x, "w1": w1, "w2": w2})

Every value is the logical tensor, so sharding ops and collectives are the identity on data
(see `kernels.py`). Like torch.fx's interpreter it dispatches on the op name, but the dispatch
is planned once per function: each value gets a slot in a flat list and each op becomes a
closure over its kernel, operand slots, result slots and the slots it is the last user of, so
the run loop is `for run in plan.runs: run(env)` (about 0.7 us per op above the kernel). Values
are dropped after their last use, so peak memory stays near the live set.

`call` runs the callee's own plan; `return` ends the plan. `Interpreter(module, kernels)`
takes another kernel table for executors that share this dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.executors import control
from shardc.executors.kernels import Kernel
from shardc.executors.kernels.custom_calls import known_custom_call
from shardc.executors.kernels.table import KERNELS
from shardc.executors.signature import check_global_inputs
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError, ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


@dataclass(slots=True)
class _Step:
    kernel: Kernel
    op: Operation
    operands: tuple[int, ...]
    results: tuple[int, ...]
    free: tuple[int, ...]


@dataclass(slots=True)
class _Plan:
    function: Function
    num_slots: int
    steps: list[_Step]
    runs: list[Callable[[list[Any]], None]]  # steps[i] as a closure over its slots
    returns: tuple[int, ...]


class Interpreter:
    """Runs functions of `module` with a kernel table (`KERNELS` by default).

    Plans are built on first use and kept, so build one interpreter per module snapshot: a
    module mutated afterwards needs a new interpreter. `check_types` compares every result's
    shape and dtype with the IR's type (for tests of kernels; it costs a little per op).
    """

    def __init__(
        self,
        module: Module,
        kernels: Mapping[str, Kernel] = KERNELS,
        *,
        check_types: bool = False,
        limits: Limits = DEFAULT_LIMITS,
    ):
        self.module = module
        self.kernels = kernels
        self.check_types = check_types
        self.limits = limits
        self._plans: dict[str, _Plan] = {}

    # ----- entry point ----------------------------------------------------------------------

    def run(
        self,
        inputs: Sequence[Any] | Mapping[str, Any],
        *,
        function: str = "main",
    ) -> list[np.ndarray]:
        func = self.module.lookup_function(function)
        if func is None:
            known = ", ".join(f"@{name}" for name in self.module.functions) or "none"
            raise ExecutionError(
                f"module has no function @{function} to run (functions: {known}); "
                "pass function=<name>"
            )
        args = check_global_inputs(func, inputs)
        with np.errstate(all="ignore"):  # IEEE inf/NaN are results here, not errors
            outputs = self.call(func, args)
        return [_own(v, args) for v in outputs]

    def call(self, func: Function, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Run `func` on already checked arrays; returns its results."""
        plan = self._plans.get(func.name)
        if plan is None:
            plan = self._plans[func.name] = self._build_plan(func)
        env: list[Any] = [None] * plan.num_slots
        env[: len(args)] = args
        n = 0
        try:
            if self.check_types:
                for n, step in enumerate(plan.steps):  # noqa: B007 - n names a failing op
                    _store(env, step, step.kernel(step.op, *[env[i] for i in step.operands]))
                    _check_results(step, env)
                    for i in step.free:
                        env[i] = None
            else:
                for n, run in enumerate(plan.runs):  # noqa: B007 - n names a failing op
                    run(env)
        except ShardcError:
            raise
        except Exception as e:
            op = plan.steps[n].op
            raise ExecutionError(
                f"'{op.name}' op failed in the reference interpreter: {type(e).__name__}: {e}",
                op.loc,
            ) from e
        return tuple(env[i] for i in plan.returns)

    # ----- planning -------------------------------------------------------------------------

    def _build_plan(self, func: Function) -> _Plan:
        slots = {id(a): i for i, a in enumerate(func.args)}
        steps: list[_Step] = []
        returns: tuple[int, ...] | None = None
        for op in func.body:
            try:
                operands = tuple(slots[id(v)] for v in op.operands)
            except KeyError:
                raise ExecutionError(
                    f"'{op.name}' op uses a value not defined before it in @{func.name}", op.loc
                ) from None
            if op.name == "return":
                returns = operands
                break
            results = tuple(range(len(slots), len(slots) + len(op.results)))
            for r, i in zip(op.results, results):
                slots[id(r)] = i
            steps.append(_Step(self._kernel_for(op), op, operands, results, ()))
        if returns is None:
            raise ExecutionError(f"function @{func.name} has no return", func.loc)
        _assign_frees(steps, returns)
        return _Plan(func, len(slots), steps, [_closure(s) for s in steps], returns)

    def _kernel_for(self, op: Operation) -> Kernel:
        if op.name in ("call", "composite"):
            return self._call_kernel(op)
        if op.name == "custom_call":
            return known_custom_call(op)
        if op.name in ("while", "case"):
            return self._region_kernel(op)
        if op.name == "manual_computation":
            return self._manual_kernel(op)
        kernel = self.kernels.get(op.name)
        if kernel is not None:
            return kernel
        raise ExecutionError(f"no numpy kernel for op '{op.name}'", op.loc)

    def _region_kernel(self, op: Operation) -> Kernel:
        """`while`/`case`: run the region functions (compiler/executors/control.py)."""
        if op.name == "while":
            control.while_functions(self.module, op)  # missing functions fail when planning

            def loop(op: Operation, *args: np.ndarray) -> Any:
                return control.single(op, control.run_while(self.module, op, self.call, args, bool,
                                                             self.limits))

            return loop
        control.branch_functions(self.module, op)

        def case(op: Operation, *args: np.ndarray) -> Any:
            return control.single(op, control.run_case(self.module, op, self.call, args, int))

        return case

    def _call_kernel(self, op: Operation) -> Kernel:
        name = attr(op, "callee" if op.name == "call" else "decomposition").name
        callee = self.module.lookup_function(name)
        if callee is None:
            raise ExecutionError(
                f"'{op.name}' op calls @{name}, which is not in the module", op.loc
            )
        single = len(op.results) == 1

        def call(op: Operation, *args: np.ndarray) -> Any:
            out = self.call(callee, args)
            return out[0] if single else out

        return call

    def _manual_kernel(self, op: Operation) -> Kernel:
        from shardc.executors.manual import run_manual_computation  # numpy_exec imports us

        single = len(op.results) == 1

        def manual(op: Operation, *args: np.ndarray) -> Any:
            out = run_manual_computation(self.module, op, args, self.limits)
            return out[0] if single else tuple(out)

        return manual


def run_reference(
    module: Module,
    inputs: Sequence[Any] | Mapping[str, Any],
    *,
    function: str = "main",
    check_types: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> list[np.ndarray]:
    """Run `@function` of the global program on `inputs` (positional, or by argument name as
    written without `%`); returns its results as numpy arrays. Inputs must have exactly the
    argument's shape and element type (`f32` -> float32, `bf16` -> ml_dtypes.bfloat16). A `while`
    runs at most `limits.while_iterations` times (then an `ExecutionError`)."""
    return Interpreter(module, check_types=check_types, limits=limits).run(
        inputs, function=function
    )


# ----- helpers --------------------------------------------------------------------------------


def _closure(step: _Step) -> Callable[[list[Any]], None]:
    """`step` as one call on the slot list, specialised for the common arities."""
    kernel, op, ins, outs, free = step.kernel, step.op, step.operands, step.results, step.free
    if len(outs) != 1:

        def run(env: list[Any]) -> None:
            for i, v in zip(outs, kernel(op, *[env[i] for i in ins]), strict=True):
                env[i] = v
            for i in free:
                env[i] = None

        return run
    (r,) = outs
    if len(ins) == 1:
        (a,) = ins

        def run1(env: list[Any]) -> None:
            env[r] = kernel(op, env[a])
            if free:
                for i in free:
                    env[i] = None

        return run1
    if len(ins) == 2:
        a, b = ins

        def run2(env: list[Any]) -> None:
            env[r] = kernel(op, env[a], env[b])
            if free:
                for i in free:
                    env[i] = None

        return run2

    def run_n(env: list[Any]) -> None:
        env[r] = kernel(op, *[env[i] for i in ins])
        for i in free:
            env[i] = None

    return run_n


def _store(env: list[Any], step: _Step, out: Any) -> None:
    if len(step.results) == 1:
        env[step.results[0]] = out
    else:
        for i, v in zip(step.results, out, strict=True):
            env[i] = v


def _check_results(step: _Step, env: list[Any]) -> None:
    for r, i in zip(step.op.results, step.results):
        value = env[i]
        want_shape, want_dtype = r.type.shape, numpy_dtype(r.type.dtype)
        if not isinstance(value, np.ndarray) or value.shape != want_shape or (
            value.dtype != want_dtype
        ):
            got = f"{type(value).__name__} {getattr(value, 'shape', '?')} " \
                  f"{getattr(value, 'dtype', '?')}"
            raise ExecutionError(
                f"'{step.op.name}' kernel returned {got}; the IR says {r.type.tensor}",
                step.op.loc,
            )


def _assign_frees(steps: list[_Step], returns: tuple[int, ...]) -> None:
    """After each step, free the slots whose last use (or definition, if unused) it is."""
    last: dict[int, int] = {}
    for n, step in enumerate(steps):
        for i in step.results:
            last[i] = n
        for i in step.operands:
            last[i] = n
    keep = set(returns)
    frees: dict[int, list[int]] = {}
    for i, n in last.items():
        if i not in keep:
            frees.setdefault(n, []).append(i)
    for n, slots in frees.items():
        steps[n].free = tuple(slots)


def _own(value: Any, args: list[np.ndarray]) -> np.ndarray:
    """An output the caller may write to: read-only views and returned inputs are copied."""
    array = np.asarray(value)
    if not array.flags.writeable or any(array is a for a in args):
        return array.copy()
    return array
