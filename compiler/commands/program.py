"""The input program of `compile`, `run` and `explain`: a file (IN) or a model of the zoo
(`--model NAME --preset P --layers N --train sgd|adam`; without `--preset` the unannotated
model), with `--mesh dp=2,tp=4` applied; their shared options (`--auto-shard`,
`--memory-budget`); and compiling it with the default pipeline.

    module, fmt = load(args)              # fmt: the input's format (native for --model)
    result, fmt = compile_input(args)     # the pipeline's CompileResult
"""

from __future__ import annotations

import argparse

from shardc import formats
from shardc.commands.text_io import (
    UsageError,
    add_limit_option,
    display_name,
    limits_of,
    read_input,
)


def _parse_mesh(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    axes: dict[str, int] = {}
    for item in text.split(","):
        name, _, size = item.partition("=")
        if not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise UsageError(f"--mesh takes name=size pairs like dp=2,tp=4 (got {text!r})")
        axes[name.strip()] = int(size)
    return axes


def load(args: argparse.Namespace):
    """The input module (from a file, or the model zoo with --model), with --mesh applied."""
    from shardc.pipeline import with_mesh

    mesh = _parse_mesh(getattr(args, "mesh", None))
    if getattr(args, "model", None):
        from shardc.models.catalogue import MODELS

        spec = MODELS.get(args.model)
        if spec is None:
            raise UsageError(
                f"unknown model '{args.model}' (models: {', '.join(sorted(MODELS))}; "
                "see `shardc models`)"
            )
        params = {"layers": args.layers} if args.layers is not None else {}
        train = getattr(args, "train", None)
        if args.preset is None:
            if mesh is None:
                raise UsageError(
                    f"--model {args.model} without --preset is the unannotated model: give its "
                    "mesh with --mesh (e.g. --mesh dp=2,tp=4), or a --preset (see `shardc models`)"
                )
            return spec.unannotated(mesh, train=train, **params), "native"
        return spec.build(args.preset, mesh=mesh, train=train, **params), "native"
    if args.input is None:
        raise UsageError("give an input file (or - for standard input), or --model NAME")
    limits = limits_of(args)
    text = read_input(args.input, limits)
    name = display_name(args.input)
    fmt = formats.detect(text, args.input_format)
    module = formats.parse(text, name, fmt, limits)
    if mesh:
        module = with_mesh(formats.emit(module, "native"), mesh, name)
    return module, fmt


def compile_input(args: argparse.Namespace):
    from shardc.pipeline import compile

    module, fmt = load(args)
    return compile(module, compile_options(args)), fmt


def compile_options(args: argparse.Namespace):
    """The `CompileOptions` the input options ask for."""
    from shardc.pipeline import CompileOptions

    if args.memory_budget is not None and not args.auto_shard:
        raise UsageError("--memory-budget is the budget of --auto-shard; give both")
    combine = getattr(args, "combine_threshold", None)
    latency = getattr(args, "collective_latency", None)
    if args.auto_shard_effort is not None and not args.auto_shard:
        raise UsageError("--auto-shard-effort is the effort of --auto-shard; give both")
    return CompileOptions(
        strategy=args.strategy,
        strict=args.strict,
        reshard_algorithm=args.reshard_algorithm,
        auto_shard=args.auto_shard,
        memory_budget=args.memory_budget,
        auto_shard_effort=args.auto_shard_effort,
        gather_weights=getattr(args, "gather_weights", "auto"),
        **({} if combine is None else {"combine_threshold": combine}),
        **({} if latency is None else {"collective_latency": latency}),
    )


def parse_threshold(text: str) -> int:
    """`--combine-threshold`: bytes as `parse_bytes` reads them, or 0 (combining off)."""
    return 0 if text.strip() == "0" else parse_bytes(text)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number (got {text!r})")
    return value


def parse_bytes(text: str) -> int:
    """`4096`, `64KiB`, `1.5MiB`, `2GiB` -> bytes (argparse type of --memory-budget)."""
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "b": 1}
    t = text.strip().lower()
    for unit, factor in units.items():
        if t.endswith(unit):
            t, scale = t[: -len(unit)].strip(), factor
            break
    else:
        scale = 1
    try:
        value = float(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected bytes like 131072, 128KiB, 1.5MiB or 2GiB (got {text!r})"
        ) from None
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a positive whole number of bytes ({text!r})")
    return int(value)


def add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", nargs="?", help="input file, or - for standard input")
    p.add_argument("--mesh", default=None, help="mesh axis sizes, e.g. dp=2,tp=4")
    p.add_argument("--model", default=None, help="compile a model-zoo program instead of IN")
    p.add_argument("--preset", default=None, help="the model's annotation preset (dp, tp, ...)")
    p.add_argument("--layers", type=int, default=None, help="the model's depth")
    p.add_argument(
        "--train",
        choices=["sgd", "adam"],
        default=None,
        help="the model's training step (forward, loss, backward, this optimizer's update)",
    )
    p.add_argument("--strategy", choices=["aggressive", "basic"], default="aggressive")
    p.add_argument(
        "--reshard-algorithm",
        choices=["cheapest", "shardy"],
        default="cheapest",
        help="reshards become shardc's cheapest collectives (default) or Shardy's",
    )
    p.add_argument("--strict", action="store_true", help="ops without a sharding rule are errors")
    p.add_argument("--input-format", choices=["native", "sdy"], default=None)
    p.add_argument(
        "--auto-shard",
        action="store_true",
        help="choose every sharding nobody wrote (an integer program; docs/autoshard.md)",
    )
    p.add_argument(
        "--memory-budget",
        type=parse_bytes,
        default=None,
        metavar="BYTES",
        help="with --auto-shard: bytes each device may hold (131072, 128KiB, 1.5MiB)",
    )
    p.add_argument(
        "--combine-threshold",
        type=parse_threshold,
        default=None,
        metavar="BYTES",
        help="combine independent collectives of the per-device program up to this many bytes "
        "(default: XLA's 30 MiB + 7; 0: off; docs/spmd.md)",
    )
    p.add_argument(
        "--gather-weights",
        choices=["auto", "always", "never"],
        default="auto",
        help="FSDP's plan, weights gathered where they are defined: compare it with the "
        "propagated plan and keep the cheaper (auto), take it, or not (docs/spmd.md)",
    )
    p.add_argument(
        "--collective-latency",
        type=parse_threshold,
        default=None,
        metavar="BYTES",
        help="with --gather-weights auto: what one issued collective costs beside its bytes "
        "(default 16KiB)",
    )
    p.add_argument(
        "--auto-shard-effort",
        type=_positive,
        default=None,
        metavar="TICKS",
        help="with --auto-shard: the solver's work per solve, in ticks (default 4000); the "
        "same program gives the same plan at any load",
    )
    add_limit_option(p)
