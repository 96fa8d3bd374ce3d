"""The stages of a `shardc.jit` function: `Lowered` (shardc has decided every sharding) and
`Compiled` (the per-device program built for the mesh's devices), as `jax.stages` has them.

    lowered = shardc.jit(mlp, mesh=mesh, in_shardings=...).lower(x, w1, w2)
    lowered.as_text()          # the global program, every sharding decided, collectives explicit
    lowered.cost_text()        # collectives, bytes per device, peak memory (docs/cost.md)
    lowered.explain_collectives(suggest=3)   # why each collective, and what removes it
    lowered.in_shardings       # NamedShardings shardc decided, one per argument leaf
    compiled = lowered.compile()
    ys = compiled(x, w1, w2)   # jax.Arrays with lowered.out_shardings

`in_shardings` mirrors the positional arguments (a tuple of per-argument pytrees) and
`out_shardings` the result, so both can be handed to `jax.jit` as they are.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.jit_paths import ArgumentNames, array_text, leaf_paths
from shardc.pipeline import CompileResult

__all__ = ["Compiled", "Lowered"]


@dataclass
class Signature:
    """What a `shardc.jit` call was lowered for: the pytree of the dynamic arguments
    (`(args, kwargs)`), how many of `args` there are, and the result's pytree."""

    in_tree: Any
    num_args: int
    out_tree: Any
    leaves: tuple[Any, ...]  # ShapeDtypeStructs of the argument leaves (keys: their key data)
    # (leaf index, key dtype) of the typed PRNG keys among the argument and result leaves
    in_keys: tuple[tuple[int, Any], ...] = ()
    out_keys: tuple[tuple[int, Any], ...] = ()
    arg_names: tuple[str, ...] = ()  # each dynamic positional argument's name, for messages
    donated: tuple[bool, ...] = ()  # per argument leaf: its buffer is donated


