"""One program across processes (or hosts) on JAX's distributed runtime.

    cluster = Cluster("host0:1234", num_processes=2, process_id=0, timeout=300)
    jax = cluster.join()                        # jax.distributed.initialize; gloo on CPU
    outputs = run_on_cluster(result, inputs)    # global jax.Arrays, this process's shards local
    check_on_cluster(outputs, expected)         # each process checks the shards it holds

Every process compiles the same program (shardc's pipeline is deterministic) and runs the same
jitted `shard_map` over a mesh of all processes' devices; JAX's runtime carries the
collectives that cross processes (gloo between CPU processes, NCCL/ICI on accelerators).
Inputs are built per process from the global arrays with `jax.make_array_from_callback`: a
process materialises only the shards on its own devices. A watchdog ends the process with an
error after `timeout` seconds, so a peer that died or never came never leaves it hanging.

What listens (docs/cli.md, "Security"): process 0 serves JAX's coordination service on the
coordinator's own address (`bind` changes it; JAX's default would be every interface), and
each process's gloo transport listens where JAX puts it: on the address this machine's
hostname resolves to, or, for a cluster whose coordinator is on loopback (all its processes on
this machine), on that loopback address too.
"""

from __future__ import annotations

import ipaddress
import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardc.check import Expected, judge
from shardc.executors.jax_arrays import JaxArrayProgram, global_array
from shardc.executors.jax_runtime import import_jax
from shardc.ir.diagnostics import ShardcError
from shardc.pipeline import CompileResult

__all__ = ["Cluster", "bind_cpu_collectives", "check_on_cluster", "crossing_collectives",
           "run_on_cluster"]


@dataclass(frozen=True)
class Cluster:
    """Where this process sits in a cluster: the coordinator's `HOST:PORT`, how many
    processes, which one this is, how long (seconds) it may take before giving up, and the
    host process 0's coordination service listens on (None: the coordinator's HOST; `0.0.0.0`
    or `[::]` is every interface)."""

    coordinator: str
    num_processes: int
    process_id: int
    timeout: float = 300.0
    bind: str | None = None

    def __post_init__(self) -> None:
        host, sep, port = self.coordinator.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ShardcError(f"--coordinator takes HOST:PORT, got '{self.coordinator}'")
        if self.bind is not None:
            _bind_host(self.bind)  # checked here: a bad one is an error before anything runs
        if self.num_processes < 1:
            raise ShardcError(f"--num-processes must be at least 1, got {self.num_processes}")
        if not 0 <= self.process_id < self.num_processes:
            raise ShardcError(f"--process-id must be in [0, {self.num_processes}), "
                              f"got {self.process_id}")
        if self.timeout <= 0:
            raise ShardcError(f"--timeout must be positive, got {self.timeout}")

    @property
    def name(self) -> str:
        return f"process {self.process_id} of {self.num_processes}"

    @property
    def bind_address(self) -> str:
        """`HOST:PORT` process 0's coordination service listens on."""
        host, _, port = self.coordinator.rpartition(":")
        return f"{host if self.bind is None else _bind_host(self.bind)}:{port}"

    @property
    def loopback(self) -> str | None:
        """The coordinator's host when it is a loopback address (`127.0.0.1`, `::1`,
        `localhost`): then every process is on this machine, and its collectives stay on
        loopback too. None for a coordinator other hosts can reach."""
        host = self.coordinator.rpartition(":")[0].removeprefix("[").removesuffix("]")
        if host == "localhost":
            return host
        try:
            return host if ipaddress.ip_address(host).is_loopback else None
        except ValueError:  # a host name: resolved by each process, not ours to judge
            return None

    def join(self, expire: Callable[[str], None] | None = None) -> Any:
        """Start the watchdog, set gloo for CPU collectives and `jax.distributed.initialize`;
        returns `jax`. Must run before anything else touches JAX's devices."""
        self.start_watchdog(expire)
        jax = import_jax()
        # CPU collectives between processes need an implementation (the default has none);
        # the setting concerns the CPU client only, accelerators use their own.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        try:
            jax.distributed.initialize(
                coordinator_address=self.coordinator, num_processes=self.num_processes,
                process_id=self.process_id,
                # JAX's default is every interface ([::]:PORT): a job meant for one machine,
                # or one network, would take connections from anywhere that reaches this one.
                coordinator_bind_address=self.bind_address,
                # JAX ends the process (a C++ fatal error) when this passes: let the watchdog,
                # whose message says what happened, go first.
                initialization_timeout=math.ceil(self.timeout) + 10,
            )
        except Exception as e:  # the runtime's errors (unreachable coordinator, timeout)
            serving = (f" (process 0 serves the coordinator on {self.bind_address}, which must "
                       "be an address of this machine; --coordinator-bind sets another)"
                       if self.process_id == 0 else "")
            raise ShardcError(f"{self.name}: cannot join the cluster at {self.coordinator}"
                              f"{serving}: {type(e).__name__}: {e}") from None
        if self.loopback is not None:
            bind_cpu_collectives(self.loopback)
        return jax

    def start_watchdog(self, expire: Callable[[str], None] | None = None) -> None:
        message = (f"error: {self.name}: no result after {self.timeout:g} s (a process "
                   "of the cluster may have failed or never started); giving up")
        timer = threading.Timer(self.timeout, expire or _exit_with, args=(message,))
        timer.daemon = True
        timer.start()


