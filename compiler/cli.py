"""The `shardc` command. See docs/cli.md and ../shared/design/CLI.md (the contract).

Exit codes: 0 success, 1 user error (bad input, failed check), 2 bad usage. Errors print
MLIR-style on stderr (`file:line:col: error: ...`); never a Python traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc import formats
from shardc.ir.diagnostics import Location, ShardcError
from shardc.passes.manager import (
    DESCRIPTIONS,
    PASSES,
    PassContext,
    PassManager,
    load_all_passes,
    parse_pipeline,
)

SPLIT_MARKER = "// -----"


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


@dataclass
class Chunk:
    text: str
    first_line: int  # 0-based line offset of the chunk in the file


def read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise ShardcError(f"cannot open '{path}': no such file") from None
    except IsADirectoryError:
        raise ShardcError(f"cannot open '{path}': it is a directory") from None
    except UnicodeDecodeError as e:
        raise ShardcError(f"'{path}' is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ShardcError(f"cannot open '{path}': {e.strerror}") from None


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, 0)]
    chunks, current, start = [], [], 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk("".join(current), start))
            current, start = [], i + 1
        else:
            current.append(line)
    chunks.append(Chunk("".join(current), start))
    return chunks


def write_output(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ShardcError(f"cannot write '{path}': {e.strerror}") from None


def parse_pipeline_or_usage(text: str):
    """A bad pipeline is bad usage (exit 2), not bad input."""
    from shardc.ir.diagnostics import PassError

    try:
        return parse_pipeline(text) if text else []
    except PassError as e:
        raise UsageError(e.message) from None


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


# ----- subcommands ------------------------------------------------------------------------------


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


# ----- entry point ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: usage, exit 2
        self.print_usage(sys.stderr)
        print(f"shardc: error: {message}", file=sys.stderr)
        raise SystemExit(2)


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="shardc", description="shardc: a sharding compiler for named device meshes"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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

    p = sub.add_parser("passes", help="list the registered passes and aliases")
    p.set_defaults(func=cmd_passes)

    for extra in EXTRA_COMMANDS:
        extra(sub)
    return parser


# Other modules add subcommands here (compile, run, import, export, ...).
EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    from shardc import commands  # noqa: F401 - registers the other subcommands

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except ShardcError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except UsageError as e:
        print(f"shardc: error: {e}", file=sys.stderr)
        return 2
    except RecursionError:
        print("error: input nests too deeply for shardc to process", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in shardc: say so plainly, without a traceback
        where = Location("<shardc>", 0, 0)
        print(
            f"error: internal compiler error ({type(e).__name__}: {e}); this is a bug in shardc, "
            f"please report it with the input [{where.file}]",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