@dataclass
class Lowered:
    """A function traced by JAX, imported and compiled by shardc for one input signature."""

    name: str
    result: CompileResult
    signature: Signature
    mesh: Any  # the user's jax.sharding.Mesh (or AbstractMesh for the numpy backend)
    backend: str
    timings: dict[str, float] = field(default_factory=dict)
    _program: Any = None
    # The program as JAX lowered it, before any pass (what-if changes it): a `Module`, or a
    # `shardc.jit_cache.JaxSource` that imports JAX's text when asked.
    source: Any = None
    options: Any = None  # the CompileOptions it was compiled with
    # The Python functions of its host callbacks (jax.debug.print, pure_callback), by index
    host_callbacks: tuple[Any, ...] = ()

    # ----- what shardc decided --------------------------------------------------------------

    @property
    def module(self) -> Module:
        """The global program: every value's sharding decided, every collective explicit."""
        return self.result.module

    @property
    def spmd(self) -> Module:
        """The per-device program."""
        return self.result.spmd

    @property
    def report(self) -> dict[str, Any]:
        """The cost report (docs/cost.md's JSON object as a dict)."""
        return self.result.report

    @property
    def warnings(self) -> list[str]:
        return self.result.warnings

    def as_text(self, fmt: str = "native") -> str:
        """The global program as native shardc text, `sdy` (StableHLO + sdy) or `spmd`."""
        from shardc import formats

        if fmt == "spmd":
            return formats.emit(self.spmd, "native")
        return formats.emit(self.module, fmt)

    def cost_text(self) -> str:
        """The report as text: collectives, bytes per device, peak memory."""
        from shardc.report import report_text

        return report_text(self.report)

    def explain(self, html: str | os.PathLike[str] | None = None) -> str:
        """Why each value has its sharding (text); with `html=PATH` also write the program
        drawn coloured by sharding, with its collectives, as a self-contained page."""
        from shardc.explain.html_page import to_html
        from shardc.explain.text import explain_text

        origins = self.result.context.data.get("origins")
        if html is not None:
            page = to_html(self.module, origins, title=f"shardc: {self.name}")
            with open(html, "w", encoding="utf-8") as f:
                f.write(page)
        return explain_text(self.module, origins)

    def explain_collectives(self, suggest: int = 0, lint: bool = True,
                            html: str | os.PathLike[str] | None = None) -> Any:
        """Why each collective is there (its two layouts and the decisions behind them, at the
        lines of the function), with up to `suggest` measured changes that lower the bytes
        moved and the lints: a `CollectivesReport` (`.text()`, `.to_json()`; docs/explain.md).
        With `html=PATH` also write the page with the collectives table."""
        from shardc.explain.collectives_report import collectives_report
        from shardc.explain.html_page import to_html
        from shardc.pipeline import CompileOptions

        if self.source is None:
            raise ShardcError(f"{self.name}: this Lowered keeps no source program to explain")
        options = self.options or CompileOptions()
        source = self.source if isinstance(self.source, Module) else self.source.module()
        report = collectives_report(source, options, suggest_n=suggest, lint=lint)
        if html is not None:
            page = to_html(report.base.module, report.base.context.data.get("origins"),
                           title=f"shardc: {self.name}", collectives=report)
            with open(html, "w", encoding="utf-8") as f:
                f.write(page)
        return report

    @property
    def in_shardings(self) -> tuple[Any, ...]:
        """A `NamedSharding` per argument leaf, as a tuple over the positional arguments."""
        jax = _jax()
        args_tree = jax.tree_util.tree_unflatten(
            self.signature.in_tree, self._flat_shardings()[0]
        )[0]
        return tuple(args_tree)

    @property
    def out_shardings(self) -> Any:
        """A `NamedSharding` per result leaf, in the result's pytree."""
        jax = _jax()
        return jax.tree_util.tree_unflatten(self.signature.out_tree, self._flat_shardings()[1])

    def _flat_shardings(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        if self.backend == "jax":
            program = self.program()
            ins, outs = program.in_shardings, program.out_shardings
        else:
            from shardc.jax_api import to_jax_shardings

            ins, outs = to_jax_shardings(self.module, self.mesh)
            func = self.module.main
            ins = tuple(_even(s, a.type.shape) for s, a in zip(ins, func.args))
            outs = tuple(_even(s, t.shape) for s, t in zip(outs, func.result_types))
        sig = self.signature
        return _key_shardings(ins, sig.in_keys), _key_shardings(outs, sig.out_keys)

    def program(self) -> Any:
        """The `JaxArrayProgram` that runs the per-device program (backend jax)."""
        if self._program is None:
            from shardc.executors.jax_arrays import JaxArrayProgram

            self._program = JaxArrayProgram(
                self.spmd, devices=list(self.mesh.devices.flat), mesh=self.mesh,
                donate=self.signature.donated, host_callbacks=self.host_callbacks,
            )
        return self._program

    # ----- the next stage -------------------------------------------------------------------

    def compile(self) -> Compiled:
        """Build the per-device program for the mesh's devices (XLA compiles it, backend jax)."""
        start = time.perf_counter()
        executable = None
        if self.backend == "jax":
            from shardc.jit_cache import compile_program

            executable = compile_program(self.program(), self.result)
        if self.result.cache is not None:
            self.result.cache.wait()  # (the entry written on a miss: jit_cache.py)
        timings = dict(self.timings, xla_compile=time.perf_counter() - start)
        return Compiled(self.name, self.result, self.signature, self.mesh, self.backend,
                        timings, self._program, self.source, self.options,
                        self.host_callbacks, executable)

    def __repr__(self) -> str:
        return f"<shardc.Lowered {self.name} backend={self.backend}>"


@dataclass
class Compiled(Lowered):
    """A `Lowered` function built for the mesh's devices; call it with the arguments it was
    lowered for."""

    executable: Any = None  # the jax.stages.Compiled of the per-device program (backend jax)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jax = _jax()
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        sig = self.signature
        if tree != sig.in_tree:
            raise ShardcError(
                f"{self.name} was compiled for arguments {sig.in_tree}, got {tree}"
            )
        keys = dict(sig.in_keys)
        for i, (x, want) in enumerate(zip(leaves, sig.leaves)):
            dtype = getattr(x, "dtype", None)
            if i in keys and dtype == keys[i]:
                leaves[i] = x = jax.random.key_data(x)
                dtype = x.dtype
            if dtype is None or tuple(np.shape(x)) != tuple(want.shape) or \
                    not isinstance(dtype, np.dtype) or dtype != np.dtype(want.dtype):
                got = array_text(np.shape(x), dtype) if dtype is not None else type(x).__name__
                raise ShardcError(
                    f"{self.name}: {self._leaf_path(args, kwargs, i)} is {got}, but it was "
                    f"compiled for {array_text(want.shape, keys.get(i, want.dtype))}"
                )
        return self.call_leaves(leaves)

    def _leaf_path(self, args: tuple[Any, ...], kwargs: dict[str, Any], index: int) -> str:
        names = ArgumentNames(self.signature.arg_names, None)
        return leaf_paths(_jax(), names, range(len(args)), args, kwargs)[index]

    def call_leaves(self, leaves: list[Any], place: bool = True) -> Any:
        """Run on the flattened argument leaves; the result in its pytree. `place=False`: the
        leaves are known to need no move (`needs_placing` said so for their signature)."""
        if self.backend == "numpy":
            outs = self.result.run([np.asarray(x) for x in leaves], backend="numpy",
                                   host_callbacks=self.host_callbacks)
        else:
            # The executable `compile` built (a `jax.stages.Compiled`, called through JAX's C++
            # fast path): calling the jitted program instead would trace and compile it again,
            # since JAX does not find an ahead-of-time compile in its call cache.
            outs = self.executable(*(self._program.place(leaves) if place else leaves))
        if self.signature.out_keys:
            from shardc.jit_keys import rewrap

            outs = rewrap(_jax(), list(outs), self.signature.out_keys)
        return self._unflatten(self.signature.out_tree, outs)

    def needs_placing(self, leaves: list[Any]) -> bool:
        """Whether any of these leaves must be moved or made global before a call (the answer
        holds for every call with the same signature)."""
        if self.backend == "numpy":
            return False
        return any(p is not x for p, x in zip(self._program.place(leaves, donate=False),
                                               leaves))

    def __post_init__(self) -> None:
        self._unflatten = _jax().tree_util.tree_unflatten

    def __repr__(self) -> str:
        return f"<shardc.Compiled {self.name} backend={self.backend}>"


def _even(sharding: Any, shape: tuple[int, ...]) -> Any:
    """`sharding` with the dims its axes do not divide replicated (JAX arrays tile evenly)."""
    if sharding is None:
        return None
    jax = _jax()
    sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
    entries = list(sharding.spec) + [None] * (len(shape) - len(sharding.spec))
    for d, entry in enumerate(entries):
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        count = int(np.prod([sizes[n] for n in names], dtype=np.int64))
        if names and shape[d] % count:
            entries[d] = None
    spec = jax.sharding.PartitionSpec(*entries)
    return jax.sharding.NamedSharding(sharding.mesh, spec, memory_kind=sharding.memory_kind)


def _key_shardings(shardings: tuple[Any, ...],
                   keys: tuple[tuple[int, Any], ...]) -> tuple[Any, ...]:
    """The shardings of key-data leaves as their keys' own (without the trailing key dims)."""
    if not keys:
        return shardings
    from shardc.jit_keys import key_rank

    jax = _jax()
    out = list(shardings)
    for i, dtype in keys:
        s = out[i]
        if s is not None:
            rank = len(s.spec) - key_rank(jax, dtype)
            spec = jax.sharding.PartitionSpec(*list(s.spec)[:max(rank, 0)])
            out[i] = jax.sharding.NamedSharding(s.mesh, spec, memory_kind=s.memory_kind)
    return tuple(out)


def _jax() -> Any:
    from shardc.jax_api import _jax as import_jax

    return import_jax()
