"""The GLOBAL (unsharded) program as a JAX function, for `jax.jit` with shardings of one's own.

    f = global_function(module)                        # f(*arrays) -> tuple of arrays
    ys = f(x, w1, w2)                                  # eager, or under jax.jit
    jitted, mesh, ins, outs = jit_global(result.module)   # jit with the module's shardings

Every op is its `jax.lax` / `jax.numpy` counterpart on the whole (logical) tensor, with the
reference interpreter's semantics (`reference.py`, `kernels.py`): sharding ops and collectives
are the identity on data (a global program's value is the logical tensor), `reduce` combines
its init value once, `gather` clamps its start indices, `scatter` drops windows that do not fit.
This is the JAX/XLA side of the benchmarks: XLA's own SPMD partitioner shards `f` given the
argument and result shardings, so shardc's sharding decisions can be compared with XLA's on the
same program. With `mesh=` (a `jax.sharding.Mesh`), `sharding_constraint` and `reshard` become
`jax.lax.with_sharding_constraint` to the op's closed sharding; without it they are the identity.
A `manual_computation` is `jax.shard_map` over its manual axes (`axis_names`), its body's
`spmd.*` ops the JAX collectives over those axes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shardc.executors import control
from shardc.executors.control import control_flow
from shardc.executors.jax_collectives import manual_permutation, named_axes_collective
from shardc.executors.jax_ops.table import JAX_OPS
from shardc.executors.jax_runtime import import_jax, shard_map
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops import GLOBAL_COLLECTIVES
from shardc.ir.ops.manual import body_of, manual_names
from shardc.ir.ops.registry import attr

__all__ = ["global_function", "jit_global"]

# Data-movement ops of a global program: the identity on the logical tensor.
_IDENTITY = frozenset({"propagation_barrier", *GLOBAL_COLLECTIVES})
_CONSTRAINTS = frozenset({"sharding_constraint", "reshard"})


def global_function(
    module: Module, function: str = "main", *, mesh: Any = None, every_value: bool = False
) -> Callable[..., tuple[Any, ...]]:
    """`@function` of the global program as `f(*arrays) -> tuple` of JAX arrays (traceable).

    `mesh`: a `jax.sharding.Mesh` (e.g. `mesh_to_jax(module.meshes["mesh"])`) to keep the
    program's `sharding_constraint` / `reshard` ops as `with_sharding_constraint`; with
    `every_value`, every op result with a closed sharding is constrained to it too (XLA then
    partitions with shardc's layouts everywhere: a check of shardc's cost model).
    """
    jax = import_jax()
    func = module.lookup_function(function)
    if func is None:
        known = ", ".join(f"@{n}" for n in module.functions) or "none"
        raise ExecutionError(f"module has no function @{function} (functions: {known})")
    translator = _Translator(jax, module, mesh)
    translator.every_value = every_value and mesh is not None

    def f(*args: Any) -> tuple[Any, ...]:
        if len(args) != len(func.args):
            raise ExecutionError(
                f"@{func.name} takes {len(func.args)} arguments, got {len(args)}", func.loc
            )
        return translator.call(func, args)

    f.__name__ = function
    return f


def jit_global(
    module: Module, function: str = "main", *, mesh: Any = None, every_value: bool = False
) -> tuple[Any, Any, tuple[Any, ...], tuple[Any, ...]]:
    """`(jitted, mesh, in_shardings, out_shardings)`: `global_function` under `jax.jit` with the
    module's argument and result shardings as `NamedSharding`s on `mesh` (default:
    `mesh_to_jax` of the module's one mesh). The shardings must be closed (compile first)."""
    jax = import_jax()
    from shardc.jax_api import mesh_to_jax, to_jax_shardings  # noqa: PLC0415 - needs JAX

    if mesh is None:
        if len(module.meshes) != 1:
            raise ExecutionError(
                f"jit_global needs mesh= for a module with {len(module.meshes)} meshes"
            )
        (device_mesh,) = module.meshes.values()
        mesh = mesh_to_jax(device_mesh)
    ins, outs = to_jax_shardings(module, mesh, function)
    f = global_function(module, function, mesh=mesh, every_value=every_value)
    return jax.jit(f, in_shardings=ins, out_shardings=outs), mesh, ins, outs


