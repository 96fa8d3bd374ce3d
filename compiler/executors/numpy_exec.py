"""The numpy SPMD executor: every device of the mesh in one process.

    outputs = run_spmd(spmd_module, {"x": x, "w": w})          # global arrays in and out
    blocks = scatter_inputs([x, w], shardings)                  # device_layout.py
    outs = NumpyExecutor(spmd_module).run_blocks(blocks)        # per-device blocks out
    y = gather_outputs(outs, shapes, shardings)

Devices are batched, not looped (device_layout.py): a value is one array of shape
`(*mesh_atoms, *local_shape)`. The executor plans each function once -- a slot per value, a
runner per op -- and runs the plan: local ops run once on the whole batch (batched_kernels.py;
element-wise ops are the reference kernels), collectives are reshapes, transposes and reductions
over the leading dims (batched_collectives.py), `while`/`case` take the one path every device
agrees on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.executors import control
from shardc.executors.batched_collectives import (
    batched_collective,
    operand_runners,
    summed,
    summing,
)
from shardc.executors.batched_kernels import BATCHED, per_device, summed_dot
from shardc.executors.device_layout import (
    Blocks,
    DeviceLayout,
    from_batched,
    module_layout,
    to_batched,
)
from shardc.executors.host_callbacks import is_host_callback, numpy_runner
from shardc.executors.kernels.custom_calls import known_custom_call
from shardc.executors.kernels.table import KERNELS
from shardc.executors.replica_groups import replica_runner
from shardc.executors.signature import SpmdSignature, check_spmd_inputs
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError, ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops.registry import ELEMENTWISE, OPS, attr
from shardc.ir.types import is_float


class NumpyExecutor:
    """Runs an SPMD module's `function` on every device of its mesh (see the module doc).

    `general_groups=True` runs every collective group by group on per-device blocks (slow; the
    semantics of `groups` taken literally), for cross-checking the batched path.
    """

    def __init__(
        self,
        module: Module,
        function: str = "main",
        *,
        general_groups: bool = False,
        limits: Limits = DEFAULT_LIMITS,
        host_callbacks: Sequence[Callable[..., Any]] | None = None,
    ):
        func = module.lookup_function(function)
        if func is None:
            raise ExecutionError(f"module has no function @{function}")
        self.module = module
        self.func = func
        self.sig = SpmdSignature.of(func)
        self.layout = module_layout(module, func) or DeviceLayout.build(
            DeviceMesh.create("single", {}), []
        )
        self.general_groups = general_groups
        self.limits = limits
        self.host_callbacks = host_callbacks  # (host_callbacks.py)
        self._plans: dict[str, _Plan] = {}

    @classmethod
    def on_layout(
        cls, module: Module, layout: DeviceLayout, limits: Limits = DEFAULT_LIMITS
    ) -> NumpyExecutor:
        """An executor for `call`ing per-device functions of `module` on batched values laid
        out by `layout` (no entry function: the body of a manual_computation)."""
        ex = cls.__new__(cls)
        ex.module, ex.layout, ex.general_groups, ex._plans = module, layout, False, {}
        ex.limits, ex.host_callbacks = limits, None
        return ex

    # ----- entry points ---------------------------------------------------------------------

    def run(self, inputs: Sequence[Any] | Mapping[str, Any]) -> list[np.ndarray]:
        """Global arrays in (by position or argument name), global arrays out."""
        arrays = check_spmd_inputs(self.func, self.sig, inputs)
        shardings = self._shardings(self.sig.in_shardings, self.sig.in_shapes)
        batched = [to_batched(a, m, self.layout) for a, m in zip(arrays, shardings)]
        outs = self.run_batched(batched)
        out_shardings = self._shardings(self.sig.out_shardings, self.sig.out_shapes)
        return [
            from_batched(x, s, m, self.layout)
            for x, s, m in zip(outs, self.sig.out_shapes, out_shardings)
        ]

    def run_blocks(self, blocks: Sequence[Mapping[int, np.ndarray]]) -> list[Blocks]:
        """Per-device blocks in (device id -> padded local block), per-device blocks out."""
        mesh = self.layout.mesh
        ids = mesh.all_device_ids()
        batched = []
        for i, b in enumerate(blocks):
            if any(d not in b for d in ids):
                raise ExecutionError(f"input {i} needs a block for every device {ids}")
            batched.append(self.layout.from_positions(np.stack([b[d] for d in ids])))
        outs = self.run_batched(batched)
        result = []
        for x in outs:
            flat = self.layout.positions(x)
            result.append({d: np.array(flat[p]) for p, d in enumerate(ids)})
        return result

    def run_batched(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return list(self.call(self.func, list(values)))

    def _shardings(self, given, shapes) -> list[NamedMapping]:
        if given is not None:
            return list(given)
        return [NamedMapping.fully_replicated(self.layout.mesh, len(s)) for s in shapes]

    # ----- interpretation -------------------------------------------------------------------

    def call(self, func: Function, args: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        plan = self._plans.get(func.name)
        if plan is None:
            plan = self._plans[func.name] = self._plan(func)
        env: list[Any] = [None] * plan.num_slots
        env[: len(args)] = args
        op = None
        try:
            for op, run, ins, outs, free in plan.steps:  # noqa: B007 - op names a failure
                result = run(*[env[i] for i in ins])
                if len(outs) == 1:
                    env[outs[0]] = result
                else:
                    for i, v in zip(outs, result):
                        env[i] = v
                for i in free:
                    env[i] = None
        except ShardcError:
            raise
        except Exception as e:
            name = op.name if op is not None else "?"
            raise ExecutionError(
                f"'{name}' op failed in the numpy SPMD executor: {type(e).__name__}: {e}",
                op.loc if op is not None else None,
            ) from e
        return tuple(env[i] for i in plan.returns)

    def _plan(self, func: Function) -> _Plan:
        slots = {id(a): i for i, a in enumerate(func.args)}
        steps: list[tuple[Operation, Callable[..., Any], list[int], list[int], list[int]]] = []
        returns: list[int] = []
        fused = self._summed_products(func)
        for op in func.body:
            ins = [slots[id(v)] for v in op.operands]
            if op.name == "return":
                returns = ins
                break
            outs = list(range(len(slots), len(slots) + len(op.results)))
            for r, i in zip(op.results, outs):
                slots[id(r)] = i
            runner = fused.get(id(op)) or self._runner(op)
            steps.append((op, runner, ins, outs, []))
        last: dict[int, int] = {}
        for n, (_, _, ins, outs, _) in enumerate(steps):
            for i in (*ins, *outs):
                last[i] = n
        for i, n in last.items():
            if i not in returns:
                steps[n][4].append(i)
        return _Plan(len(slots), steps, returns)

    def _summed_products(self, func: Function) -> dict[int, Callable[..., Any]]:
        """Runners for each contraction-sharded `dot_general` whose every user sums it over
        the same devices (`all_reduce` or `reduce_scatter`, combined or not): the product
        computes the sum as one GEMM (`summed_dot`), and its users only keep their part of it."""
        out: dict[int, Callable[..., Any]] = {}
        if self.general_groups:
            return out
        parts: dict[int, tuple[Operation, dict[int, Callable[..., Any]]]] = {}
        for op in func.body:
            if op.name != "dot_general" or not is_float(op.results[0].type.dtype):
                continue
            uses = list(op.result.uses)
            sums = [summing(u.op, self.layout, False) for u in uses]
            if not uses or any(s is None for s in sums):
                continue
            groups = {tuple(s[0]) for s in sums}  # type: ignore[index]
            if len(groups) != 1:
                continue
            g = list(groups.pop())
            out[id(op)] = summed_dot(op, self.layout.rank, g, summed(self.layout, g))
            for use, (_, finish) in zip(uses, sums):  # type: ignore[misc]
                parts.setdefault(id(use.op), (use.op, {}))[1][use.index] = finish
        for key, (user, finished) in parts.items():
            runs = operand_runners(user, self.layout, False)
            runs = [finished.get(i, run) for i, run in enumerate(runs)]
            out[key] = runs[0] if len(runs) == 1 else (
                lambda *xs, runs=runs: tuple(run(x) for run, x in zip(runs, xs)))
        return out

    def _runner(self, op: Operation) -> Callable[..., Any]:
        name = op.name
        r = self.layout.rank
        if name in ("call", "composite"):
            callee = self.module.lookup_function(
                attr(op, "callee" if name == "call" else "decomposition").name
            )
            assert callee is not None
            single = len(op.results) == 1
            return lambda *xs: (lambda out: out[0] if single else out)(self.call(callee, list(xs)))
        if name in ("while", "case"):
            return self._region_runner(op)
        if name.startswith("spmd."):
            return batched_collective(op, self.layout, self.general_groups)
        replica = replica_runner(op, self.layout)  # xla.* collectives, partition_id, ...
        if replica is not None:
            return replica
        batched = BATCHED.get(name)
        if batched is not None:
            return batched(op, r)
        if name == "custom_call" and is_host_callback(op):
            return numpy_runner(op, self.host_callbacks, self.layout)
        kernel = known_custom_call(op) if name == "custom_call" else KERNELS.get(name)
        if kernel is None:
            raise ExecutionError(f"no numpy kernel for op '{name}'", op.loc)
        op_def = OPS.get(name)
        if op_def is not None and op_def.has(ELEMENTWISE):
            rank = op.results[0].type.rank
            if name in ("select", "clamp"):  # scalar operands: align their (empty) local dims
                return lambda *xs: kernel(op, *[_lift(x, r, rank) for x in xs])
            return lambda *xs: kernel(op, *xs)
        return per_device(op, kernel, self.layout)


    def _region_runner(self, op: Operation) -> Callable[..., Any]:
        """`while`/`case` on batched values: the predicate / branch index must be the same on
        every device (it is replicated), so the whole batch takes one path."""
        module = self.module

        def uniform(x: np.ndarray) -> Any:
            flat = np.asarray(x).reshape(-1)
            if flat.size and not np.all(flat == flat[0]):
                what = "loop condition" if op.name == "while" else "branch index"
                raise ExecutionError(
                    f"'{op.name}' op: the {what} differs between devices; it must be replicated",
                    op.loc,
                )
            return flat[0]

        if op.name == "while":
            control.while_functions(module, op)
            return lambda *xs: control.single(
                op, control.run_while(
                    module, op, self.call, xs, lambda c: bool(uniform(c)), self.limits
                )
            )
        control.branch_functions(module, op)
        return lambda *xs: control.single(
            op, control.run_case(module, op, self.call, xs, lambda i: int(uniform(i)))
        )


@dataclass
class _Plan:
    num_slots: int
    steps: list[tuple[Operation, Callable[..., Any], list[int], list[int], list[int]]]
    returns: list[int]


def _lift(x: np.ndarray, r: int, rank: int) -> np.ndarray:
    """Insert size-1 local dims so a lower-rank (scalar) operand broadcasts correctly."""
    missing = rank - (x.ndim - r)
    return x.reshape(x.shape[:r] + (1,) * missing + x.shape[r:]) if missing else x


def run_spmd(
    module: Module, inputs: Sequence[Any] | Mapping[str, Any], *, function: str = "main"
) -> list[np.ndarray]:
    """Run an SPMD module on its mesh, global arrays in and out."""
    return NumpyExecutor(module, function).run(inputs)
