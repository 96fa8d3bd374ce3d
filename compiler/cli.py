"""The `shardc` command. See docs/cli.md and ../shared/design/CLI.md (the contract).

Exit codes: 0 success, 1 user error (bad input, failed check), 2 bad usage. Errors print
MLIR-style on stderr (`file:line:col: error: ...`); never a Python traceback. The subcommands
are in commands/ (commands/table.py lists them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from shardc.commands.table import SUBCOMMANDS
from shardc.commands.text_io import UsageError
from shardc.ir.diagnostics import Location, ShardcError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: usage, exit 2
        self.print_usage(sys.stderr)
        print(f"shardc: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="shardc", description="shardc: a sharding compiler for named device meshes"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
