"""Every `shardc` subcommand, in the order `shardc --help` lists them.

Each entry adds its parser (with `set_defaults(func=...)`) to argparse's subparsers; cli.py
builds the command line from this table. A new subcommand is a module here and one line below.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from shardc.commands.compile import add_compile
from shardc.commands.convert import add_import_export
from shardc.commands.explain import add_explain, add_models
from shardc.commands.opt import add_opt, add_passes
from shardc.commands.run import add_run

AddSubcommand = Callable[[argparse._SubParsersAction], None]

SUBCOMMANDS: tuple[AddSubcommand, ...] = (
    add_opt,  # opt
    add_passes,  # passes
    add_import_export,  # import, export
    add_compile,  # compile
    add_run,  # run
    add_models,  # models
    add_explain,  # explain
)
