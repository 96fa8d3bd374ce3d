"""Subcommands beyond `opt`: each adds its parser to `shardc.cli.EXTRA_COMMANDS`."""

from __future__ import annotations

import argparse
import sys

from shardc import cli, formats


def _cmd_convert(target: str):
    def run(args: argparse.Namespace) -> int:
        text = cli.read_input(args.input)
        name = cli.display_name(args.input)
        fmt = formats.detect(text, args.input_format)
        module = formats.parse(text, name, fmt)
        cli.write_output(formats.emit(module, target), args.output)
        return 0

    return run


def _add_import_export(sub: argparse._SubParsersAction) -> None:
    for command, target, help_text in (
        ("import", "native", "StableHLO+sdy text -> native shardc IR"),
        ("export", "sdy", "native shardc IR -> StableHLO+sdy text"),
    ):
        p = sub.add_parser(command, help=help_text, description=help_text)
        p.add_argument("input", metavar="IN", help="input file, or - for standard input")
        p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
        p.add_argument("--input-format", choices=["native", "sdy"], default=None)
        p.set_defaults(func=_cmd_convert(target))


cli.EXTRA_COMMANDS.append(_add_import_export)


# ----- compile and run ------------------------------------------------------------------------


def _parse_mesh(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    axes: dict[str, int] = {}
    for item in text.split(","):
        name, _, size = item.partition("=")
        if not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise cli.UsageError(f"--mesh takes name=size pairs like dp=2,tp=4 (got {text!r})")
        axes[name.strip()] = int(size)
    return axes


def _load(args: argparse.Namespace):
    """The input module (from a file, or the model zoo with --model), with --mesh applied."""
    from shardc.pipeline import with_mesh

    mesh = _parse_mesh(getattr(args, "mesh", None))
    if getattr(args, "model", None):
        from shardc.models.catalogue import MODELS

        spec = MODELS.get(args.model)
        if spec is None:
            raise cli.UsageError(
                f"unknown model '{args.model}' (models: {', '.join(sorted(MODELS))}; "
                "see `shardc models`)"
            )
        params = {"layers": args.layers} if args.layers is not None else {}
        return spec.build(args.preset, mesh=mesh, **params), "native"
    if args.input is None:
        raise cli.UsageError("give an input file (or - for standard input), or --model NAME")
    text = cli.read_input(args.input)
    name = cli.display_name(args.input)
    fmt = formats.detect(text, args.input_format)
    module = formats.parse(text, name, fmt)
    if mesh:
        module = with_mesh(formats.emit(module, "native"), mesh, name)
    return module, fmt


def _compile(args: argparse.Namespace):
    from shardc.pipeline import CompileOptions, compile

    module, fmt = _load(args)
    options = CompileOptions(strategy=args.strategy, strict=args.strict)
    return compile(module, options), fmt


def cmd_compile(args: argparse.Namespace) -> int:
    from shardc.report import report_json, report_text

    result, fmt = _compile(args)
    for w in result.warnings:
        print(w, file=sys.stderr)
    if args.report == "json":
        text = report_json(result.report)
    elif args.report == "text":
        text = report_text(result.report)
    else:
        emit = args.emit or fmt
        text = formats.emit(
            result.spmd if emit == "spmd" else result.module, "native" if emit == "spmd" else emit
        )
    cli.write_output(text, args.output)
    return 0


def _random_inputs(module, seed: int) -> list:
    import numpy as np

    from shardc.ir.types import is_float, numpy_dtype

    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        shape, dtype = a.type.shape, a.type.dtype
        if is_float(dtype):
            out.append(rng.standard_normal(shape).astype(numpy_dtype(dtype)))
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

    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        return float("inf"), float("inf"), False
    if not w.size:
        return 0.0, 0.0, True
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w))
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

    result, _ = _compile(args)
    for w in result.warnings:
        print(w, file=sys.stderr)
    if args.backend == "jax":
        _simulate_cpu_devices(result.module)
    source = result.module
    inputs = _read_inputs(args.inputs, source) if args.inputs else _random_inputs(source, args.seed)
    outputs = result.run(inputs, backend=args.backend)
    status = 0
    if args.check:
        expected = run_reference(source, inputs)
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


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", nargs="?", help="input file, or - for standard input")
    p.add_argument("--mesh", default=None, help="mesh axis sizes, e.g. dp=2,tp=4")
    p.add_argument("--model", default=None, help="compile a model-zoo program instead of IN")
    p.add_argument("--preset", default=None, help="the model's annotation preset (dp, tp, ...)")
    p.add_argument("--layers", type=int, default=None, help="the model's depth")
    p.add_argument("--strategy", choices=["aggressive", "basic"], default="aggressive")
    p.add_argument("--strict", action="store_true", help="ops without a sharding rule are errors")
    p.add_argument("--input-format", choices=["native", "sdy"], default=None)


