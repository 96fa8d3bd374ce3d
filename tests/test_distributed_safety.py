"""What a multi-process run exposes and leaves behind (docs/cli.md, "Security"): the sockets its
processes listen on, read from /proc while it runs (tests/listening.py), and what killing one of
its processes, or the launcher, does. A local cluster listens on loopback only, even where the
machine's hostname resolves to its network address; a cluster joined with `--coordinator
HOST:PORT` serves the coordinator on HOST's address, on every interface only when asked."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("jax")

from shardc.distributed import Cluster  # noqa: E402
from shardc.ir.diagnostics import ShardcError  # noqa: E402
from shardc.launch import free_port  # noqa: E402
from tests import listening  # noqa: E402
from tests.listening import Watched, alive, is_loopback, watch  # noqa: E402

if not listening.readable():
    pytest.skip("needs Linux's /proc to read processes' sockets", allow_module_level=True)

ROOT = Path(__file__).parent.parent
SHARDC = [sys.executable, "-c", "import sys; from shardc.cli import main; "
          "sys.exit(main(sys.argv[1:]))"]
LOCAL_RUN = ["run", "examples/mlp_fsdp.mlir", "--backend", "jax", "--processes", "2", "--check",
             "--timeout", "60"]


def start(argv: list[str], tmp_path: Path, env: dict[str, str] | None = None,
          prefix: list[str] | None = None) -> subprocess.Popen:
    """`shardc *argv` (after `prefix`, a command that execs its arguments), output to files."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        return subprocess.Popen([*(prefix or []), *SHARDC, *argv], cwd=ROOT, env=env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)


def output(tmp_path: Path) -> tuple[str, str]:
    return (tmp_path / "out").read_text(), (tmp_path / "err").read_text()


def processes(seen: dict[int, Watched]) -> dict[str, Watched]:
    """The cluster's processes among those seen, by `--process-id`."""
    return {w.option("--process-id"): w for w in seen.values() if w.option("--process-id")}


def processes_pids(seen: dict[int, Watched]) -> list[int]:
    return [pid for pid, w in seen.items() if w.option("--process-id")]


def check_loopback_only(seen: dict[int, Watched]) -> None:
    cluster = processes(seen)
    assert sorted(cluster) == ["0", "1"], seen
    port = int(cluster["0"].option("--coordinator").rpartition(":")[2])
    # What must have been seen, so that "nothing else" means something: process 0's
    # coordination service, and each process's gloo transport.
    assert port in {p for _, p in cluster["0"].sockets}, cluster["0"].sockets
    assert all(w.sockets - {(a, p) for a, p in w.sockets if p == port}
               for w in cluster.values()), seen
    exposed = {(str(a), p) for w in seen.values() for a, p in w.sockets if not is_loopback(a)}
    assert not exposed, f"listening beyond loopback: {exposed}"


def test_a_local_cluster_listens_on_loopback_only(tmp_path: Path) -> None:
    launcher = start(LOCAL_RUN, tmp_path)
    seen = watch([launcher], limit=120)
    assert launcher.returncode == 0, output(tmp_path)
    check_loopback_only(seen)


