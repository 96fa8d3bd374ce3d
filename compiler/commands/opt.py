"""`shardc opt IN -p PIPELINE` (parse, run passes, print) and `shardc passes` (list them)."""

from __future__ import annotations

import argparse
import sys

from shardc import formats
from shardc.commands.text_io import (
    SPLIT_MARKER,
    UsageError,
    display_name,
    read_input,
    split_input,
    write_output,
)
from shardc.ir.diagnostics import ShardcError
from shardc.passes.manager import (
    DESCRIPTIONS,
    PASSES,
    PassContext,
    PassManager,
    load_all_passes,
    parse_pipeline,
)


def parse_pipeline_or_usage(text: str):
    """A bad pipeline is bad usage (exit 2), not bad input."""
    from shardc.ir.diagnostics import PassError

    try:
        return parse_pipeline(text) if text else []
    except PassError as e:
        raise UsageError(e.message) from None


def cmd_opt(args: argparse.Namespace) -> int:
    load_all_passes()
    text = read_input(args.input)
    name = display_name(args.input)
    pipeline = parse_pipeline_or_usage(args.pipeline)
    outputs: list[str] = []
    failed = False
    for chunk in split_input(text, args.split_input_file):
        padded = "\n" * chunk.first_line + chunk.text
        try:
            outputs.append(_opt_one(padded, name, pipeline, args))
        except ShardcError as e:
            if e.source is None:
                e.source = padded
            print(e.render(), file=sys.stderr)
            failed = True
            if not args.split_input_file:
                return 1
    if outputs:
        write_output(("\n" + SPLIT_MARKER + "\n\n").join(outputs), args.output)
    return 1 if failed else 0


def _opt_one(text: str, name: str, pipeline, args: argparse.Namespace) -> str:
    fmt = formats.detect(text, args.input_format)
    module = formats.parse(text, name, fmt)
    emit = args.emit or fmt

    def print_after(p, m) -> None:
        print(f"// -----// IR Dump After {p.text()} //----- //", file=sys.stderr)
        print(formats.emit(m, emit), file=sys.stderr)

    ctx = PassContext(
        strict=getattr(args, "strict", False), explain=getattr(args, "explain", False)
    )
    manager = PassManager(pipeline, print_after=print_after if args.print_ir_after_all else None)
    manager.run(module, ctx)
    for w in ctx.warnings:
        print(w.render(), file=sys.stderr)
    if args.timing:
        total = sum(ctx.timings.values())
        print("===-------------------------------------------===", file=sys.stderr)
        print(f"  Pass execution timing report (total {total:.4f} s)", file=sys.stderr)
        for pass_name, seconds in ctx.timings.items():
            print(f"  {seconds:10.4f} s  {pass_name}", file=sys.stderr)
    return formats.emit(module, emit)


def cmd_passes(args: argparse.Namespace) -> int:
    load_all_passes()
    from shardc.passes.manager import ALIASES

    for name in sorted(PASSES):
        print(f"{name:34} {DESCRIPTIONS.get(name, '')}")
    for alias, (target, opts) in sorted(ALIASES.items()):
        preset = ",".join(f"{k.replace('_', '-')}={v}" for k, v in opts.items())
        print(f"{alias:34} alias of {target}" + (f"{{{preset}}}" if preset else ""))
    return 0


def _add_format_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input-format",
        choices=["native", "sdy"],
        default=None,
        help="input format (default: detected from the text)",
    )
    p.add_argument(
        "--emit",
        choices=["native", "sdy"],
        default=None,
        help="output format (default: the input's)",
    )


def add_opt(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "opt",
        help="parse, run passes, print (no passes: round trip)",
        description="Parse IN, run the pass pipeline, print the result.",
    )
    p.add_argument("input", metavar="IN", help="input file, or - for standard input")
    p.add_argument(
        "-p",
        "--pipeline",
        "--passes",
        dest="pipeline",
        default="",
        help='pass pipeline, e.g. "propagate{strategy=basic},insert-reshards"',
    )
    p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    p.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"treat '{SPLIT_MARKER}' lines as separators between independent inputs",
    )
    p.add_argument("--print-ir-after-all", action="store_true", help="print IR after every pass")
    p.add_argument("--timing", action="store_true", help="print per-pass timings on stderr")
    p.add_argument(
        "--explain",
        action="store_true",
        help="record why each dim got its axes (as attributes in the output)",
    )
    p.add_argument(
        "--strict", action="store_true", help="turn fallbacks (e.g. missing rules) into errors"
    )
    _add_format_options(p)
    p.set_defaults(func=cmd_opt)


def add_passes(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("passes", help="list the registered passes and aliases")
    p.set_defaults(func=cmd_passes)
