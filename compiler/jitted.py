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
rejected. Options for shardc's compiler travel in `options` (a `CompileOptions`);
`auto_shard=True` (with `memory_budget`) has shardc choose the shardings nobody gave.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.ir.diagnostics import ShardcError
from shardc.jax_api import _jax
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
    options: CompileOptions | None = None,
    auto_shard: bool = False,
    memory_budget: int | None = None,
) -> Any:
    """Compile `fun` with shardc for `mesh`; a callable like `jax.jit(fun)`.

    `mesh`: a `jax.sharding.Mesh` (or an `AbstractMesh` with `backend="numpy"`); it may be
    left out when the shardings are `NamedSharding`s. `in_shardings`: a sharding per
    positional argument (a tuple, each entry a prefix of that argument's pytree) or one for
    all; each leaf a `PartitionSpec`, a `NamedSharding` or None (shardc decides).
    `out_shardings`: a prefix of the result's pytree, likewise. `backend`: "jax" (the mesh's
    devices; returns `jax.Array`s) or "numpy" (simulated devices; returns numpy arrays).
    `auto_shard`: choose every sharding not given with the `auto-shard` pass, each device
    holding at most `memory_budget` bytes (docs/autoshard.md). Without `fun`, a decorator.
    """
    if memory_budget is not None:
        if not auto_shard:
            raise ShardcError("memory_budget is the budget of auto_shard: pass auto_shard=True "
                              "too")
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) \
                or memory_budget < 1:
            raise ShardcError(f"memory_budget is a positive number of bytes per device, got "
                              f"{memory_budget!r}")
    if auto_shard:
        base = options or CompileOptions()
        options = dataclasses.replace(base, auto_shard=auto_shard, memory_budget=memory_budget)
    if fun is None:
        return functools.partial(
            jit, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
            backend=backend, static_argnums=static_argnums, static_argnames=static_argnames,
            options=options,
        )
    return Jitted(fun, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
                  backend=backend, static_argnums=static_argnums,
                  static_argnames=static_argnames, options=options)


