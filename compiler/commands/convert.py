"""`shardc import IN` (StableHLO+sdy text -> native) and `shardc export IN` (native -> sdy)."""

from __future__ import annotations

import argparse

from shardc import formats
from shardc.commands.text_io import (
    add_limit_option,
    display_name,
    limits_of,
    read_input,
    write_output,
)


def _cmd_convert(target: str):
    def run(args: argparse.Namespace) -> int:
        limits = limits_of(args)
        text = read_input(args.input, limits)
        name = display_name(args.input)
        fmt = formats.detect(text, args.input_format)
        module = formats.parse(text, name, fmt, limits)
        write_output(formats.emit(module, target), args.output)
        return 0

    return run


def add_import_export(sub: argparse._SubParsersAction) -> None:
    for command, target, help_text in (
        ("import", "native", "StableHLO+sdy text -> native shardc IR"),
        ("export", "sdy", "native shardc IR -> StableHLO+sdy text"),
    ):
        p = sub.add_parser(command, help=help_text, description=help_text)
        p.add_argument("input", metavar="IN", help="input file, or - for standard input")
        p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
        p.add_argument("--input-format", choices=["native", "sdy"], default=None)
        add_limit_option(p)
        p.set_defaults(func=_cmd_convert(target))
