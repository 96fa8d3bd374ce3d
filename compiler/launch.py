"""`shardc run --processes N`: N local processes that form one cluster on this machine.

    status = launch_local(["run", "examples/mlp.mlir", "--backend", "jax", "--check"],
                          processes=2, devices=8, timeout=300)

Each process is the same `shardc` command joined to a coordinator on 127.0.0.1 (a free port),
with `--coordinator 127.0.0.1:PORT --num-processes N --process-id I` added: exactly what one
runs by hand on each host of a real cluster. The processes simulate hosts with CPU devices
(`JAX_PLATFORMS=cpu`, `--xla_force_host_platform_device_count=devices/N` each), so the mesh's
devices are split evenly across them and collectives over a split axis cross processes (over
gloo). If a process fails, the others get a few seconds to finish and are then stopped; if
the cluster is not done after `timeout` seconds, every process is stopped. Either way the
launcher says which process did what and returns 1: it never hangs. On Linux the processes
die with the launcher too (`PR_SET_PDEATHSIG`), so even a launcher killed outright leaves none
behind, listening or computing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import IO

from shardc.ir.diagnostics import ShardcError

__all__ = ["free_port", "launch_local"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
GRACE_S = 5.0  # how long the others may take to finish once one process has failed
_MAIN = "import sys; from shardc.cli import main; sys.exit(main(sys.argv[1:]))"
_FRAME = re.compile(r"\s+@\s+0x[0-9a-f]+ ")
_DEVICE_COUNT = re.compile(r"--xla_force_host_platform_device_count=\d+")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (the coordinator binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_local(argv: Sequence[str], *, processes: int, devices: int, timeout: float) -> int:
    """Run `shardc *argv` as `processes` processes of one local cluster with `devices` devices
    in all; their output is printed process by process. Returns the exit status."""
    if processes < 1:
        raise ShardcError(f"--processes must be at least 1, got {processes}")
    if devices % processes:
        raise ShardcError(f"the mesh has {devices} devices, which {processes} processes "
                          "cannot share evenly; choose a --processes that divides it")
    coordinator = f"127.0.0.1:{free_port()}"
    env = _child_env(devices // processes)
    with contextlib.ExitStack() as files:
        logs = [(files.enter_context(tempfile.TemporaryFile("w+")),
                 files.enter_context(tempfile.TemporaryFile("w+"))) for _ in range(processes)]
        return _run(argv, coordinator, env, logs, timeout)


def _run(argv: Sequence[str], coordinator: str, env: dict[str, str],
         logs: list[tuple[IO[str], IO[str]]], timeout: float) -> int:
    processes = len(logs)
    children: list[subprocess.Popen] = []
    try:
        for i, (out, err) in enumerate(logs):
            command = [sys.executable, "-c", _MAIN, *argv, "--coordinator", coordinator,
                       "--num-processes", str(processes), "--process-id", str(i),
                       "--timeout", f"{timeout:g}"]
            children.append(subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                             stdin=subprocess.DEVNULL,
                                             preexec_fn=_die_with(os.getpid())))
        codes = _wait(children, timeout)
    except BaseException:  # Ctrl-C, or a process that cannot start: leave none behind
        _stop(children)
        raise
    status = 0
    for i, ((out, err), code) in enumerate(zip(logs, codes)):
        text, errors = _read(out), _read(err)
        for line in _useful(text):
            print(f"[process {i}] {line}")
        if code != 0:
            status = 1
            why = ("stopped: still running after the timeout" if code is None
                   else "stopped after another process failed" if code == "stopped"
                   else f"exited with status {code}")
            print(f"error: process {i} of {processes} {why}", file=sys.stderr)
            for line in _useful(errors)[-20:]:
                print(f"[process {i}] {line}", file=sys.stderr)
    return status


def _child_env(per_process: int) -> dict[str, str]:
    env = dict(os.environ)
    flags = _DEVICE_COUNT.sub("", env.get("XLA_FLAGS", "")).strip()
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={per_process}".strip()
    env["JAX_PLATFORMS"] = "cpu"  # simulated hosts: each process its own CPU devices
    return env


def _die_with(parent: int) -> Callable[[], None] | None:
    """For `Popen(preexec_fn=...)` (Linux): the child gets SIGKILL when `parent` dies, however
    it dies; a child whose parent died before this took effect ends at once."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:  # runs in the child, between fork and exec
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def _wait(children: list[subprocess.Popen], timeout: float) -> list[int | str | None]:
    """Exit codes; "stopped" for a process stopped after another failed, None for one
    stopped at the timeout."""
    deadline = time.monotonic() + timeout
    failed_at: float | None = None
    while True:
        codes = [c.poll() for c in children]
        if all(code is not None for code in codes):
            return list(codes)
        now = time.monotonic()
        if failed_at is None and any(code not in (None, 0) for code in codes):
            failed_at = now
        if failed_at is not None and now - failed_at > GRACE_S:
            return [code if code is not None else "stopped" for code in _stop(children)]
        if now > deadline:
            return _stop(children)
        time.sleep(0.05)


def _stop(children: list[subprocess.Popen]) -> list[int | None]:
    """Terminate the processes still running (kill those that ignore it); their code: None."""
    running = [c.poll() is None for c in children]
    for child, alive in zip(children, running):
        if alive:
            child.terminate()
    for child, alive in zip(children, running):
        if alive:
            try:
                child.wait(timeout=3)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    return [None if alive else child.returncode for child, alive in zip(children, running)]


def _read(f: IO[str]) -> str:
    f.seek(0)
    return f.read()


def _useful(errors: str) -> list[str]:
    """Output without the gloo transport's connection chatter and native stack frames."""
    return [line for line in errors.splitlines()
            if not line.startswith("[Gloo]") and not _FRAME.match(line)]
