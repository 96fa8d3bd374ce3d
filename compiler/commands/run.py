"""`shardc run IN`: compile, run on every device of the mesh (numpy or JAX), and with `--check`
compare every output with the unsharded program (compiler/check.py: a float64 reference, within
a bound derived from the unsharded run's own error).

Inputs are random (`--seed`; floats normal with deviation `--scale`, integers in [0, 8)) or an
`.npz` with one array per argument (`--inputs`).
"""

from __future__ import annotations

import argparse
import sys

from shardc.commands.program import add_input_options, compile_options, load
from shardc.commands.text_io import UsageError, limits_of, read_input
from shardc.ir.limits import check_run
from shardc.run_cluster import add_cluster_options


def random_inputs(module, seed: int, scale: float = 1.0) -> list:
    """Random arguments for `module.main` (floats normal times `scale`, integers in 0..7), from
    `seed`."""
    import numpy as np

    from shardc.ir.types import is_float, numpy_dtype

    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        shape, dtype = a.type.shape, a.type.dtype
        if is_float(dtype):
            out.append((scale * rng.standard_normal(shape)).astype(numpy_dtype(dtype)))
        elif dtype == "i1":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append(rng.integers(0, 8, shape).astype(numpy_dtype(dtype)))
    return out


def _read_inputs(path: str, module) -> list:
    import numpy as np

    from shardc.ir.diagnostics import ExecutionError

    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        raise ExecutionError(f"cannot read inputs from '{path}': {e}") from None
    args = module.main.args
    names = [(a.name_hint or str(i)) for i, a in enumerate(args)]
    out = []
    for i, name in enumerate(names):
        for key in (name, f"%{name}", f"arg{i}", f"arr_{i}"):
            if key in data:
                out.append(data[key])
                break
        else:
            raise ExecutionError(
                f"'{path}' has no array for argument {i} (%{name}); "
                f"name it '{name}' or 'arr_{i}' (found: {', '.join(data.files) or 'nothing'})"
            )
    return out


def _simulate_cpu_devices(module) -> None:
    """On a CPU-only machine, ask JAX (before it is imported) for as many simulated devices as
    the mesh has, as `XLA_FLAGS=--xla_force_host_platform_device_count=N` would."""
    import os

    if "jax" in sys.modules or "XLA_FLAGS" in os.environ:
        return
    n = max((m.num_devices for m in module.meshes.values()), default=1)
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"


def cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    from shardc.check import CheckOptions, expectations
    from shardc.pipeline import compile
    from shardc.run_cluster import cluster_of, launch, run_as_process

    cluster = cluster_of(args, UsageError)
    if args.processes is not None:
        return launch(args, lambda a: load(a)[0], read_input)
    source, _ = load(args)  # the program as given: the check's reference runs it
    result = compile(source, compile_options(args))
    for w in result.warnings:
        print(w, file=sys.stderr)
    if cluster is not None:
        cluster.join()
    elif args.backend == "jax":
        _simulate_cpu_devices(source)
    limits = limits_of(args)
    check_run(result.module, limits)  # the compiled module: its values say how they are laid out
    if args.inputs:
        inputs = _read_inputs(args.inputs, source)
    else:
        inputs = random_inputs(source, args.seed, args.scale)
    options = CheckOptions(args.rtol, args.atol)

    def expected() -> list:
        found, notes = expectations(source, inputs, backend=args.backend, options=options,
                                    limits=limits)
        for note in notes:
            print(note, file=sys.stderr)
        return found

    if cluster is not None:
        return run_as_process(cluster, result, inputs, expected() if args.check else None,
                              args.output)
    outputs = result.run(inputs, backend=args.backend, limits=limits)
    status = 0
    if args.check:
        status = report_check(outputs, expected())
    if args.output:
        np.savez(args.output, *outputs)
    elif not args.check:
        for i, out in enumerate(outputs):
            print(f"output {i}: shape {list(out.shape)} {out.dtype}")
            print(np.array2string(out, threshold=20, edgeitems=2, precision=4))
    return status


def report_check(outputs: list, expected: list, prefix: str = "") -> int:
    """Print each output's verdict (compiler/check.py); 1 when one failed. `prefix` names the
    process of a cluster."""
    from shardc.check import judge

    failed = unchecked = 0
    for i, (got, e) in enumerate(zip(outputs, expected)):
        verdict = judge(got, e)
        print(f"output {i}: {verdict.text}")
        failed += not verdict.ok
        unchecked += verdict.ok and not e.checked
    if unchecked:
        print(f"warning: {prefix}{unchecked} of {len(expected)} outputs not checked: their "
              "reference is NaN/inf everywhere; other inputs (--inputs, --seed, --scale) may "
              "give numbers", file=sys.stderr)
    if failed:
        print(f"error: {prefix}outputs differ from the unsharded reference beyond tolerance",
              file=sys.stderr)
    return int(bool(failed))


def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="compile and run on the mesh's devices",
        description="Compile IN and run it on every device of its mesh.",
    )
    add_input_options(p)
    p.add_argument("--backend", choices=["numpy", "jax"], default="numpy")
    p.add_argument("--inputs", default=None, help=".npz with one array per argument")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs (no --inputs)")
    p.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="random float inputs are normal with this standard deviation (default 1)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compare with the unsharded program (an f64 reference, within 8x the unsharded "
        "run's own error + rtol x max |output|); exit 1 past that bound",
    )
    p.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="instead of the derived bound, a fixed tolerance relative to max |output| against "
        "the reference in the program's precision (without: the bound's floor, f32 1e-5)",
    )
    p.add_argument("--atol", type=float, default=None,
                   help="with or without --rtol: a fixed bound, absolute part")
    p.add_argument("-o", "--output", default=None, help="save outputs to this .npz")
    add_cluster_options(p)
    p.set_defaults(func=cmd_run)
