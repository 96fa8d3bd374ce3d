"""`shardc.jit`: a JAX function compiled by shardc and run on the mesh's devices.

    f = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), P(None, "tp"), P("tp")))
    y = f(x, w1, w2)               # == jax.jit(mlp)(x, w1, w2); y.sharding: shardc's decision
    lowered = f.lower(x, w1, w2)   # shardc.stages.Lowered: program, report, shardings
    compiled = lowered.compile()   # shardc.stages.Compiled: callable

On the first call for an input signature (the arguments' pytree, shapes, dtypes, the shardings
of committed `jax.Array`s, and the static arguments) JAX traces and lowers `f`
(`shardc.from_jax`), shardc decides every sharding and the cheapest collectives
(`shardc.compile`), and the per-device program becomes one jitted `shard_map` on the mesh's
devices (`JaxArrayProgram`); later calls with the same signature reuse it, as `jax.jit` does.

What differs from `jax.jit`: an argument without a sharding (None, a numpy array) is left to
shardc's propagation, which may shard it (the argument is then placed so); a committed
`jax.Array` in a sharding other than the decided one is moved (`jax.device_put`) rather than
rejected (with `auto_shard`, a committed array's own sharding is no annotation either).
Options for shardc's compiler travel in `options` (a `CompileOptions`); `auto_shard=True`
(with `memory_budget`) has shardc choose the shardings nobody gave.

Typed PRNG keys cross the boundary as their key data (jit_keys.py); donate_argnums/argnames
donate as `jax.jit` does (jit_arguments.py); shardings are checked and broadcast in
jit_specs.py; messages name leaves by pytree path (jit_paths.py; on a miss or an error only).
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shardc.ir.collector import long_lived
from shardc.ir.diagnostics import ShardcError
from shardc.jax_api import _jax
from shardc.jit_arguments import Donation, check_argnums, ints, leaf_key, scalar_array, strs
from shardc.jit_keys import key_data, rewrap, unwrap_results
from shardc.jit_mesh import auto_mesh, call_mesh, given_mesh, lower_on, mesh_context
from shardc.jit_paths import ArgumentNames, array_text, leaf_paths
from shardc.jit_specs import (
    broadcast,
    check_spec,
    committed_spec,
    is_spec_leaf,
    spec_key,
    to_specs,
)
from shardc.pipeline import CompileOptions
from shardc.stages import Compiled, Lowered, Signature

__all__ = ["Jitted", "ShardcWarning", "jit"]

BACKENDS = ("jax", "numpy")


class ShardcWarning(UserWarning):
    """What shardc's compiler warns of while `shardc.jit` compiles (the `shardc` command prints
    the same lines): e.g. an op without a sharding rule that computes on replicated operands."""


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    mesh: Any = None,
    in_shardings: Any = None,
    out_shardings: Any = None,
    backend: str = "jax",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    options: CompileOptions | None = None,
    auto_shard: bool = False,
    memory_budget: int | None = None,
    auto_shard_effort: int | None = None,
) -> Any:
    """Compile `fun` with shardc for `mesh`; a callable like `jax.jit(fun)`.

    `mesh`: a `jax.sharding.Mesh` (or an `AbstractMesh` with `backend="numpy"`); it may be
    left out when the shardings are `NamedSharding`s. `in_shardings`: a sharding per
    positional argument (a tuple, each entry a prefix of that argument's pytree) or one for
    all; each leaf a `PartitionSpec`, a `NamedSharding` or None (shardc decides).
    `out_shardings`: a prefix of the result's pytree, likewise. `backend`: "jax" (the mesh's
    devices; returns `jax.Array`s) or "numpy" (simulated devices; returns numpy arrays).
    `donate_argnums`/`donate_argnames`: arguments whose buffers the call may reuse for its
    results, as in `jax.jit` (the donated arrays are deleted). `auto_shard`: choose every
    sharding not given with the `auto-shard` pass, each device holding at most
    `memory_budget` bytes (docs/autoshard.md); `auto_shard_effort`: the solver's work per solve
    in ticks (deterministic; the pass's default when None). Without `fun`, a decorator.
    """
    if memory_budget is not None:
        if not auto_shard:
            raise ShardcError("memory_budget is the budget of auto_shard: pass auto_shard=True "
                              "too")
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) \
                or memory_budget < 1:
            raise ShardcError(f"memory_budget is a positive number of bytes per device, got "
                              f"{memory_budget!r}")
    if auto_shard_effort is not None and (
        not auto_shard or isinstance(auto_shard_effort, bool)
        or not isinstance(auto_shard_effort, int) or auto_shard_effort < 1
    ):
        raise ShardcError(f"auto_shard_effort is a positive number of solver ticks for "
                          f"auto_shard=True, got {auto_shard_effort!r}")
    if auto_shard:
        base = options or CompileOptions()
        options = dataclasses.replace(base, auto_shard=auto_shard, memory_budget=memory_budget,
                                      auto_shard_effort=auto_shard_effort)
    if fun is None:
        return functools.partial(
            jit, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
            backend=backend, static_argnums=static_argnums, static_argnames=static_argnames,
            donate_argnums=donate_argnums, donate_argnames=donate_argnames, options=options,
        )
    return Jitted(fun, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
                  backend=backend, static_argnums=static_argnums,
                  static_argnames=static_argnames, donate_argnums=donate_argnums,
                  donate_argnames=donate_argnames, options=options)


@dataclass(frozen=True)
class _Call:
    """One call's arguments as a cache miss (or `lower`) needs them."""

    leaves: list[Any]  # the dynamic leaves as the program takes them (keys as key data)
    key: Any  # the call signature: (pytree, statics, per leaf (shape, dtype, sharding))
    statics: list[tuple[str | int, Any]]
    positions: tuple[int, ...]  # the call position of each dynamic positional argument
    dyn: tuple[Any, ...]  # the dynamic positional arguments, as passed
    kwargs: dict[str, Any]  # the dynamic keyword arguments, as passed
    num_args: int  # how many positional arguments the call passed (statics included)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # the leaves' paths, once

    @property
    def tree(self) -> Any:
        return self.key[0]

    @property
    def in_keys(self) -> tuple[tuple[int, Any], ...]:
        """`(leaf index, key dtype)` of every typed PRNG key leaf."""
        return tuple((i, k[1]) for i, k in enumerate(self.key[2])
                     if not isinstance(k[1], np.dtype))


class Jitted:
    """What `shardc.jit` returns: call it, or `lower` it for one input signature."""

    def __init__(self, fun: Callable[..., Any], *, mesh: Any, in_shardings: Any,
                 out_shardings: Any, backend: str, static_argnums: int | Sequence[int],
                 static_argnames: str | Sequence[str], options: CompileOptions | None,
                 donate_argnums: int | Sequence[int] | None = None,
                 donate_argnames: str | Sequence[str] | None = None):
        if not callable(fun):
            raise ShardcError(f"shardc.jit takes a function, got {type(fun).__name__}")
        if backend not in BACKENDS:
            raise ShardcError(f"unknown backend '{backend}' (expected jax or numpy)")
        jax = _jax()
        self.jax = jax
        self.fun = fun
        self.name = getattr(fun, "__name__", "f")
        self.backend = backend
        self.options = options or CompileOptions()
        self.static_argnums = ints(static_argnums)
        self.static_argnames = strs(static_argnames)
        check_argnums(fun, self.name, "static", self.static_argnums, self.static_argnames)
        self.donation = Donation.resolve(fun, self.name, donate_argnums, donate_argnames,
                                         self.static_argnums, self.static_argnames)
        if self.donation and backend == "numpy":
            warnings.warn(f"shardc.jit({self.name}): donation has no effect on the numpy "
                          "backend (it computes on copies of numpy arrays)", ShardcWarning,
                          stacklevel=3)
        self.names = ArgumentNames.of(fun)
        self._shardings = (in_shardings, out_shardings)
        # Without a mesh given (or shardings naming one), each call's: its jax.set_mesh, else
        # its arguments' (jit_mesh.call_mesh); the first one binds it.
        self._from_call = (mesh := given_mesh(jax, mesh, in_shardings, out_shardings,
                                              backend)) is None
        self.mesh: Any = None
        if mesh is not None:
            self._bind(mesh)
        self._arrays = (jax.Array, np.ndarray, jax.ShapeDtypeStruct)
        # call signature -> (program, whether its arguments must be moved first)
        self._cache: dict[Any, tuple[Compiled, bool]] = {}
        # pytree, statics, donation, shapes and dtypes -> the programs compiled for them, each
        # with the argument shardings it was given and those it decided (_find)
        self._programs: dict[Any, list[tuple[tuple[Any, ...], tuple[Any, ...], Compiled]]] = {}
        functools.update_wrapper(self, fun)

    def _bind(self, mesh: Any) -> None:
        jax, (ins, outs) = self.jax, self._shardings
        self.mesh, self.trace_mesh = mesh, auto_mesh(jax, mesh)
        self.in_specs = to_specs(jax, ins, mesh, f"{self.name}: in_shardings")
        self.out_specs = to_specs(jax, outs, mesh, f"{self.name}: out_shardings")

    # ----- calling ------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, key = self._flatten(args, kwargs)
        if self._from_call:
            self._bind_call(leaves)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._miss(self._call(args, kwargs, leaves, key))
        compiled, place = hit
        return compiled.call_leaves(leaves, place)

    def _miss(self, call: _Call) -> tuple[Compiled, bool]:
        """The program for a new call signature: one compiled before for the same shapes and
        shardings (an argument placed otherwise is moved), else a new one."""
        specs = self._leaf_specs(call)
        donated = self._donated(call)
        base = (call.key[0], call.key[1], donated, tuple(k[:2] for k in call.key[2]))
        given = tuple(spec_key(self.jax, s) for s in specs)
        compiled = self._find(base, given)
        if compiled is None:
            # The collector paused while the compile builds its long-lived IR (ir/collector.py):
            # its collections were ~10% of the 8-layer Llama step's first call.
            with long_lived():
                compiled = self._lower(call, specs, donated, defer_store=True).compile()
            self._programs.setdefault(base, []).append(
                (given, self._decided(compiled), compiled))
        self._cache[call.key] = hit = (compiled, compiled.needs_placing(call.leaves))
        return hit

    def _find(self, base: Any, given: tuple[Any, ...]) -> Compiled | None:
        """A program compiled for these arguments: for each leaf, given the same sharding,
        or given none and deciding the one this call's committed array has. (The next call of
        a loop passes the program's own committed results: it is served by the same program,
        as `jax.jit` compiles once.)"""
        for was_given, decided, compiled in self._programs.get(base, ()):
            if all(g == w or (w is None and g == d)
                   for g, w, d in zip(given, was_given, decided)):
                return compiled
        return None

    def _decided(self, compiled: Compiled) -> tuple[Any, ...]:
        """The argument shardings a program decided, as `spec_key`s; "elsewhere" for one not
        on the jit's mesh (sub-axes), which no committed array matches."""
        if self.backend != "jax":
            return (None,) * len(compiled.signature.leaves)
        return tuple(spec_key(self.jax, s.spec) if s.mesh is self.mesh else "elsewhere"
                     for s in compiled.program().in_shardings)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace, import and compile with shardc for these arguments (arrays or
        `jax.ShapeDtypeStruct`s)."""
        leaves, key = self._flatten(args, kwargs)
        if self._from_call:
            self._bind_call(leaves)
        call = self._call(args, kwargs, leaves, key)
        return self._lower(call, self._leaf_specs(call), self._donated(call))

    def _bind_call(self, leaves: list[Any]) -> None:
        mesh = call_mesh(self.jax, self.name, self.mesh, leaves)
        if mesh is not self.mesh:
            self._bind(mesh)

    def cache_size(self) -> int:
        """How many programs shardc has compiled (one per distinct argument shapes, dtypes
        and shardings, as `jax.jit` compiles one per such signature)."""
        return len(self.programs())

    def programs(self) -> list[Compiled]:
        """The programs shardc has compiled for this function, in the order it did."""
        return [c for programs in self._programs.values() for _, _, c in programs]

    # ----- signatures -----------------------------------------------------------------------

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[
            list[tuple[str | int, Any]], list[Any], list[int], dict[str, Any]]:
        """`(statics, dynamic positional arguments, their positions, dynamic kwargs)`."""
        statics: list[tuple[str | int, Any]] = []
        dyn: list[Any] = []
        positions: list[int] = []
        for i, a in enumerate(args):
            if i in self.static_argnums or i - len(args) in self.static_argnums:
                statics.append((i, a))
            else:
                dyn.append(a)
                positions.append(i)
        if self.static_argnames:
            kwargs = dict(kwargs)
            for name in self.static_argnames:
                if name in kwargs:
                    statics.append((name, kwargs.pop(name)))
        return statics, dyn, positions, kwargs

    def _flatten(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
        """`(leaves as the program takes them, signature key)`: the hot path of every call."""
        jax = self.jax
        statics, dyn, _, kwargs = self._split(args, kwargs)
        flat, tree = jax.tree_util.tree_flatten((tuple(dyn), kwargs))
        leaves = []
        keys = False
        for x in flat:
            if not isinstance(x, self._arrays):
                x = scalar_array(jax, x)
                if x is None:
                    raise self._leaf_error(args, kwargs, len(leaves))
            elif not isinstance(x.dtype, np.dtype):
                keys = True  # a typed PRNG key (or another extended dtype)
            leaves.append(x)
        try:
            key = (tree, tuple(statics), tuple(leaf_key(jax, x) for x in leaves))
            hash(key)
        except (TypeError, AttributeError) as e:
            tracer = next((i for i, x in enumerate(leaves) if isinstance(x, jax.core.Tracer)),
                          None)
            if tracer is not None:
                raise ShardcError(
                    f"{self.name}: {self._leaf_path(args, kwargs, tracer)} is a tracer: a "
                    "shardc.jit function cannot run under a JAX transformation (jax.grad, "
                    "jax.vmap, or a jax.jit whose function calls it); apply the transformation "
                    "inside the function shardc.jit compiles, e.g. shardc.jit(step) with "
                    "jax.grad in step") from None
            raise ShardcError(
                f"{self.name}: static arguments must be hashable ({e}); pass arrays as "
                "ordinary arguments"
            ) from None
        if keys:  # typed keys travel as their key data
            def where(i: int) -> str:
                return f"{self.name}: {self._leaf_path(args, kwargs, i)}"

            leaves = [x if isinstance(x.dtype, np.dtype) else
                      key_data(jax, x, functools.partial(where, i)) for i, x in enumerate(leaves)]
        return leaves, key

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any],
              key: Any) -> _Call:
        statics, dyn, positions, kwargs = self._split(args, kwargs)
        return _Call(leaves, key, statics, tuple(positions), tuple(dyn), kwargs, len(args))

    def _paths(self, call: _Call) -> list[str]:
        if "paths" not in call.memo:
            call.memo["paths"] = leaf_paths(self.jax, self.names, call.positions, call.dyn,
                                            call.kwargs)
        return call.memo["paths"]

    def _leaf_path(self, args: tuple[Any, ...], kwargs: dict[str, Any], index: int) -> str:
        _, dyn, positions, kwargs = self._split(args, kwargs)
        return leaf_paths(self.jax, self.names, positions, dyn, kwargs)[index]

    def _leaf_error(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                    index: int) -> ShardcError:
        """A leaf that is no array (nor a Python scalar), named by its path."""
        _, dyn, positions, kw = self._split(args, kwargs)
        flat = self.jax.tree_util.tree_leaves((tuple(dyn), kw))
        path = leaf_paths(self.jax, self.names, positions, dyn, kw)[index]
        return ShardcError(
            f"{self.name}: {path} is a {type(flat[index]).__name__}, not an array; pass "
            "arrays, or mark the argument static (static_argnums / static_argnames)"
        )

    def _donated(self, call: _Call) -> tuple[bool, ...]:
        if self.backend != "jax":
            return (False,) * len(call.leaves)
        return self.donation.mask(self.jax, call.num_args, call.positions, call.dyn,
                                  call.kwargs)

    def _lower(self, call: _Call, specs: tuple[Any, ...], donated: tuple[bool, ...],
               defer_store: bool = False) -> Lowered:
        """`defer_store`: the cache entry is written once `compile` traced (jit_cache.py)."""
        jax = self.jax
        structs = tuple(jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in call.leaves)
        in_keys = call.in_keys
        tree, statics = call.tree, call.statics
        out_tree: list[Any] = []
        out_keys: list[tuple[tuple[int, Any], ...]] = []

        def flat_fun(*flat: Any) -> Any:
            dyn, kwargs = jax.tree_util.tree_unflatten(tree, rewrap(jax, list(flat), in_keys))
            call_args = list(dyn)
            for where, value in sorted((s for s in statics if isinstance(s[0], int)),
                                       key=lambda s: s[0]):
                call_args.insert(where, value)
            kwargs = dict(kwargs, **{k: v for k, v in statics if isinstance(k, str)})
            out = self.fun(*call_args, **kwargs)
            leaves, treedef = jax.tree_util.tree_flatten(out)
            leaves, keys = unwrap_results(jax, leaves)  # typed keys out as their key data
            out_tree.append(treedef)
            out_keys.append(keys)
            return jax.tree_util.tree_unflatten(treedef, leaves)

        flat_fun.__name__ = self.name
        from shardc.jax_api import lower_to_text
        from shardc.jit_cache import JaxSource, compile_text

        callbacks: list[Any] = []

        def lower(mesh: Any) -> str:
            # Under the mesh, as `jax.jit` under `jax.set_mesh`: `with_sharding_constraint`
            # in `fun` may then name a bare PartitionSpec.
            out_tree.clear()
            out_keys.clear()
            callbacks.clear()
            with mesh_context(jax, mesh):
                return lower_to_text(flat_fun, *structs, mesh=mesh, in_shardings=specs,
                                     out_shardings=self.out_specs, host_callbacks=callbacks)

        start = time.perf_counter()
        try:
            text = lower_on(jax, self.mesh, self.trace_mesh, lower)
        except ShardcError:
            raise
        except Exception as e:
            if not out_tree:
                raise  # the user's function itself failed: its own error, unchanged
            raise ShardcError(f"{self.name}: JAX could not lower it with these shardings: "
                              f"{type(e).__name__}: {e}") from None
        lowered = time.perf_counter() - start
        # Import and compile; with options.cache_dir, through the persistent cache.
        # The arguments are named as the user's pytree paths (JAX's names are the flat ones,
        # `flat[3]`): explanations then say `params['w1']`.
        source = JaxSource(text, self.name, dict(self.mesh.shape), tuple(self._paths(call)))
        options = self.options
        if options.verify_each is None:  # (the IR verified once, after the pipeline: pipeline.py)
            options = dataclasses.replace(options, verify_each=False)
        if callbacks and options.cache_dir is not None:
            # Host callbacks are this process's Python functions: no entry can hold them.
            options = dataclasses.replace(options, cache_dir=None)
        if options.auto_shard and any(donated):
            # A donated argument is the state a loop carries: XLA reuses its buffer only for a
            # result in the same layout, and the next call passes that result back. So
            # auto-shard returns carried state as it takes it and counts donated buffers once.
            options = dataclasses.replace(
                options, auto_shard_carry=True,
                donated_args=options.donated_args if options.donated_args is not None
                else tuple(i for i, d in enumerate(donated) if d))
        result, timings = compile_text(source, options, defer_store)
        timings["jax_lower_import"] = lowered + timings.pop("import")
        for line in result.warnings:  # e.g. an op without a rule computing replicated
            warnings.warn(f"shardc.jit({self.name}): {line}", ShardcWarning, stacklevel=4)
        names = tuple(self.names.positional(p) for p in call.positions)
        signature = Signature(call.tree, len(call.dyn), out_tree[0], structs, in_keys=in_keys,
                              out_keys=out_keys[0], arg_names=names, donated=donated)
        return Lowered(self.name, result, signature, self.mesh, self.backend, timings,
                       source=source, options=options, host_callbacks=tuple(callbacks))

    def _leaf_specs(self, call: _Call) -> tuple[Any, ...]:
        """A PartitionSpec (or None) per argument leaf: `in_shardings` broadcast over the
        positional arguments, else (without auto_shard) a committed array's own sharding on the
        mesh. Checked against the leaf's own shape (a key's, not its key data's)."""
        jax = self.jax
        given = self.in_specs
        num_args = len(call.dyn)
        if given is None or is_spec_leaf(jax, given):
            per_arg = [(given, "in_shardings")] * num_args
        elif isinstance(given, (tuple, list)):
            if len(given) != num_args:
                raise ShardcError(
                    f"{self.name}: in_shardings has {len(given)} entries but the call passes "
                    f"{num_args} positional (non-static) arguments"
                )
            per_arg = [(g, f"in_shardings[{i}]") for i, g in enumerate(given)]
        else:
            raise ShardcError(f"{self.name}: in_shardings must be a tuple with an entry per "
                              f"positional argument, or one sharding for all")
        specs: list[tuple[Any, str | None]] = []
        for arg, at, (spec, name) in zip(call.dyn, call.positions, per_arg):
            specs.extend(broadcast(jax, spec, arg, name, self.names.positional(at), self.name))
        specs.extend([(None, None)] * (len(call.leaves) - len(specs)))  # kwargs: shardc's
        out = []
        # With auto_shard a committed array's sharding is where it happens to be (an array
        # made under a mesh is replicated on it), not a decision: auto-shard chooses every
        # sharding `in_shardings` leaves open, and the call moves the array to its choice.
        committed = not self.options.auto_shard
        for i, (x, (spec, given_at)) in enumerate(zip(call.leaves, specs)):
            shape = call.key[2][i][0]
            if spec is None and committed:
                spec = committed_spec(jax, x, self.mesh, len(shape))
                given_at = "its committed sharding"
            if spec is not None and len(spec):
                leaf = f"{self._paths(call)[i]} ({array_text(shape, call.key[2][i][1])})"
                check_spec(spec, shape, self.mesh, leaf, f"{self.name}: {given_at}")
            out.append(spec)
        return tuple(out)

    def __repr__(self) -> str:
        return f"<shardc.jit {self.name} backend={self.backend}>"