def _add_compile_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compile",
        help="propagate, insert collectives, lower to SPMD; report",
        description="Run the default pipeline and print the result or a report.",
    )
    _add_input_options(p)
    p.add_argument(
        "--emit",
        choices=["native", "sdy", "spmd"],
        default=None,
        help="print the global program (native/sdy) or the per-device program (spmd)",
    )
    p.add_argument(
        "--report",
        choices=["text", "json"],
        default=None,
        help="print the report instead of the program",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser(
        "run",
        help="compile and run on the mesh's devices",
        description="Compile IN and run it on every device of its mesh.",
    )
    _add_input_options(p)
    p.add_argument("--backend", choices=["numpy", "jax"], default="numpy")
    p.add_argument("--inputs", default=None, help=".npz with one array per argument")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs (no --inputs)")
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
    p.set_defaults(func=cmd_run)


cli.EXTRA_COMMANDS.append(_add_compile_run)


# ----- models and explain ---------------------------------------------------------------------


def cmd_models(args: argparse.Namespace) -> int:
    from shardc.models.catalogue import MODELS

    for name, spec in MODELS.items():
        print(f"{name:12} {spec.description}")
        params = ", ".join(f"{k}={v}" for k, v in spec.parameters().items())
        print(f"{'':12} parameters: {params}")
        for preset_name, preset in spec.presets.items():
            mesh = ",".join(f"{a}={n}" for a, n in preset.mesh.items())
            print(f"{'':12}   --preset {preset_name:<8} ({mesh}) {preset.description}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from shardc.explain import explain_text, to_dot, to_html, visualize_sharding
    from shardc.pipeline import CompileOptions, compile

    module, _ = _load(args)
    result = compile(module, CompileOptions(strategy=args.strategy, strict=args.strict))
    for w in result.warnings:
        print(w, file=sys.stderr)
    origins = result.context.data.get("origins")
    if args.html:
        title = f"shardc: {args.model or cli.display_name(args.input)}"
        cli.write_output(to_html(result.module, origins, title=title), args.html)
    if args.dot:
        cli.write_output(to_dot(result.module), args.dot)
    text = explain_text(result.module, origins)
    if args.value:
        func = result.module.main
        from shardc.ir.printer import Namer

        name = Namer(func)
        wanted = args.value if args.value.startswith("%") else "%" + args.value
        values = list(func.args) + [r for op in func.body for r in op.results]
        match = [v for v in values if name(v) == wanted]
        if not match:
            raise cli.UsageError(f"no value {wanted} in @{func.name}")
        v = match[0]
        text = f"{wanted}: {v.type.text()}\n" + visualize_sharding(v.type.shape, v.mapping)
    if not (args.html or args.dot) or args.value:
        cli.write_output(text if text.endswith("\n") else text + "\n", args.output)
    return 0


def _add_models_explain(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the model zoo")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser(
        "explain",
        help="per value: sharding, origin, local shape; pictures",
        description="Compile IN and explain where every value's sharding came "
        "from; --html/--dot draw the program coloured by sharding.",
    )
    _add_input_options(p)
    p.add_argument("--html", default=None, metavar="OUT", help="write a self-contained HTML page")
    p.add_argument("--dot", default=None, metavar="OUT", help="write a Graphviz graph")
    p.add_argument("--value", default=None, help="draw how one value's blocks map onto devices")
    p.add_argument(
        "-o", "--output", default=None, help="output file for the text (default: stdout)"
    )
    p.set_defaults(func=cmd_explain)


cli.EXTRA_COMMANDS.append(_add_models_explain)
