"""One program across processes on JAX's distributed runtime: `shardc run --processes 2` (2
local processes x 4 CPU devices, collectives over gloo that cross processes), `shardc.jit`
unchanged under `jax.distributed.initialize`, and the launcher's answers to a process that
fails, a cluster that never forms and bad options (an error and a status, never a hang)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("jax")

from shardc.distributed import Cluster  # noqa: E402
from shardc.ir.diagnostics import ShardcError  # noqa: E402
from shardc.launch import _wait, free_port  # noqa: E402
from tests import listening  # noqa: E402

ROOT = Path(__file__).parent.parent


def shardc_cli(*args: str, timeout: float = 120, stdin: str | None = None
               ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    command = [sys.executable, "-c", "import sys; from shardc.cli import main; "
               "sys.exit(main(sys.argv[1:]))", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=timeout, input=stdin)


def test_two_processes_with_collectives_across_them() -> None:
    # mlp_fsdp: a mesh of 8 on one axis, its all_to_alls and reduce_scatters span both
    # processes (devices 0-3 in process 0, 4-7 in process 1). Read from stdin: every process
    # gets the program (the docs run the file form).
    text = (ROOT / "examples" / "mlp_fsdp.mlir").read_text()
    proc = shardc_cli("run", "-", "--backend", "jax", "--processes", "2", "--check",
                      "--timeout", "90", stdin=text)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i in range(2):
        assert f"[process {i}] process {i} of 2: devices {4 * i}-{4 * i + 3} of 8; " \
               "4 collectives, 4 across processes" in proc.stdout
        assert f"[process {i}] output 0: 4 shards here" in proc.stdout
    assert proc.stdout.count(" ok\n") == 2 and "Gloo" not in proc.stdout


def test_jit_under_jax_distributed() -> None:
    # Also what the workers listen on, joined as docs/jax.md says: loopback only.
    coordinator = f"127.0.0.1:{free_port()}"
    worker = [sys.executable, str(ROOT / "tests" / "jit_cluster_worker.py"), coordinator]
    children = [subprocess.Popen([*worker, str(i)], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for i in range(2)]
    try:
        seen = listening.watch(children, limit=120) if listening.readable() else {}
        outputs = [c.communicate(timeout=120)[0] for c in children]
    finally:
        for c in children:
            c.kill()
    for i, (child, out) in enumerate(zip(children, outputs)):
        assert child.returncode == 0, out
        assert f"process {i}: sharding" in out and " 0 failures, cache 1" in out, out
    if seen:
        sockets = {(a, p) for c in children for a, p in seen[c.pid].sockets}
        assert int(coordinator.rpartition(":")[2]) in {p for _, p in sockets}
        assert len(sockets) >= 3 and all(listening.is_loopback(a) for a, _ in sockets), sockets


def test_docs_join_a_cluster_as_the_worker_does() -> None:
    # docs/jax.md shows how to join a cluster with everything on loopback: the lines of
    # tests/jit_cluster_worker.py, which the test above runs (and checks the sockets of).
    blocks = re.findall(r"^```text\n(.*?)^```", (ROOT / "docs" / "jax.md").read_text(),
                        re.M | re.S)
    shown = [b for b in blocks if "coordinator_bind_address" in b]
    worker = {line.split("  # noqa")[0].strip() for line in
              (ROOT / "tests" / "jit_cluster_worker.py").read_text().splitlines()}
    assert len(shown) == 1
    assert [line for line in shown[0].splitlines() if line.strip() not in worker] == []


def test_a_failed_process_stops_the_others_after_a_grace_period(monkeypatch) -> None:
    monkeypatch.setattr("shardc.launch.GRACE_S", 0.5)
    fail = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    hang = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    start = time.monotonic()
    assert _wait([fail, hang], timeout=60) == [3, "stopped"]
    assert time.monotonic() - start < 10


def test_a_cluster_past_its_timeout_is_stopped() -> None:
    hang = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            for _ in range(2)]
    assert _wait(hang, timeout=0.5) == [None, None]


def test_a_process_whose_peers_never_come_gives_up() -> None:
    proc = shardc_cli("run", "examples/mlp.mlir", "--backend", "jax", "--check",
                      "--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2",
                      "--process-id", "1", "--timeout", "2", timeout=60)
    assert proc.returncode == 1
    assert "process 1 of 2: no result after 2 s" in proc.stderr


@pytest.mark.parametrize("args, status, message", [
    (["--processes", "2"], 2, "add --backend jax"),
    (["--backend", "jax", "--processes", "3"], 1, "cannot share evenly"),
    (["--backend", "jax", "--coordinator", "h:1"], 2, "together"),
    (["--backend", "jax", "--processes", "2", "--process-id", "0"], 2, "one or the other"),
    (["--backend", "jax", "--coordinator", "nohost", "--num-processes", "2",
      "--process-id", "0"], 1, "HOST:PORT"),
    (["--backend", "jax", "--coordinator-bind", "0.0.0.0"], 2, "goes with --coordinator"),
    (["--backend", "jax", "--processes", "2", "--coordinator-bind", "0.0.0.0"], 2,
     "one or the other"),
    (["--backend", "jax", "--coordinator", "h:1", "--num-processes", "2", "--process-id", "0",
      "--coordinator-bind", "h:2"], 1, "without a port"),
])
def test_bad_options(args: list[str], status: int, message: str) -> None:
    proc = shardc_cli("run", "examples/mlp.mlir", *args, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert message in proc.stderr


def test_cluster_checks_its_fields() -> None:
    with pytest.raises(ShardcError, match=r"must be in \[0, 2\)"):
        Cluster("127.0.0.1:1234", 2, 2)
    with pytest.raises(ShardcError, match="positive"):
        Cluster("127.0.0.1:1234", 2, 0, timeout=0)


def test_every_run_option_reaches_each_process() -> None:
    # `--processes N` reruns the command in each process: an option it drops changes what the
    # processes run (--auto-shard dropped ran the unannotated model replicated). Every option
    # of `run`, set away from its default, must come back the same from the processes' argv.
    from shardc.cli import build_parser
    from shardc.run_cluster import process_argv

    parser = build_parser()
    argv = ["run", "prog.mlir", "--backend", "jax", "--processes", "2", "--mesh", "dp=2",
            "--model", "mlp", "--preset", "dp", "--layers", "3", "--strategy", "basic",
            "--reshard-algorithm", "shardy", "--strict", "--input-format", "sdy", "--auto-shard",
            "--memory-budget", "36KiB", "--auto-shard-effort", "5",
            "--inputs", "in.npz", "--seed", "7", "--check", "--rtol", "0.5", "--atol", "0.25",
            "-o", "out.npz", "--timeout", "9", "--limit", "devices=9", "--limit", "depth=7",
            "--train", "adam", "--scale", "0.25", "--combine-threshold", "1MiB",
            "--gather-weights", "never", "--collective-latency", "4KiB"]
    given = parser.parse_args(argv)
    defaults = parser.parse_args(["run", "--backend", "jax"])
    cluster = {"processes", "coordinator", "num_processes", "process_id", "coordinator_bind",
               "timeout", "func", "command"}
    unset = [k for k, v in vars(given).items() if k not in cluster and v == vars(defaults)[k]]
    assert unset == ["backend"], "set every option of `run` in this test"
    again = vars(parser.parse_args(process_argv(given)))
    for name, value in vars(given).items():
        if name not in cluster:
            assert again[name] == value, name
