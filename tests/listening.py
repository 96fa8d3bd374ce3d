"""What a tree of processes listens on, read from Linux's /proc: the TCP sockets in LISTEN state
among each process's open files (`/proc/PID/fd` -> `socket:[INODE]`, matched against
`/proc/PID/net/tcp` and `tcp6`). tests/test_distributed.py watches `shardc run --processes`
with it; `ss -ltnp` shows the same where it may read other processes' sockets."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_LISTEN = "0A"  # the TCP state in /proc/net/tcp


def readable() -> bool:
    return Path("/proc/self/net/tcp").exists() and Path("/proc/self/fd").is_dir()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone meanwhile
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        below = parents.get(todo.pop(), [])
        out += below
        todo += below
    return out


def listening(pids: Sequence[int]) -> dict[int, set[tuple[Address, int]]]:
    """(address, port) of every TCP socket each of `pids` listens on (none for one gone)."""
    tables: dict[str, dict[str, tuple[Address, int]]] = {}  # by network namespace
    found: dict[int, set[tuple[Address, int]]] = {}
    for pid in pids:
        try:
            namespace = os.readlink(f"/proc/{pid}/ns/net")
            if namespace not in tables:  # the same for every process of the namespace
                tables[namespace] = _listening_sockets(pid)
            inodes = _socket_inodes(pid)
        except OSError:  # gone meanwhile
            found[pid] = set()
            continue
        found[pid] = {tables[namespace][i] for i in inodes if i in tables[namespace]}
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _listening_sockets(pid: int) -> dict[str, tuple[Address, int]]:
    """inode -> (address, port) of the listening TCP sockets in `pid`'s network namespace."""
    out = {}
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == _LISTEN:
                address, port = fields[1].split(":")
                out[fields[9]] = (_address(bytes.fromhex(address)), int(port, 16))
    return out


def _address(raw: bytes) -> Address:
    # The kernel prints each 32-bit word of the address in host (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def is_loopback(address: Address) -> bool:
    """127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (`::ffff:127.0.0.1`, what a dual-stack
    socket bound to 127.0.0.1 shows)."""
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def command_line(pid: int) -> list[str]:
    """Its arguments; [] for a process gone (or a zombie: its command line is empty)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode().split("\0")[:-1]  # each argument ends with a NUL


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (dead, waiting for its parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Watched:
    """One process seen while watching: its command line and every socket it listened on."""

    argv: list[str]
    sockets: set[tuple[Address, int]] = field(default_factory=set)

    def option(self, flag: str) -> str | None:
        """The value after `flag` in its command line (`--process-id` -> "1")."""
        return self.argv[self.argv.index(flag) + 1] if flag in self.argv[:-1] else None


def watch(processes: Sequence[subprocess.Popen], limit: float,
          act: Callable[[dict[int, Watched]], None] | None = None) -> dict[int, Watched]:
    """Until `processes` have exited: what they and every process below them listen on, by
    pid, read every 50 ms (a socket that lives shorter may go unseen: check that the expected
    ones were seen). `act(seen)` runs after each reading. Past `limit` seconds: kill them,
    fail."""
    seen: dict[int, Watched] = {}
    deadline = time.monotonic() + limit
    while any(p.poll() is None for p in processes):
        pids = [q for p in processes for q in (p.pid, *descendants(p.pid))]
        for pid, sockets in listening(pids).items():
            argv = command_line(pid)
            watched = seen.setdefault(pid, Watched(argv))
            watched.argv = argv or watched.argv  # read again: a child forks, then execs
            watched.sockets |= sockets
        if act is not None:
            act(seen)
        if time.monotonic() > deadline:
            for p in processes:
                p.kill()
            raise AssertionError(f"still running after {limit} s: {[p.args for p in processes]}")
        time.sleep(0.05)
    return seen