class Jitted:
    """What `shardc.jit` returns: call it, or `lower` it for one input signature."""

    def __init__(self, fun: Callable[..., Any], *, mesh: Any, in_shardings: Any,
                 out_shardings: Any, backend: str, static_argnums: int | Sequence[int],
                 static_argnames: str | Sequence[str], options: CompileOptions | None):
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
        self.static_argnums = _ints(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else \
            tuple(static_argnames)
        _check_statics(fun, self.name, self.static_argnums, self.static_argnames)
        self.mesh = _mesh_of(jax, mesh, in_shardings, out_shardings, backend)
        self.trace_mesh = _auto_mesh(jax, self.mesh)
        self.in_specs = _to_specs(jax, in_shardings, self.mesh, "in_shardings")
        self.out_specs = _to_specs(jax, out_shardings, self.mesh, "out_shardings")
        # call signature -> (program, whether its arguments must be moved first)
        self._cache: dict[Any, tuple[Compiled, bool]] = {}
        self._programs: dict[Any, Compiled] = {}  # shapes, dtypes, annotations -> program
        functools.update_wrapper(self, fun)

    # ----- calling ------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, key, num_args, statics = self._flatten(args, kwargs)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._miss(leaves, key, num_args, statics)
        compiled, place = hit
        return compiled.call_leaves(leaves, place)

    def _miss(self, leaves: list[Any], key: Any, num_args: int,
              statics: list[tuple[str | int, Any]]) -> tuple[Compiled, bool]:
        """The program for a new call signature: one compiled before for the same shapes and
        shardings (an argument placed otherwise is moved), else a new one."""
        specs = self._leaf_specs(leaves, key[0], num_args)
        program_key = (key[0], key[1], tuple(
            (np.shape(x), np.dtype(x.dtype), spec) for x, spec in zip(leaves, specs)
        ))
        compiled = self._programs.get(program_key)
        if compiled is None:
            compiled = self._lower(leaves, key[0], num_args, statics, specs).compile()
            self._programs[program_key] = compiled
        self._cache[key] = hit = (compiled, compiled.needs_placing(leaves))
        return hit

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace, import and compile with shardc for these arguments (arrays or
        `jax.ShapeDtypeStruct`s)."""
        leaves, key, num_args, statics = self._flatten(args, kwargs)
        specs = self._leaf_specs(leaves, key[0], num_args)
        return self._lower(leaves, key[0], num_args, statics, specs)

    def cache_size(self) -> int:
        """How many programs shardc has compiled (one per distinct argument shapes, dtypes
        and shardings, as `jax.jit` compiles one per such signature)."""
        return len(self._programs)

    # ----- signatures -----------------------------------------------------------------------

    def _flatten(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[list[Any], Any, int, list[tuple[str | int, Any]]]:
        """`(leaves, signature key, number of positional dynamic arguments, statics)`."""
        statics: list[tuple[str | int, Any]] = []
        dyn: list[Any] = []
        for i, a in enumerate(args):
            if i in self.static_argnums or i - len(args) in self.static_argnums:
                statics.append((i, a))
            else:
                dyn.append(a)
        if self.static_argnames:
            kwargs = dict(kwargs)
            for name in self.static_argnames:
                if name in kwargs:
                    statics.append((name, kwargs.pop(name)))
        leaves, tree = self.jax.tree_util.tree_flatten((tuple(dyn), kwargs))
        leaves = [_as_array(self.jax, x, i) for i, x in enumerate(leaves)]
        try:
            key = (tree, tuple(statics), tuple(_leaf_key(self.jax, x) for x in leaves))
            hash(key)
        except TypeError as e:
            raise ShardcError(
                f"{self.name}: static arguments must be hashable ({e}); pass arrays as "
                "ordinary arguments"
            ) from None
        return leaves, key, len(dyn), statics

    def _lower(self, leaves: list[Any], tree: Any, num_args: int,
               statics: list[tuple[str | int, Any]], specs: tuple[Any, ...]) -> Lowered:
        jax = self.jax
        structs = tuple(jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves)
        out_tree: list[Any] = []

        def flat_fun(*flat: Any) -> Any:
            dyn, kwargs = jax.tree_util.tree_unflatten(tree, flat)
            call_args = list(dyn)
            for where, value in sorted((s for s in statics if isinstance(s[0], int)),
                                       key=lambda s: s[0]):
                call_args.insert(where, value)
            kwargs = dict(kwargs, **{k: v for k, v in statics if isinstance(k, str)})
            out = self.fun(*call_args, **kwargs)
            out_tree.append(jax.tree_util.tree_structure(out))
            return out

        flat_fun.__name__ = self.name
        from shardc.jax_api import lower_to_text
        from shardc.jit_cache import JaxSource, compile_text

        start = time.perf_counter()
        try:
            # Under the mesh, as `jax.jit` under `jax.set_mesh`: `with_sharding_constraint`
            # in `fun` may then name a bare PartitionSpec.
            with _mesh_context(jax, self.trace_mesh):
                text = lower_to_text(flat_fun, *structs, mesh=self.trace_mesh,
                                     in_shardings=specs, out_shardings=self.out_specs)
        except ShardcError:
            raise
        except Exception as e:
            if not out_tree:
                raise  # the user's function itself failed: its own error, unchanged
            raise ShardcError(f"{self.name}: JAX could not lower it with these shardings: "
                              f"{type(e).__name__}: {e}") from None
        lowered = time.perf_counter() - start
        # Import and compile; with options.cache_dir, through the persistent cache.
        result, timings = compile_text(text, self.name, dict(self.mesh.shape), self.options)
        timings["jax_lower_import"] = lowered + timings.pop("import")
        for line in result.warnings:  # e.g. an op without a rule computing replicated
            warnings.warn(f"shardc.jit({self.name}): {line}", ShardcWarning, stacklevel=4)
        signature = Signature(tree, num_args, out_tree[0], structs)
        return Lowered(self.name, result, signature, self.mesh, self.backend, timings,
                       source=JaxSource(text, self.name, dict(self.mesh.shape)),
                       options=self.options)

    def _leaf_specs(self, leaves: list[Any], tree: Any, num_args: int) -> tuple[Any, ...]:
        """A PartitionSpec (or None) per argument leaf: `in_shardings` broadcast over the
        positional arguments, else a committed array's own sharding on the mesh."""
        jax = self.jax
        dyn, kwargs = jax.tree_util.tree_unflatten(tree, leaves)
        given = self.in_specs
        if given is None or _is_spec_leaf(jax, given):
            per_arg = [given] * num_args
        elif isinstance(given, (tuple, list)):
            if len(given) != num_args:
                raise ShardcError(
                    f"{self.name}: in_shardings has {len(given)} entries but the call passes "
                    f"{num_args} positional (non-static) arguments"
                )
            per_arg = list(given)
        else:
            raise ShardcError(f"{self.name}: in_shardings must be a tuple with an entry per "
                              f"positional argument, or one sharding for all")
        specs: list[Any] = []
        for i, (arg, spec) in enumerate(zip(dyn, per_arg)):
            try:
                specs.extend(_broadcast(jax, spec, arg))
            except ValueError as e:
                raise ShardcError(f"{self.name}: in_shardings[{i}] does not match argument "
                                  f"{i}'s structure: {e}") from None
        specs.extend([None] * len(jax.tree_util.tree_leaves(kwargs)))
        out = []
        for i, (x, spec) in enumerate(zip(leaves, specs)):
            if spec is None:
                spec = _committed_spec(jax, x, self.mesh)
            if spec is not None:
                _check_spec(spec, np.shape(x), self.mesh, f"{self.name}: argument leaf {i}")
            out.append(spec)
        return tuple(out)

    def __repr__(self) -> str:
        return f"<shardc.jit {self.name} backend={self.backend}>"


# ----- meshes and shardings ---------------------------------------------------------------------


def _mesh_of(jax: Any, mesh: Any, ins: Any, outs: Any, backend: str) -> Any:
    """The mesh given, or the one every NamedSharding in `ins`/`outs` is on."""
    Mesh, AbstractMesh = jax.sharding.Mesh, jax.sharding.AbstractMesh  # noqa: N806
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise ShardcError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")
    if mesh is None:
        named = [s for s in jax.tree_util.tree_leaves((ins, outs), is_leaf=_is_leaf(jax))
                 if isinstance(s, jax.sharding.NamedSharding)]
        if not named:
            raise ShardcError("shardc.jit needs a mesh: pass mesh=jax.sharding.Mesh(...), or "
                              "NamedShardings as in_shardings/out_shardings")
        mesh = named[0].mesh
    if isinstance(mesh, AbstractMesh) and backend == "jax":
        raise ShardcError("an AbstractMesh has no devices to run on: pass a jax.sharding.Mesh, "
                          "or backend='numpy' to run on simulated devices")
    return mesh


def _check_statics(fun: Callable[..., Any], name: str, argnums: tuple[int, ...],
                   argnames: tuple[str, ...]) -> None:
    """Static argument numbers and names that `fun`'s signature has (as `jax.jit` checks)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return  # no signature to check against (a builtin)
    kinds = inspect.Parameter
    if any(p.kind is kinds.VAR_KEYWORD for p in params):
        argnames = ()
    positional = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY,
                                                  kinds.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind is kinds.VAR_POSITIONAL for p in params):
        bad = [i for i in argnums if not -len(positional) <= i < len(positional)]
        if bad:
            raise ShardcError(f"{name}: static_argnums {bad} out of range: it takes "
                              f"{len(positional)} positional arguments")
    unknown = [n for n in argnames if n not in {p.name for p in params}]
    if unknown:
        raise ShardcError(f"{name}: static_argnames {unknown} are not parameters of it")


def _mesh_context(jax: Any, mesh: Any) -> Any:
    if isinstance(mesh, jax.sharding.AbstractMesh):
        return jax.sharding.use_abstract_mesh(mesh)
    return jax.set_mesh(mesh)


def _auto_mesh(jax: Any, mesh: Any) -> Any:
    """`mesh` with every axis `Auto`: shardc's propagation decides what JAX leaves open."""
    auto = (jax.sharding.AxisType.Auto,) * len(mesh.axis_names)
    if isinstance(mesh, jax.sharding.AbstractMesh):
        return jax.sharding.AbstractMesh(mesh.axis_sizes, mesh.axis_names, axis_types=auto)
    return jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=auto)