class _Translator:
    """Traces a global function op by op; `call` recurses into callees."""

    def __init__(self, jax: Any, module: Module, mesh: Any):
        self.jax = jax
        self.module = module
        self.mesh = mesh
        self.manual: tuple[Any, tuple[str, ...]] | None = None  # (mesh, axes) inside a body
        self.every_value = False  # constrain every op result to its sharding

    def call(self, func: Function, args: Sequence[Any]) -> tuple[Any, ...]:
        env: dict[int, Any] = {id(a): x for a, x in zip(func.args, args)}
        for op in func.body:
            xs = [env[id(v)] for v in op.operands]
            if op.name == "return":
                return tuple(xs)
            try:
                out = self._op(op, xs)
            except ExecutionError:
                raise
            except Exception as e:
                raise ExecutionError(
                    f"'{op.name}' op failed in the JAX global translator: "
                    f"{type(e).__name__}: {e}", op.loc
                ) from e
            outs = [out] if len(op.results) == 1 else list(out)
            for r, v in zip(op.results, outs, strict=True):
                # partial sums (unreduced) have no XLA layout to pin
                if self.every_value and r.mapping is not None and r.type.rank \
                        and not r.mapping.unreduced:
                    v = self._pinned(r.mapping, v)
                env[id(r)] = v
        raise ExecutionError(f"function @{func.name} has no return", func.loc)

    def _op(self, op: Operation, xs: list[Any]) -> Any:
        name = op.name
        if name in _IDENTITY:
            return xs[0]
        if name in _CONSTRAINTS:
            return self._constraint(op, xs[0])
        if name == "sharding_group":
            return ()
        if name == "manual_computation":
            out = self._manual_computation(op, xs)
            return out[0] if len(op.results) == 1 else out
        if (name.startswith("spmd.") or name == "xla.collective_permute") and (
                self.manual is not None):
            return self._per_device(op, xs)
        if name in ("call", "composite"):
            callee = self.module.lookup_function(
                attr(op, "callee" if name == "call" else "decomposition").name
            )
            if callee is None:
                raise ExecutionError(f"'{name}' op calls a function not in the module", op.loc)
            out = self.call(callee, xs)
            return out[0] if len(op.results) == 1 else out
        if name in ("while", "case"):
            return control.single(op, control_flow(self.module, op, self.call, xs))
        fn = JAX_OPS.get(name)
        if fn is None:
            raise ExecutionError(f"no JAX translation of op '{name}'", op.loc)
        return fn(op, *xs)

    def _manual_computation(self, op: Operation, xs: list[Any]) -> tuple[Any, ...]:
        """`jax.shard_map` over the manual axes: each operand cut by its in_sharding's manual
        axes, the results put together by the out_shardings' (free axes stay automatic)."""
        from shardc.jax_api import mesh_to_jax  # noqa: PLC0415 - needs JAX

        body = body_of(op)
        if body is None or self.manual is not None:
            raise ExecutionError("nested or bodiless manual_computation", op.loc)
        manual = manual_names(op)
        shardings = (*attr(op, "in_shardings"), *attr(op, "out_shardings"))
        mesh = self.mesh if self.mesh is not None else mesh_to_jax(shardings[0].mesh)
        P = self.jax.sharding.PartitionSpec  # noqa: N806 - JAX's name

        def spec(m: Any) -> Any:
            dims = []
            for d in m.dims:
                names = []
                for a in d.axes:
                    if a.name not in manual:
                        break
                    if a.is_sub_axis:
                        raise ExecutionError("manual sub-axes have no JAX translation", op.loc)
                    names.append(a.name)
                dims.append(tuple(names) or None)
            return P(*dims)

        def run(*args: Any) -> tuple[Any, ...]:
            self.manual = (shardings[0].mesh, manual)
            try:
                return self.call(body, args)
            finally:
                self.manual = None

        fn = shard_map(self.jax)(
            run, mesh, tuple(spec(m) for m in attr(op, "in_shardings")),
            tuple(spec(m) for m in attr(op, "out_shardings")), frozenset(manual),
        )
        return tuple(fn(*xs))

    def _per_device(self, op: Operation, xs: list[Any]) -> Any:
        """A body's per-device collective over (whole) manual axes."""
        lax = self.jax.lax
        assert self.manual is not None
        mesh, manual = self.manual
        name = op.name
        if name in ("spmd.collective_permute", "xla.collective_permute"):
            key = "pairs" if name.startswith("spmd.") else "source_target_pairs"
            perm = manual_permutation(op, mesh, manual, attr(op, key))
            return lax.ppermute(xs[0], manual, perm)
        refs = attr(op, "axes")
        if any(a.is_sub_axis for a in refs):
            raise ExecutionError("per-device collectives over sub-axes have no translation", op.loc)
        return named_axes_collective(self.jax, op, xs, tuple(a.name for a in refs))

    def _constraint(self, op: Operation, x: Any) -> Any:
        return self._pinned(op.results[0].mapping, x, op.name)

    def _pinned(self, mapping: Any, x: Any, what: str = "value") -> Any:
        if self.mesh is None or mapping is None or not mapping.is_fully_resolved:
            return x
        if self.manual is not None:
            return x  # inside a body: the layout over free axes is XLA's choice
        from shardc.jax_api import _named_sharding  # noqa: PLC0415 - needs JAX

        sharding = _named_sharding(mapping, self.mesh, f"'{what}' op")
        return self.jax.lax.with_sharding_constraint(x, sharding)
