"""What every subcommand reads and writes: input text (a file or `-` for stdin, split at
`// -----` lines with `--split-input-file`), output text (a file or stdout), and bad usage.

    text = read_input(args.input, limits_of(args))  # a located ShardcError if unreadable
    for chunk in split_input(text, split=True):   # chunk.text, chunk.first_line (0-based)
        ...
    write_output(text, args.output)               # None or "-": stdout
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from shardc.ir.diagnostics import Location, ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits

SPLIT_MARKER = "// -----"


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


@dataclass
class Chunk:
    text: str
    first_line: int  # 0-based line offset of the chunk in the file


def add_limit_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--limit", action="append", default=[], metavar="KEY=N",
        help="raise a bound (devices, depth, file-mb, run-mb, while-iterations; docs/cli.md)",
    )


def limits_of(args: argparse.Namespace) -> Limits:
    items = getattr(args, "limit", None) or []
    if not items:
        return DEFAULT_LIMITS
    try:
        return Limits.parse(items)
    except ShardcError as e:
        raise UsageError(e.message) from None


def read_input(path: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """The text of `path` (`-`: stdin); a file over `limits.file_mb` is refused before reading."""
    budget = limits.file_mb << 20
    if path == "-":
        text = sys.stdin.read(budget + 1)
        if len(text) > budget:
            raise _too_large("<stdin>", limits)
        return text
    try:
        with open(path, encoding="utf-8") as f:
            if os.fstat(f.fileno()).st_size > budget:
                raise _too_large(path, limits)
            return f.read()
    except FileNotFoundError:
        raise ShardcError(f"cannot open '{path}': no such file") from None
    except IsADirectoryError:
        raise ShardcError(f"cannot open '{path}': it is a directory") from None
    except UnicodeDecodeError as e:
        raise ShardcError(f"'{path}' is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ShardcError(f"cannot open '{path}': {e.strerror}") from None


def _too_large(path: str, limits: Limits) -> ShardcError:
    return ShardcError(
        f"the input is larger than the limit of {limits.file_mb} MiB (raise it with --limit "
        "file-mb=N)", Location(path, 1, 1)
    )


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


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path