def _same_mesh(a: Any, b: Any) -> bool:
    if tuple(a.axis_names) != tuple(b.axis_names) or tuple(a.axis_sizes) != tuple(b.axis_sizes):
        return False
    da, db = getattr(a, "devices", None), getattr(b, "devices", None)
    if isinstance(da, np.ndarray) and isinstance(db, np.ndarray):
        return [d.id for d in da.flat] == [d.id for d in db.flat]
    return True


def _is_leaf(jax: Any) -> Callable[[Any], bool]:
    return lambda x: x is None or _is_spec_leaf(jax, x)


def _is_spec_leaf(jax: Any, x: Any) -> bool:
    return isinstance(x, (jax.sharding.PartitionSpec, jax.sharding.Sharding))


def _to_specs(jax: Any, shardings: Any, mesh: Any, what: str) -> Any:
    """The pytree `shardings` with every NamedSharding replaced by its PartitionSpec (after
    checking it is on `mesh`)."""

    def spec(leaf: Any) -> Any:
        if leaf is None:
            return leaf
        if isinstance(leaf, jax.sharding.PartitionSpec):
            _check_axes(leaf, mesh, what)
            return leaf
        if isinstance(leaf, jax.sharding.NamedSharding):
            if not _same_mesh(leaf.mesh, mesh):
                raise ShardcError(f"{what}: a NamedSharding is on mesh {leaf.mesh}, not on the "
                                  f"mesh given ({mesh})")
            return leaf.spec
        raise ShardcError(f"{what}: {type(leaf).__name__} is not supported; use "
                          "PartitionSpec or NamedSharding")

    return jax.tree_util.tree_map(spec, shardings, is_leaf=_is_leaf(jax))


