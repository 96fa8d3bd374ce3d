"""`shardc run` across processes: its options, the local launcher's command line, and what
each process of the cluster does.

    shardc run examples/mlp.mlir --backend jax --processes 2 --check        # one machine
    shardc run examples/mlp.mlir --backend jax --check \\
        --coordinator host0:1234 --num-processes 2 --process-id 0           # on each host
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported where used: `shardc --help` and `shardc opt` need neither
    from shardc.check import Expected
    from shardc.distributed import Cluster

__all__ = ["add_cluster_options", "cluster_of", "launch", "process_argv", "run_as_process"]

# The `run` options a process of a local cluster repeats: (flag, namespace attribute).
_VALUE_OPTIONS = (
    ("--mesh", "mesh"), ("--model", "model"), ("--preset", "preset"), ("--layers", "layers"),
    ("--strategy", "strategy"), ("--input-format", "input_format"), ("--inputs", "inputs"),
    ("--seed", "seed"), ("--rtol", "rtol"), ("--atol", "atol"), ("-o", "output"),
    ("--memory-budget", "memory_budget"), ("--reshard-algorithm", "reshard_algorithm"),
    ("--train", "train"), ("--scale", "scale"), ("--combine-threshold", "combine_threshold"),
    ("--auto-shard-effort", "auto_shard_effort"), ("--gather-weights", "gather_weights"),
    ("--collective-latency", "collective_latency"),
)
_FLAG_OPTIONS = (("--strict", "strict"), ("--check", "check"), ("--auto-shard", "auto_shard"))


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "processes and hosts (--backend jax; JAX's distributed runtime)"
    )
    g.add_argument("--processes", type=int, default=None, metavar="N",
                   help="start N local processes that split the mesh's devices (CPU)")
    g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="join the cluster whose process 0 listens here")
    g.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="processes in the cluster (with --coordinator)")
    g.add_argument("--process-id", type=int, default=None, metavar="I",
                   help="this process's index, 0..N-1 (with --coordinator)")
    g.add_argument("--coordinator-bind", default=None, metavar="HOST",
                   help="process 0's coordinator listens on HOST's address instead of the "
                   "coordinator's; 0.0.0.0 or [::]: every interface, open to anyone who "
                   "reaches this machine (the service has no authentication)")
    g.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="give up (exit 1) when the cluster has not finished after S seconds")


def cluster_of(args: argparse.Namespace, usage_error: type[Exception]) -> Cluster | None:
    """The cluster this process joins (None: a single process); checks the options."""
    joined = [args.coordinator, args.num_processes, args.process_id]
    if args.processes is not None and any(v is not None for v in [*joined, args.coordinator_bind]):
        raise usage_error("--processes starts a local cluster (on 127.0.0.1); --coordinator, "
                          "--num-processes, --process-id and --coordinator-bind join one: give "
                          "one or the other")
    if (args.processes is not None or args.coordinator is not None) and args.backend != "jax":
        raise usage_error("processes run on JAX's distributed runtime: add --backend jax")
    if all(v is None for v in joined):
        if args.coordinator_bind is not None:
            raise usage_error("--coordinator-bind goes with --coordinator HOST:PORT")
        return None
    if any(v is None for v in joined):
        raise usage_error("joining a cluster takes --coordinator HOST:PORT, "
                          "--num-processes N and --process-id I together")
    from shardc.distributed import Cluster

    return Cluster(args.coordinator, args.num_processes, args.process_id, args.timeout,
                   args.coordinator_bind)


def launch(
    args: argparse.Namespace, load: Callable[[argparse.Namespace], Any],
    read_input: Callable[[str], str],
) -> int:
    """Start `args.processes` local processes running this `run` command; `load(args)` is the
    module (for its device count)."""
    from shardc.launch import launch_local

    stdin_copy = None
    if args.input == "-":  # every process reads the program: from a file, not one stdin
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(read_input("-"))
        args = argparse.Namespace(**{**vars(args), "input": f.name})
        stdin_copy = f.name
    try:
        module = load(args)
        devices = max((m.num_devices for m in module.meshes.values()), default=1)
        return launch_local(process_argv(args), processes=args.processes, devices=devices,
                            timeout=args.timeout)
    finally:
        if stdin_copy is not None:
            os.unlink(stdin_copy)


def process_argv(args: argparse.Namespace) -> list[str]:
    """The `shardc run` command line each process of a local cluster runs: `args`' program
    and options, without those that start the cluster (the launcher adds each process's)."""
    argv = ["run", "--backend", "jax"] + ([args.input] if args.input is not None else [])
    for flag, name in _VALUE_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            argv += [flag, str(value)]
    for item in getattr(args, "limit", None) or []:  # --limit KEY=N, repeatable
        argv += ["--limit", item]
    return argv + [flag for flag, name in _FLAG_OPTIONS if getattr(args, name, False)]


def run_as_process(
    cluster: Cluster,
    result: Any,
    inputs: Sequence[np.ndarray],
    expected: Sequence[Expected] | None,
    output: str | None,
) -> int:
    """This process's part of `shardc run`: run on the cluster, check the shards held here
    against `expected` (with --check; compiler/check.py), print or save the outputs
    (process 0)."""
    from shardc.distributed import (
        check_on_cluster,
        crossing_collectives,
        gather_on_cluster,
        run_on_cluster,
    )
    from shardc.executors.jax_runtime import import_jax

    jax = import_jax()
    mine = [i for i, d in enumerate(jax.devices()) if d.process_index == jax.process_index()]
    total, crossing = crossing_collectives(result)
    print(f"{cluster.name}: devices {_ranges(mine)} of {jax.device_count()}; {total} "
          f"collectives, {crossing} across processes", flush=True)
    outputs = run_on_cluster(result, inputs)
    status = 0
    if expected is not None:
        lines, ok = check_on_cluster(outputs, expected)
        for line in lines:
            print(line, flush=True)
        if not ok:
            print(f"error: {cluster.name}: outputs differ from the unsharded reference beyond "
                  "tolerance", file=sys.stderr)
            status = 1
    if output or expected is None:
        whole = gather_on_cluster(outputs)
        if cluster.process_id == 0:
            if output:
                np.savez(output, *whole)
            else:
                for i, out in enumerate(whole):
                    print(f"output {i}: shape {list(out.shape)} {out.dtype}")
                    print(np.array2string(out, threshold=20, edgeitems=2, precision=4))
    return status


def _ranges(ids: list[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3, 6" (device indices, as the mesh's device ids count them)."""
    parts: list[str] = []
    for i in ids:
        if parts and parts[-1].split("-")[-1] == str(i - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{i}"
        else:
            parts.append(str(i))
    return ", ".join(parts)
