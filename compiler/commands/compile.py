"""`shardc compile IN`: the default pipeline; prints the global or per-device program, or the
report (`--report json|text`, report.py)."""

from __future__ import annotations

import argparse
import sys

from shardc import formats
from shardc.commands.program import add_input_options, compile_input
from shardc.commands.text_io import write_output


def cmd_compile(args: argparse.Namespace) -> int:
    from shardc.report import report_json, report_text

    if args.mesh_search:
        result, fmt = _searched(args)
    else:
        result, fmt = compile_input(args)
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
    write_output(text, args.output)
    return 0


def _searched(args: argparse.Namespace):
    """`--mesh-search`: auto-shard on every shape of the mesh; the best one, its report listing
    every shape (mesh_search.py)."""
    from shardc.commands.program import compile_options, load
    from shardc.commands.text_io import UsageError
    from shardc.mesh_search import best_trial, search_meshes

    if not args.auto_shard:
        raise UsageError("--mesh-search tries auto-shard on each mesh shape: give --auto-shard")
    module, fmt = load(args)
    trials = search_meshes(module, compile_options(args))
    for t in trials:
        line = (f"mesh-search: {t.summary()['mesh']}: " + (t.error or (
            f"{t.comm_bytes} bytes per device, peak {t.peak}, {t.status}"
            + ("" if t.fits else " (over the budget)"))))
        print(line, file=sys.stderr)
    best = best_trial(trials)
    if best is None or best.result is None:
        raise UsageError("--mesh-search: no mesh shape has a plan within the budget")
    best.result.report["mesh_search"] = [t.summary() for t in trials]
    return best.result, fmt


def add_compile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compile",
        help="propagate, insert collectives, lower to SPMD; report",
        description="Run the default pipeline and print the result or a report.",
    )
    add_input_options(p)
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
    p.add_argument(
        "--mesh-search",
        action="store_true",
        help="with --auto-shard: try every shape of the mesh's devices over its axes and "
        "compile the one whose plan moves least",
    )
    p.set_defaults(func=cmd_compile)
