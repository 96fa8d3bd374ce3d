"""Side by side: a training step under `shardc.jit` and `jax.jit` on the same 8 CPU devices,
with the same shardings and donation, for a 5-step loop.

    run = side_by_side(step, state, batch, mesh, state_specs=..., batch_spec=P("dp"))
    run.max_error        # the largest leaf difference over the loop, relative to the leaf
    run.shardc_bytes     # collective bytes per device of shardc's compiled program (its HLO)
    run.xla_bytes        # ... of XLA's, for jax.jit with the same in_shardings
    run.programs         # shardc.jit's cache size after the loop

`step(state, batch) -> (state, loss)`; `state` is donated (argument 0). Both sides' bytes are
read the same way, from the compiled HLO text, with benchmarks/quality.py's parser (shardc's
report counts the same collectives: `report_bytes`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "benchmarks"))

from quality import parse_hlo_collectives  # noqa: E402

import shardc  # noqa: E402

REASON = "the ecosystem tests need flax, optax and equinox: pip install 'shardc[ecosystem]'"
STEPS = 5
# f32 leaves after each step: shardc's collectives sum partial products in another order than
# XLA's, so a leaf may differ by some ulps of its magnitude per reduction; Adam's division by
# sqrt(nu) turns a relative gradient error into the same relative update error, and 5 steps
# accumulate it. 2e-5 of a leaf's largest magnitude is ~170 ulps of f32: orders above what a
# correct program shows here (<= 2e-6), orders below what a wrong collective gives (>= 1e-2).
RTOL = 2e-5


@dataclass
class Run:
    max_error: float = 0.0  # max over steps and leaves of |shardc - jax| / max|jax|
    worst_leaf: str = ""
    shardc_bytes: int = 0
    report_bytes: int = 0
    xla_bytes: int = 0
    programs: int = 0
    leaves: int = 0
    deleted: bool = False  # the donated input state was deleted by shardc's first call
    losses: list[tuple[float, float]] = field(default_factory=list)
    auto_shard: dict[str, Any] | None = None  # the report's `auto_shard` object, if it ran


def require(*names: str) -> list[Any]:
    """The modules a test file needs, or the whole file skipped saying how to install them (or
    that it needs 8 devices)."""
    modules = [pytest.importorskip(name, reason=REASON) for name in names]
    import jax

    if len(jax.devices()) < 8:
        pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                    allow_module_level=True)
    return modules


def auto_mesh(names: tuple[str, str], shape: tuple[int, int] = (2, 4)) -> Any:
    """A mesh of the 8 devices with `Auto` axes: what `jax.jit` propagates over (with
    JAX's default `Explicit` axes it would insist on sharding annotations in the step)."""
    import jax

    return jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * 2)


def hlo_bytes(executable: Any, num_devices: int) -> int:
    return sum(c.bytes_per_device for c in parse_hlo_collectives(executable.as_text(),
                                                                 num_devices))


def _host(jax: Any, leaf: Any) -> np.ndarray:
    if jax.numpy.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    return np.asarray(leaf)


def _named(jax: Any, mesh: Any, specs: Any) -> Any:
    P = jax.sharding.PartitionSpec  # noqa: N806 - JAX's name
    return jax.tree_util.tree_map(lambda s: jax.sharding.NamedSharding(mesh, s), specs,
                                  is_leaf=lambda s: isinstance(s, P))


def side_by_side(step: Callable[..., Any], state: Any, batch: Any, mesh: Any, *,
                 state_specs: Any = None, batch_spec: Any = None, **shardc_jit: Any) -> Run:
    """Run `STEPS` steps of `step` under both jits; state placed by `state_specs` (None:
    unannotated numpy arrays on both sides). `shardc_jit`: more arguments of shardc.jit's
    (`auto_shard=True`)."""
    import jax

    annotated = state_specs is not None or batch_spec is not None
    in_specs = (state_specs, batch_spec) if annotated else None
    theirs = jax.jit(step, donate_argnums=0,
                     **({"in_shardings": _named(jax, mesh, in_specs)} if annotated else {}))
    ours = shardc.jit(step, mesh=mesh, donate_argnums=0,
                      **({"in_shardings": in_specs} if annotated else {}), **shardc_jit)

    def fresh() -> Any:  # each side donates its own copy
        copy = jax.tree_util.tree_map(_copy, state)
        return copy if state_specs is None else jax.device_put(copy,
                                                               _named(jax, mesh, state_specs))

    run = Run()
    mine, want = fresh(), fresh()
    with jax.set_mesh(mesh):  # as a JAX user runs a step with with_sharding_constraint(P)
        xla = theirs.lower(want, batch).compile()
    run.xla_bytes = hlo_bytes(xla, mesh.size)
    lowered = ours.lower(mine, batch)
    run.report_bytes = lowered.report["total_comm_bytes"]
    run.auto_shard = lowered.report.get("auto_shard")
    run.shardc_bytes = hlo_bytes(lowered.compile().executable, mesh.size)
    first = jax.tree_util.tree_leaves(mine)
    for _ in range(STEPS):
        mine, loss = ours(mine, batch)
        with jax.set_mesh(mesh):
            want, want_loss = theirs(want, batch)
        run.losses.append((float(loss), float(want_loss)))
        _compare(jax, run, (mine, loss), (want, want_loss))
    run.deleted = all(x.is_deleted() for x in first if isinstance(x, jax.Array))
    run.programs = ours.cache_size()
    return run


def _copy(x: Any) -> Any:
    """A copy of a state leaf (a typed key rebuilt from a copy of its data)."""
    import jax

    if jax.numpy.issubdtype(x.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(np.array(jax.random.key_data(x)), dtype=x.dtype)
    return np.array(x)


def _compare(jax: Any, run: Run, got: Any, want: Any) -> None:
    got_leaves = jax.tree_util.tree_flatten_with_path(got)[0]
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    run.leaves = len(got_leaves)
    for (path, a), b in zip(got_leaves, want_leaves):
        assert a.dtype == b.dtype and a.shape == b.shape, jax.tree_util.keystr(path)
        x, y = _host(jax, a), _host(jax, b)
        if not np.issubdtype(x.dtype, np.floating):
            assert np.array_equal(x, y), jax.tree_util.keystr(path)  # counts, keys: exact
            continue
        scale = float(np.max(np.abs(y))) if y.size else 0.0
        err = float(np.max(np.abs(x.astype(np.float64) - y))) / scale if scale else 0.0
        if err > run.max_error:
            run.max_error, run.worst_leaf = err, jax.tree_util.keystr(path)
