"""Counting the instructions of one call with valgrind's callgrind (the `--instructions` options
of pipeline_passes.py and propagation.py).

The child process runs the call to count through `counted`, i.e. inside `functools.reduce`,
and `run` starts it under callgrind with the count off (`--collect-atstart=no`) and toggled on
at the entry of that C function and off at its exit (`--toggle-collect=functools_reduce`): only
the call is counted, not Python's start-up, the imports or building the input. Counts agree
from run to run within ~0.03% whatever the machine's load, where CPU seconds move by 5-10% on
the shared machine: the child gets `PYTHONHASHSEED=0` (string hashes decide the order of sets
and dicts), and what is left is objects' addresses (the probes of sets keyed by `id`).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

TOGGLE = "functools_reduce"


def counted(call: Callable[[], T]) -> T:
    """`call()`, run inside the C function whose entry and exit switch callgrind's count on and
    off (shardc itself never calls `functools.reduce`: a nested call would switch it off)."""
    return functools.reduce(lambda _, __: call(), (0, 1))  # type: ignore[return-value]


def run(command: list[str], out_file: Path,
        cache_sim: bool = False) -> tuple[dict[str, int], str]:
    """Run `command` (a Python child that calls `counted`) under callgrind, the profile written
    to `out_file`: the totals of its events (`Ir`: instructions; with `cache_sim`, also the
    simulated caches' misses: `D1mr`, `DLmr`, ..., see callgrind's manual) and the child's
    standard output."""
    valgrind = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                f"--toggle-collect={TOGGLE}", f"--callgrind-out-file={out_file}"]
    if cache_sim:
        valgrind.append("--cache-sim=yes")
        last = last_level_cache()
        if last is not None:
            valgrind.append("--LL={},{},{}".format(*last))
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(valgrind + command, capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0 or not out_file.exists():
        raise SystemExit(f"callgrind failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return totals(out_file.read_text()), proc.stdout


def last_level_cache(
        sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> tuple[int, int, int] | None:
    """(size in bytes, ways, line size) of this machine's last-level cache, from Linux's sysfs;
    None where it cannot be read. (valgrind's own guess on this machine's AMD EPYC, from
    `cpuid`, is a 512 MB 2-way cache, which nothing of propagation's misses.)"""
    best: tuple[int, tuple[int, int, int]] | None = None
    for index in sorted(sysfs.glob("index*")):
        try:
            level = int((index / "level").read_text())
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip()
            ways = int((index / "ways_of_associativity").read_text())
            line = int((index / "coherency_line_size").read_text())
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
        size_bytes = int(size.rstrip("KM")) * scale
        if best is None or level > best[0]:
            best = (level, (size_bytes, ways, line))
    return None if best is None else best[1]


def totals(profile: str) -> dict[str, int]:
    """Event name -> total, from a callgrind profile's `events:` and `totals:` (or `summary:`)
    lines."""
    events = re.search(r"^events:\s*(.+)$", profile, re.M)
    total = re.search(r"^(?:totals|summary):\s*(.+)$", profile, re.M)
    if events is None or total is None:
        raise ValueError("not a callgrind profile: no events or totals line")
    names, values = events.group(1).split(), [int(v) for v in total.group(1).split()]
    return dict(zip(names, values + [0] * (len(names) - len(values)), strict=True))


_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*?)(?:\s+\[[^\]]*\])?\s*$")


def functions(out_file: Path, inclusive: bool = False) -> dict[str, int]:
    """C function -> its instruction count in the profile, its own (`inclusive=False`: what
    points at the function that does the work) or with its callees'
    (`callgrind_annotate --inclusive=`). Python functions do not appear: their bytecode runs in
    `_PyEval_EvalFrameDefault`."""
    text = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--auto=no",
         "--threshold=100", str(out_file)], capture_output=True, text=True, check=True).stdout
    return per_function(text, inclusive)


def per_function(annotated: str, inclusive: bool = False) -> dict[str, int]:
    """The per-function table of `callgrind_annotate`'s output: function -> count. A row is
    `COUNT (PERCENT)  FILE:FUNCTION [OBJECT]`; the program's totals row is left out. A function
    listed under several files (parts inlined from headers, a wrapper of the same name) gets
    the sum of its own counts, or the largest of its inclusive ones (each includes the rest)."""
    out: dict[str, int] = {}
    for line in annotated.splitlines():
        m = _LINE.match(line)
        if m is None or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2).rsplit(":", 1)[-1]
        count = int(m.group(1).replace(",", ""))
        out[name] = max(out.get(name, 0), count) if inclusive else out.get(name, 0) + count
    return out


def superlinear(small: dict[str, int], large: dict[str, int], factor: float,
                top: int) -> list[tuple[str, int, int]]:
    """The `top` functions whose counts grew the most beyond `factor` from `small` to `large`
    (instructions above `factor` x the small count): (name, small, large), largest excess
    first; only those with some excess."""
    excess = [(large[k] - factor * small.get(k, 0), k) for k in large]
    excess.sort(reverse=True)
    return [(k, small.get(k, 0), large[k]) for e, k in excess[:top] if e > 0]
