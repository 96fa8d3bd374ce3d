"""Judging one fuzz input: run a `shardc` command in process and say what happened.

    outcome = run_command(["opt", "x.mlir", "-p", "propagate"], timeout=10)
    outcome.kind    # "ok" | "error" | "crash" | "hang" | "wrong" | "memory"

The command runs through `shardc.cli.main`, the same code as the installed `shardc`, with its
output captured. What counts:

- ok: exit 0; error: exit 1 or 2 with a located or usage message (bad input is fine);
- crash: an internal compiler error, a Python traceback, or any other exit code;
- memory: a crash that is a `MemoryError` (the worker runs under an address-space limit);
- hang: still running after `timeout` seconds of CPU time (SIGPROF interrupts it);
- wrong: `run --check` found outputs that differ from the unsharded reference.

`check_program(text)` is the generator's oracle: compile, run on the simulated devices and
compare with the reference interpreter, in process (no CLI).
"""

from __future__ import annotations

import contextlib
import io
import resource
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

KINDS = ("ok", "error", "crash", "memory", "hang", "wrong")


class FuzzTimeout(BaseException):
    """Raised by SIGPROF: a BaseException, so no `except Exception` in shardc swallows it."""


@dataclass(frozen=True)
class Outcome:
    kind: str
    message: str
    seconds: float
    peak_rss_mb: float = 0.0

    @property
    def bad(self) -> bool:
        return self.kind in ("crash", "memory", "hang", "wrong")


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise `FuzzTimeout` in this thread after `seconds` of the process's CPU time (main
    thread only; Unix). CPU time, not wall-clock: an endless loop spends it, while a worker
    starved on a loaded machine does not time out for the load."""

    def fire(signum, frame):  # noqa: ARG001
        # Python ignores an exception raised inside a gc callback (hypothesis installs one):
        # fire again soon, until one lands in ordinary code.
        signal.setitimer(signal.ITIMER_PROF, 0.2)
        raise FuzzTimeout

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_command(argv: Sequence[str], timeout: float = 10.0) -> Outcome:
    """Run `shardc ARGV` in process and classify it (module docstring)."""
    from shardc.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with deadline(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    except FuzzTimeout:
        return Outcome("hang", f"no answer within {timeout} CPU s", timeout, peak_rss_mb())
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else 2
    except BaseException as e:  # noqa: BLE001 - anything escaping main is a crash
        return Outcome(
            "crash", f"{type(e).__name__}: {e}", time.perf_counter() - start, peak_rss_mb()
        )
    seconds = time.perf_counter() - start
    text = err.getvalue()
    return Outcome(classify(code, text, out.getvalue()), _first_line(text), seconds, peak_rss_mb())


def classify(code: int, stderr: str, stdout: str) -> str:
    if "internal compiler error" in stderr or "Traceback" in stderr:
        return "memory" if "MemoryError" in stderr else "crash"
    if code == 0:
        return "ok"
    if code in (1, 2):
        if "outputs differ from the unsharded reference" in stderr or "FAILED" in stdout:
            return "wrong"
        return "error"
    return "crash"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if "error" in line:
            return line[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def check_program(
    text: str, *, seed: int = 0, timeout: float = 20.0, rtol: float = 1e-4
) -> Outcome:
    """Compile native `text`, run it on its simulated devices and compare with the reference."""
    import numpy as np

    from shardc.commands.run import random_inputs
    from shardc.executors.reference import run_reference
    from shardc.ir.diagnostics import ShardcError
    from shardc.ir.parser import parse_module
    from shardc.pipeline import compile

    start = time.perf_counter()
    try:
        with deadline(timeout):
            module = parse_module(text, "generated.mlir")
            inputs = random_inputs(module, seed)
            expected = run_reference(module, inputs)
            got = compile(module).run(inputs)
    except FuzzTimeout:
        return Outcome("hang", f"no answer within {timeout} CPU s", timeout, peak_rss_mb())
    except ShardcError as e:
        return Outcome(
            "crash",
            f"a valid program was rejected: {e.render()[:300]}",
            time.perf_counter() - start,
            peak_rss_mb(),
        )
    except MemoryError as e:
        return Outcome("memory", f"MemoryError: {e}", time.perf_counter() - start, peak_rss_mb())
    except Exception as e:  # noqa: BLE001
        return Outcome(
            "crash", f"{type(e).__name__}: {e}", time.perf_counter() - start, peak_rss_mb()
        )
    seconds = time.perf_counter() - start
    if len(got) != len(expected):
        return Outcome("wrong", f"{len(got)} outputs, expected {len(expected)}", seconds)
    for i, (g, w) in enumerate(zip(got, expected, strict=True)):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if g.shape != w.shape:
            return Outcome("wrong", f"output {i} has shape {g.shape}, expected {w.shape}", seconds)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        diff = np.where(same, 0.0, np.abs(g - w))
        scale = max(float(np.max(np.abs(np.where(np.isfinite(w), w, 0.0)), initial=0.0)), 1.0)
        if diff.size and float(np.max(diff)) > rtol * scale:
            return Outcome(
                "wrong",
                f"output {i} differs by {float(np.max(diff)):.3g} (scale {scale:.3g})",
                seconds,
                peak_rss_mb(),
            )
    return Outcome("ok", "", seconds, peak_rss_mb())