def _broadcast(jax: Any, prefix: Any, tree: Any) -> list[Any]:
    """The leaves of `prefix` (a pytree prefix of `tree`) repeated over `tree`'s leaves."""
    if prefix is None or _is_spec_leaf(jax, prefix):
        return [prefix] * len(jax.tree_util.tree_leaves(tree))
    out: list[Any] = []
    jax.tree_util.tree_map(
        lambda p, sub: out.extend([p] * len(jax.tree_util.tree_leaves(sub))),
        prefix, tree, is_leaf=_is_leaf(jax),
    )
    return out


def _committed_spec(jax: Any, x: Any, mesh: Any) -> Any:
    """The PartitionSpec of a committed `jax.Array` (or a `ShapeDtypeStruct` with a
    sharding) when it is sharded on `mesh`, else None."""
    sharding = getattr(x, "sharding", None)
    placed = x.committed if isinstance(x, jax.Array) else isinstance(x, jax.ShapeDtypeStruct)
    if (placed and isinstance(sharding, jax.sharding.NamedSharding)
            and _same_mesh(sharding.mesh, mesh)):
        return sharding.spec
    return None


def _spec_axes(spec: Any) -> list[tuple[str, ...]]:
    """The axis names of each dim of a PartitionSpec (() for None and P.UNCONSTRAINED)."""
    return [(e,) if isinstance(e, str) else tuple(e) if isinstance(e, (tuple, list)) else ()
            for e in spec]


def _check_axes(spec: Any, mesh: Any, where: str) -> None:
    """Every axis `spec` names is an axis of `mesh`, and none is named twice."""
    names = [n for dim in _spec_axes(spec) for n in dim]
    unknown = [n for n in names if n not in mesh.axis_names]
    if unknown:
        raise ShardcError(f"{where}: sharding {spec} names axes {unknown} that the mesh "
                          f"does not have (axes: {list(mesh.axis_names)})")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ShardcError(f"{where}: sharding {spec} names axes {twice} more than once; a "
                          "mesh axis shards at most one dim")


def _check_spec(spec: Any, shape: tuple[int, ...], mesh: Any, where: str) -> None:
    if len(spec) > len(shape):
        raise ShardcError(f"{where} has rank {len(shape)}, but its sharding {spec} names "
                          f"{len(spec)} dims")
    _check_axes(spec, mesh, where)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for d, names in enumerate(_spec_axes(spec)):
        if not names:
            continue
        count = int(np.prod([sizes[n] for n in names], dtype=np.int64))
        if shape[d] % count:
            raise ShardcError(f"{where}: dim {d} of size {shape[d]} does not split evenly over "
                              f"{names} ({count} devices), as JAX requires of an argument")


# ----- argument leaves --------------------------------------------------------------------------


def _as_array(jax: Any, x: Any, index: int) -> Any:
    if isinstance(x, (jax.Array, np.ndarray, jax.ShapeDtypeStruct)):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
            raise ShardcError(
                f"argument leaf {index} has dtype {x.dtype}, which shardc cannot import; pass "
                "jax.random.key_data(key) and rebuild the key inside with "
                "jax.random.wrap_key_data"
            )
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        value = np.asarray(x)
        return value.astype(jax.dtypes.canonicalize_dtype(value.dtype))
    raise ShardcError(
        f"argument leaf {index} is a {type(x).__name__}, not an array; pass arrays, or mark "
        "the argument static (static_argnums / static_argnames)"
    )


def _leaf_key(jax: Any, x: Any) -> tuple[Any, ...]:
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    sharding = getattr(x, "sharding", None)
    if isinstance(x, jax.Array) and not x.committed:
        sharding = None
    return (x.shape, x.dtype, sharding)


def _ints(value: int | Sequence[int]) -> tuple[int, ...]:
    return (value,) if isinstance(value, int) else tuple(value)