def bind_cpu_collectives(host: str) -> None:
    """Make JAX's CPU collectives between processes (gloo over TCP) listen on `host`, e.g.
    `"127.0.0.1"` for a cluster on one machine. Call after `jax.distributed.initialize`,
    before anything touches JAX's devices.

    JAX binds gloo to the address this machine's hostname resolves to (on many machines its
    network address) and has no public setting for it: this replaces JAX's CPU backend
    factory with its own `make_cpu_client`, given gloo collectives on `host`."""
    jax = import_jax()
    try:
        from jax._src import distributed, xla_bridge
        from jax._src.lib import _jax
        from jax.extend.backend import register_backend_factory

        make_gloo, make_cpu_client = _jax.make_gloo_tcp_collectives, xla_bridge.make_cpu_client
    except (ImportError, AttributeError) as e:  # JAX's internals moved: say so, never listen
        raise ShardcError(f"cannot keep JAX {jax.__version__}'s CPU collectives on {host}: "
                          f"{type(e).__name__}: {e}") from None
    client = distributed.global_state.client
    if client is None:
        raise ShardcError("bind_cpu_collectives: call jax.distributed.initialize first")

    def cpu_client() -> Any:
        return make_cpu_client(collectives=make_gloo(distributed_client=client, hostname=host))

    try:
        register_backend_factory("cpu", cpu_client, priority=0, fail_quietly=False)
    except RuntimeError as e:  # "Backend cpu already initialized"
        raise ShardcError(f"bind_cpu_collectives: JAX's devices are in use already ({e}); call "
                          "it before anything touches them") from None


def _bind_host(host: str) -> str:
    """`--coordinator-bind`'s host as gRPC takes it: IPv6 addresses in brackets; no port."""
    inner = host.removeprefix("[").removesuffix("]")
    if ":" in inner or inner != host:
        try:
            return f"[{ipaddress.IPv6Address(inner)}]"
        except ValueError:
            pass
    elif inner and not any(c.isspace() or c in "/[]" for c in inner):
        return inner
    raise ShardcError(f"--coordinator-bind takes a host or an address without a port (the "
                      f"port is --coordinator's), e.g. 10.0.0.1 or [::], got '{host}'")


def _exit_with(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    os._exit(1)


def run_on_cluster(result: CompileResult, inputs: Sequence[np.ndarray]) -> list[Any]:
    """Run the compiled program on every device of every process: global numpy inputs (the
    same in every process), global `jax.Array` outputs."""
    jax = import_jax()
    program = JaxArrayProgram(result.spmd)
    arrays = [global_array(jax, np.asarray(x), s) for x, s in zip(inputs, program.in_shardings)]
    return list(program.jitted(*arrays))


def crossing_collectives(result: CompileResult) -> tuple[int, int]:
    """`(collectives, those whose device groups span more than one process)`."""
    jax = import_jax()
    devices = jax.devices()
    collectives = result.report["collectives"]
    crossing = sum(
        1 for c in collectives
        if any(len({devices[d].process_index for d in group}) > 1 for group in c["groups"])
    )
    return len(collectives), crossing


def check_on_cluster(
    outputs: Sequence[Any], expected: Sequence[Expected]
) -> tuple[list[str], bool]:
    """Each output's shards on this process against the same blocks of what the unsharded
    program says (compiler/check.py: the bound is the whole output's, not the block's).
    Returns the report lines and whether every shard is within its bound."""
    lines, all_ok = [], True
    for i, (out, e) in enumerate(zip(outputs, expected)):
        shards = out.addressable_shards
        verdicts = [judge(shard.data, e, shard.index) for shard in shards]
        worst = max(verdicts, key=lambda v: (not v.ok, v.error))
        shape = e.want.shape
        starts = {tuple(sl.indices(n)[0] for sl, n in zip(s.index, shape)): s.index
                  for s in shards}
        held = [_index_text(starts[k], shape) for k in sorted(starts)]
        lines.append(f"output {i}: {len(shards)} shards here ({', '.join(held)}), {worst.text}")
        all_ok = all_ok and all(v.ok for v in verdicts)
    return lines, all_ok


def gather_on_cluster(outputs: Sequence[Any]) -> list[np.ndarray]:
    """Every output as a whole numpy array on every process (a collective: all must call)."""
    from jax.experimental import multihost_utils

    return [np.asarray(multihost_utils.process_allgather(o, tiled=True)) for o in outputs]


def _index_text(index: tuple[slice, ...], shape: tuple[int, ...]) -> str:
    parts = []
    for s, n in zip(index, shape):
        start, stop, _ = s.indices(n)
        parts.append(":" if (start, stop) == (0, n) else f"{start}:{stop}")
    return "[" + ", ".join(parts) + "]"
