"""What every subcommand reads and writes: input text (a file or `-` for stdin, split at
`// -----` lines with `--split-input-file`), output text (a file or stdout), and bad usage.

    text = read_input(args.input)                 # a located ShardcError if unreadable
    for chunk in split_input(text, split=True):   # chunk.text, chunk.first_line (0-based)
        ...
    write_output(text, args.output)               # None or "-": stdout
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from shardc.ir.diagnostics import ShardcError

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


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path