def network_address() -> str | None:
    """This machine's address on its network (the one a route out would use), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: connecting a UDP socket sends nothing
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def test_loopback_only_where_the_hostname_is_the_network_address(tmp_path: Path) -> None:
    # On many machines the hostname resolves to the network address, and JAX binds gloo (its
    # CPU collectives) there. A user and mount namespace gives the run such a hostname without
    # touching the machine: /etc/hosts replaced for it alone.
    address = network_address()
    if address is None:
        pytest.skip("this machine has no network address")
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-Urum", "true"],
                                         capture_output=True).returncode:
        pytest.skip("unprivileged user and mount namespaces are unavailable (unshare -Urum)")
    hosts = tmp_path / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n{address} shardc-test-host\n")
    setup = (f"mount --bind {hosts} /etc/hosts && hostname shardc-test-host && "
             f"{sys.executable} -c 'import socket; print(socket.gethostbyname("
             "socket.gethostname()))' >&2 && exec \"$@\"")
    launcher = start(LOCAL_RUN, tmp_path, prefix=[unshare, "-Urum", "sh", "-c", setup, "sh"])
    seen = watch([launcher], limit=120)
    out, err = output(tmp_path)
    assert launcher.returncode == 0, out + err
    assert err.splitlines()[0] == address  # the hostname does name the network address
    check_loopback_only(seen)


def test_killing_a_process_ends_the_run_with_an_error(tmp_path: Path) -> None:
    # Process 1 is killed once it has joined the cluster (its gloo transport listens): process
    # 0 cannot finish without it. The launcher reports both and exits 1, long before the
    # timeout, and no process of the run is left.
    killed: list[int] = []

    def kill_process_1(seen: dict[int, Watched]) -> None:
        one = [pid for pid, w in seen.items() if w.option("--process-id") == "1" and w.sockets]
        if one and not killed:
            os.kill(one[0], signal.SIGKILL)
            killed.append(one[0])

    launcher = start(LOCAL_RUN, tmp_path)
    seen = watch([launcher], limit=120, act=kill_process_1)
    out, err = output(tmp_path)
    assert killed and launcher.returncode == 1, out + err
    assert "error: process 1 of 2 exited with status -9" in err, err
    # Ended by the failure (GRACE_S later at most), not by --timeout ("still running after").
    assert ("error: process 0 of 2 stopped after another process failed" in err
            or "error: process 0 of 2 exited with status" in err), err
    assert "after the timeout" not in err
    assert "Traceback" not in err
    assert not [pid for pid in processes_pids(seen) if alive(pid)]


def test_killing_the_launcher_leaves_no_process_behind(tmp_path: Path) -> None:
    # Both processes are stopped (SIGSTOP: they can neither finish nor exit on their own) and
    # the launcher is killed outright, with no chance to clean up: the processes must die
    # with it (PR_SET_PDEATHSIG), not stay, listening, until someone finds them.
    if not sys.platform.startswith("linux"):
        pytest.skip("processes die with their parent on Linux (PR_SET_PDEATHSIG)")
    launcher = start(LOCAL_RUN, tmp_path)
    frozen: list[int] = []

    def stop_all_then_the_launcher(seen: dict[int, Watched]) -> None:
        pids = processes_pids(seen)
        if len(pids) == 2 and not frozen:
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            frozen.extend(pids)
            launcher.kill()

    try:
        watch([launcher], limit=120, act=stop_all_then_the_launcher)
        assert frozen and launcher.returncode == -signal.SIGKILL
        deadline = time.monotonic() + 20  # bounds a failure; they go at once when it works
        while any(alive(pid) for pid in frozen) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in frozen if alive(pid)], "processes outlived their launcher"
    finally:
        for pid in frozen:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def one_process(coordinator: str, tmp_path: Path, *extra: str) -> set[tuple[object, int]]:
    """A cluster of one process joined with `--coordinator`: the addresses its coordination
    service (the coordinator's port) listened on."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    proc = start(["run", "examples/mlp.mlir", "--backend", "jax", "--check", "--coordinator",
                  coordinator, "--num-processes", "1", "--process-id", "0", "--timeout", "60",
                  *extra], tmp_path, env=env)
    seen = watch([proc], limit=120)
    assert proc.returncode == 0, output(tmp_path)
    port = int(coordinator.rpartition(":")[2])
    found = {a for w in seen.values() for a, p in w.sockets if p == port}
    assert found, "the coordination service was never seen listening"
    return {getattr(a, "ipv4_mapped", None) or a for a in found}


def test_a_coordinator_listens_on_its_own_host(tmp_path: Path) -> None:
    address = network_address()
    if address is None:
        pytest.skip("this machine has no network address")
    coordinator = f"{address}:{free_port()}"
    assert one_process(coordinator, tmp_path) == {ipaddress.ip_address(address)}


def test_every_interface_only_when_asked(tmp_path: Path) -> None:
    found = one_process(f"127.0.0.1:{free_port()}", tmp_path, "--coordinator-bind", "0.0.0.0")
    assert len(found) == 1 and next(iter(found)).is_unspecified  # 0.0.0.0 or ::


@pytest.mark.parametrize("coordinator, bind, address, loopback", [
    ("127.0.0.1:1234", None, "127.0.0.1:1234", "127.0.0.1"),
    ("localhost:1234", None, "localhost:1234", "localhost"),
    ("[::1]:1234", None, "[::1]:1234", "::1"),
    ("10.0.0.1:1234", None, "10.0.0.1:1234", None),
    ("host0:1234", None, "host0:1234", None),
    ("host0:1234", "0.0.0.0", "0.0.0.0:1234", None),
    ("host0:1234", "::", "[::]:1234", None),
    ("host0:1234", "[::]", "[::]:1234", None),
    ("127.0.0.1:1234", "10.0.0.1", "10.0.0.1:1234", "127.0.0.1"),
])
def test_where_the_coordinator_listens(coordinator: str, bind: str | None, address: str,
                                       loopback: str | None) -> None:
    cluster = Cluster(coordinator, 2, 0, bind=bind)
    assert (cluster.bind_address, cluster.loopback) == (address, loopback)


@pytest.mark.parametrize("bind", ["host0:1234", "[host0]", "", "a b", "10.0.0.1/8"])
def test_a_bind_address_is_a_host(bind: str) -> None:
    with pytest.raises(ShardcError, match="--coordinator-bind takes a host"):
        Cluster("host0:1234", 2, 0, bind=bind)
