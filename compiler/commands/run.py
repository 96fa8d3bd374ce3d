"""`shardc run IN`: compile, run on every device of the mesh (numpy or JAX), and with `--check`
compare with the unsharded reference interpreter (tolerance relative to the output's scale).

Inputs are random (`--seed`; floats normal with deviation `--scale`, integers in [0, 8)) or an
`.npz` with one array per argument (`--inputs`).
"""

from __future__ import annotations

import argparse
import sys

from shardc.commands.program import add_input_options, compile_input, load
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


def default_rtol(dtype: str) -> float:
    """Tolerance relative to the largest magnitude of an output (integers: exact)."""
    if dtype in ("bfloat16", "float16"):
        return 2e-2
    if dtype == "float32":
        return 1e-5
    if dtype == "float64":
        return 1e-12
    return 0.0


def compare(got, want, rtol: float, atol: float) -> tuple[float, float, bool]:
    """max |got - want|, that over max |want|, and whether it is within atol + rtol*max|want|.

    Sharded programs sum in a different order, so errors are judged against the output's scale,
    not element by element (an element near zero may differ by more than its own rtol)."""
    import numpy as np

    # Complex outputs compare as complex numbers (magnitudes of differences), never cast to real.
    dtype = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    g = np.asarray(got, dtype=dtype)
    w = np.asarray(want, dtype=dtype)
    if g.shape != w.shape:
        return float("inf"), float("inf"), False
    if not w.size:
        return 0.0, 0.0, True
    same = (g == w) | (np.isnan(g) & np.isnan(w))  # equal infinities too (inf - inf is nan)
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g - w))
    err = float(np.max(diff))
    scale = float(np.max(np.abs(np.where(np.isfinite(w), w, 0.0))))
    rel = err / scale if scale else err
    return err, rel, bool(err <= atol + rtol * scale)


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

    from shardc.executors.reference import run_reference
    from shardc.run_cluster import cluster_of, launch, run_as_process

    cluster = cluster_of(args, UsageError)
    if args.processes is not None:
        return launch(args, lambda a: load(a)[0], read_input)
    result, _ = compile_input(args)
    for w in result.warnings:
        print(w, file=sys.stderr)
    if cluster is not None:
        cluster.join()
    elif args.backend == "jax":
        _simulate_cpu_devices(result.module)
    source = result.module
    limits = limits_of(args)
    check_run(source, limits)
    if args.inputs:
        inputs = _read_inputs(args.inputs, source)
    else:
        inputs = random_inputs(source, args.seed, args.scale)
    if cluster is not None:
        expected = run_reference(source, inputs, limits=limits) if args.check else None

        def judge(got, want):
            rtol = args.rtol if args.rtol is not None else default_rtol(str(want.dtype))
            return (*compare(got, want, rtol, args.atol), rtol)

        return run_as_process(cluster, result, inputs, expected, judge, args.output)
    outputs = result.run(inputs, backend=args.backend, limits=limits)
    status = 0
    if args.check:
        expected = run_reference(source, inputs, limits=limits)
        for i, (got, want) in enumerate(zip(outputs, expected)):
            rtol = args.rtol if args.rtol is not None else default_rtol(str(want.dtype))
            err, rel, ok = compare(got, want, rtol, args.atol)
            print(
                f"output {i}: max abs error {err:.3e}, relative to max |value| {rel:.3e} "
                f"(tolerance {rtol:g}) {'ok' if ok else 'FAILED'}"
            )
            if not ok:
                status = 1
        if status:
            print(
                "error: outputs differ from the unsharded reference beyond tolerance",
                file=sys.stderr,
            )
    if args.output:
        np.savez(args.output, *outputs)
    elif not args.check:
        for i, out in enumerate(outputs):
            print(f"output {i}: shape {list(out.shape)} {out.dtype}")
            print(np.array2string(out, threshold=20, edgeitems=2, precision=4))
    return status


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
        help="compare with the unsharded reference; exit 1 past tolerance",
    )
    p.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="tolerance relative to max |output| (default: by dtype, f32 1e-5)",
    )
    p.add_argument("--atol", type=float, default=0.0)
    p.add_argument("-o", "--output", default=None, help="save outputs to this .npz")
    add_cluster_options(p)
    p.set_defaults(func=cmd_run)
