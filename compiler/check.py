"""`shardc run --check`: is each output of a sharded run the program's value?

    expected = expectations(module, inputs, backend="jax")   # the unsharded runs, once
    verdicts = [judge(got, e) for got, e in zip(outputs, expected)]

A sharded program adds its partial sums in another order than the unsharded one, so it cannot
be asked to reproduce the unsharded run's rounding; and a deep f32 program (a training step's
gradients) may be off its mathematical value by far more than any fixed tolerance. So each
float output is measured against a reference more exact than the program, and allowed what the
unsharded program itself misses by, on the same backend and inputs:

    max |got - r64|  <=  C * e_u  +  rtol(dtype) * max |r64|          (C = 8)

- `r64`: the reference interpreter on the program promoted to float64 (executors/promote.py:
  every f16/bf16/f32 value widened, inputs and constants exactly). A program with an op that
  cannot be widened (a float bitcast, random floats), and an f64 program, use the reference in
  the program's own precision.
- `e_u`: the largest of the unsharded runs' errors against `r64`: the reference interpreter in
  the program's precision (numpy's unsharded run), and with `--backend jax` the global program
  under `jax.jit` on one device (XLA's kernels, the same ops as the sharded run's).
- `rtol(dtype)`: 1e-5 for f32, 2e-2 for bf16/f16, 1e-12 for f64 (`default_rtol`). Since
  |got - r64| <= |got - r32| + e_u, every run the fixed tolerance against r32 passed passes here.

Elements that are NaN or inf in the reference are compared exactly (NaN with NaN) where every
unsharded run agrees with it; elements where an unsharded run is NaN/inf but the f64 reference
is finite (the program overflows in its own precision) are not compared. An output with no
finite element to compare is reported "not checked": it says nothing about the collectives.
Integer and bool outputs must equal an unsharded run exactly. Explicit `--rtol`/`--atol`
replace the bound by `atol + rtol * max|want|` against the reference in the program's precision.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.executors.promote import NotPromotable, promote_floats, widen
from shardc.executors.reference import run_reference
from shardc.ir.core import Module
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "BASELINE_FACTOR", "CheckOptions", "Expected", "Verdict", "default_rtol", "expect",
    "expectations", "judge",
]

# How many times the unsharded run's own error a sharded output may miss by. On a correct
# 6-layer GPT step the sharded error is up to ~2.4 times the unsharded one where that error
# dominates the bound (benchmarks/check.py, docs/benchmarks.md).
BASELINE_FACTOR = 8.0


@dataclass(frozen=True)
class CheckOptions:
    """`--rtol`/`--atol`: None for the derived bound (the default)."""

    rtol: float | None = None
    atol: float | None = None

    @property
    def fixed(self) -> bool:
        return self.rtol is not None or self.atol is not None


@dataclass(frozen=True)
class Expected:
    """What one output is checked against: `want` on the elements of `compare` (None: all),
    within `bound` where `want` is finite, exactly where it is NaN/inf. `others`: the unsharded
    runs an integer output may equal instead. `skipped`: elements left out (NaN/inf in an
    unsharded run only: the program overflows in its own precision)."""

    want: np.ndarray
    bound: float
    baseline: float  # e_u: the unsharded runs' largest error (0 with fixed tolerances)
    scale: float  # max |want| over the compared finite elements
    floor: float  # rtol of the bound (relative to `scale`)
    compare: np.ndarray | None
    finite: int  # finite elements compared with the bound
    nonfinite: int  # NaN/inf elements compared exactly
    skipped: int
    others: tuple[np.ndarray, ...] = ()
    fixed: bool = False

    @property
    def is_exact(self) -> bool:
        return not _is_inexact(self.want)

    @property
    def checked(self) -> bool:
        """Whether a wrong value can fail this output (some element is finite, or it has
        none at all)."""
        return self.is_exact or self.finite > 0 or self.want.size == 0


@dataclass(frozen=True)
class Verdict:
    error: float  # max |got - want| over the compared elements (inf: a NaN where none belongs)
    ok: bool
    text: str  # "max abs error ..., relative to ... (bound ...) ok"


def default_rtol(dtype: str) -> float:
    """The bound's part relative to an output's largest magnitude (integers: exact)."""
    if dtype in ("bfloat16", "float16"):
        return 2e-2
    if dtype in ("float32", "complex64"):
        return 1e-5
    if dtype in ("float64", "complex128"):
        return 1e-12
    return 0.0


def expectations(
    module: Module,
    inputs: Sequence[np.ndarray],
    *,
    backend: str = "numpy",
    options: CheckOptions = CheckOptions(),
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[list[Expected], list[str]]:
    """Run the unsharded `module` on `inputs` (the references and the baseline runs) and say
    what each output must be; also notes for the user (why the reference is not f64)."""
    notes: list[str] = []
    own = run_reference(module, inputs, limits=limits)
    if options.fixed:
        return [expect(w, options=options) for w in own], notes
    runs = [own]
    if backend == "jax":
        try:
            runs.append(_global_jax(module, inputs))
        except ExecutionError as e:  # an op the global translator lacks: numpy's run only
            notes.append(f"note: the unsharded program did not run on JAX ({e.message}); the "
                         "bound uses the reference interpreter's run only")
    wide: list[np.ndarray | None] = [None] * len(own)
    if any(_narrow(w) for w in own):
        try:
            promoted = promote_floats(module)
        except NotPromotable as e:
            notes.append(f"note: the reference runs in the program's own precision: {e}")
        else:
            wide = list(run_reference(promoted, [widen(np.asarray(x)) for x in inputs],
                                      limits=limits))
    out = []
    for i, w in enumerate(own):
        if not _is_inexact(w):
            out.append(expect(w, [r[i] for r in runs[1:]]))
        elif wide[i] is not None and _narrow(w):
            out.append(expect(wide[i], [r[i] for r in runs], dtype=str(w.dtype)))
        else:  # the program's precision is the reference's: the other runs are the baseline
            out.append(expect(w, [r[i] for r in runs[1:]]))
    return out, notes


def expect(
    reference: np.ndarray,
    runs: Sequence[np.ndarray] = (),
    *,
    dtype: str | None = None,
    options: CheckOptions = CheckOptions(),
) -> Expected:
    """What one output must be: `reference` its most exact value, `runs` the unsharded runs
    in the program's precision (`dtype`, default the reference's). Integer outputs must equal
    the reference or one of the runs."""
    reference = np.asarray(reference)
    if not _is_inexact(reference):
        return Expected(reference, 0.0, 0.0, 0.0, 0.0, None, 0, 0, 0, others=tuple(runs),
                        fixed=options.fixed)
    dtype = dtype or str(reference.dtype)
    if not options.fixed:
        return _derived(reference, runs, dtype)
    rtol = options.rtol if options.rtol is not None else default_rtol(dtype)
    e = _derived(reference, (), dtype)
    bound = (options.atol or 0.0) + rtol * e.scale
    return Expected(e.want, bound, 0.0, e.scale, rtol, e.compare, e.finite, e.nonfinite,
                    e.skipped, fixed=True)


def judge(got: Any, e: Expected, index: tuple[slice, ...] | None = None) -> Verdict:
    """`got` (the whole output, or the block `index` of it) against `e`."""
    got = np.asarray(got)
    want = e.want if index is None else e.want[index]
    if got.shape != want.shape:
        return Verdict(float("inf"), False,
                       f"shape {list(got.shape)}, expected {list(want.shape)} FAILED")
    if e.is_exact:
        wrong = ~(got == want)
        for other in e.others:
            wrong &= ~(got == (other if index is None else other[index]))
        n = int(np.count_nonzero(wrong))
        text = "exact" if not n else f"{n} of {got.size} elements differ"
        return Verdict(float(n), not n, f"{text} ({want.dtype}, compared exactly) "
                                        f"{'ok' if not n else 'FAILED'}")
    compare = None if e.compare is None else (e.compare if index is None else e.compare[index])
    err = _error(got, want, compare)
    ok = err <= e.bound
    rel = err / e.scale if e.scale else err
    return Verdict(err, ok, f"max abs error {err:.3e}, relative to max |value| {rel:.3e} "
                            f"({_bound_text(e)}) {_status(e, ok)}")


# ----- the parts ------------------------------------------------------------------------------


def _is_inexact(a: np.ndarray) -> bool:
    return np.issubdtype(a.dtype, np.inexact) or a.dtype.name == "bfloat16"


def _narrow(a: np.ndarray) -> bool:
    return a.dtype.name in ("float16", "bfloat16", "float32", "complex64")


def _wide(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)


def _derived(reference: np.ndarray, runs: Sequence[np.ndarray], dtype: str) -> Expected:
    """The bound of one float output: `reference` (f64, or the program's precision) and the
    unsharded `runs` that measure how far the program's precision takes it."""
    want = _wide(reference)
    finite = np.isfinite(want)
    agree = np.ones(want.shape, bool)  # where every run is finite iff the reference is
    for r in runs:
        r = _wide(r)
        agree &= np.where(finite, np.isfinite(r), _same(r, want))
    compare = finite & agree
    skipped = int(want.size - np.count_nonzero(agree))
    nonfinite = int(np.count_nonzero(~finite & agree))
    n = int(np.count_nonzero(compare))
    scale = float(np.max(np.abs(want[compare]))) if n else 0.0
    baseline = max((_error(r, want, compare) for r in runs), default=0.0)
    floor = default_rtol(dtype)
    bound = BASELINE_FACTOR * baseline + floor * scale
    mask = None if n == want.size else agree
    return Expected(want, bound, baseline, scale, floor, mask, n, nonfinite, skipped)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal, NaN matching NaN (inf - inf is no error)."""
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _error(got: np.ndarray, want: np.ndarray, compare: np.ndarray | None) -> float:
    """max |got - want| where `compare` (finite elements: the difference; NaN/inf elements of
    `want`: 0 when `got` holds the same, else inf)."""
    g = _wide(got)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(_same(g, want), 0.0, np.abs(g - want))
    diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN where a number belongs
    if compare is not None:
        diff = diff[compare]
    return float(np.max(diff)) if diff.size else 0.0


def _bound_text(e: Expected) -> str:
    if e.fixed:
        return f"tolerance {e.floor:g}"
    text = (f"bound {e.bound:.3e}: {BASELINE_FACTOR:g} x unsharded error {e.baseline:.3e} + "
            f"{e.floor:g} x max |value|")
    if e.nonfinite:
        text += f"; {e.nonfinite} NaN/inf elements compared exactly"
    if e.skipped:
        text += f"; {e.skipped} elements NaN/inf only in the program's precision, not compared"
    return text


def _status(e: Expected, ok: bool) -> str:
    if not ok:
        return "FAILED"
    return "ok" if e.checked else "not checked (no finite element in the reference)"


def _global_jax(module: Module, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The unsharded program on JAX: the global function under `jax.jit` on one device."""
    from shardc.executors.jax_global import global_function  # noqa: PLC0415 - needs JAX
    from shardc.executors.jax_runtime import import_jax  # noqa: PLC0415

    jax = import_jax()
    wide = any(a.type.dtype in ("f64", "i64", "ui64") for a in module.main.args) or any(
        r.type.dtype in ("f64", "i64", "ui64") for op in module.walk() for r in op.results)
    # 64-bit values need JAX's 64-bit mode, else they would silently run in 32 bits
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        return [np.asarray(x) for x in jax.jit(global_function(module))(*inputs)]
