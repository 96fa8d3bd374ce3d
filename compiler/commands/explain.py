"""`shardc models` (the zoo) and `shardc explain IN` (where each value's sharding came from;
`--html`/`--dot` draw the program coloured by sharding, `--value` one value's device grid;
`--collectives` why each collective is there, `--suggest N` the measured changes that remove or
cheapen it, `--lint` the silent mistakes; docs/explain.md)."""

from __future__ import annotations

import argparse
import sys

from shardc.commands.program import add_input_options, compile_options, load
from shardc.commands.text_io import UsageError, display_name, write_output


def cmd_models(args: argparse.Namespace) -> int:
    from shardc.models.catalogue import MODELS

    for name, spec in MODELS.items():
        print(f"{name:12} {spec.description}")
        params = ", ".join(f"{k}={v}" for k, v in spec.parameters().items())
        print(f"{'':12} parameters: {params}")
        for preset_name, preset in spec.presets.items():
            mesh = ",".join(f"{a}={n}" for a, n in preset.mesh.items())
            print(f"{'':12}   --preset {preset_name:<8} ({mesh}) {preset.description}")
    print("\nEvery model and preset also has a training step: --train sgd|adam (forward, loss,")
    print("backward, optimizer update; docs/guide.md, \"Training steps\").")
    return 0


def cmd_collectives(args: argparse.Namespace) -> int:
    """`--collectives`, `--suggest N`, `--lint`: compiler/explain/collectives_report.py."""
    import json

    from shardc.explain.collectives_report import collectives_report
    from shardc.explain.html_page import to_html

    if args.suggest < 0:
        raise UsageError("--suggest takes a number of suggestions per collective (0 or more)")
    module, _ = load(args)
    report = collectives_report(module, compile_options(args), suggest_n=args.suggest)
    for w in report.base.context.warnings:
        print(w.render(), file=sys.stderr)
    if args.html:
        title = f"shardc: {args.model or display_name(args.input)}"
        origins = report.base.context.data.get("origins")
        write_output(to_html(report.base.module, origins, title=title, collectives=report),
                     args.html)
    if args.format == "json":
        data = report.to_json()
        if args.lint and not args.collectives and not args.suggest:
            data = {"lints": data["lints"]}
        write_output(json.dumps(data, indent=2) + "\n", args.output)
    elif args.lint and not args.collectives and not args.suggest:
        lines = [lint.text() for lint in report.lints] or ["no lints"]
        write_output("\n".join(lines) + "\n", args.output)
    else:
        write_output(report.text(), args.output)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    if args.collectives or args.suggest or args.lint:
        return cmd_collectives(args)
    from shardc.explain.device_grid import visualize_sharding
    from shardc.explain.dot import to_dot
    from shardc.explain.html_page import to_html
    from shardc.explain.text import explain_text
    from shardc.pipeline import compile

    module, _ = load(args)
    result = compile(module, compile_options(args))
    for w in result.warnings:
        print(w, file=sys.stderr)
    origins = result.context.data.get("origins")
    if args.html:
        title = f"shardc: {args.model or display_name(args.input)}"
        write_output(to_html(result.module, origins, title=title), args.html)
    if args.dot:
        write_output(to_dot(result.module), args.dot)
    text = explain_text(result.module, origins)
    if args.value:
        func = result.module.main
        from shardc.ir.printer import Namer

        name = Namer(func)
        wanted = args.value if args.value.startswith("%") else "%" + args.value
        values = list(func.args) + [r for op in func.body for r in op.results]
        match = [v for v in values if name(v) == wanted]
        if not match:
            raise UsageError(f"no value {wanted} in @{func.name}")
        v = match[0]
        text = f"{wanted}: {v.type.text()}\n" + visualize_sharding(v.type.shape, v.mapping)
    if not (args.html or args.dot) or args.value:
        write_output(text if text.endswith("\n") else text + "\n", args.output)
    return 0


def add_models(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the model zoo")
    p.set_defaults(func=cmd_models)


def add_explain(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="per value: sharding, origin, local shape; pictures",
        description="Compile IN and explain where every value's sharding came "
        "from; --html/--dot draw the program coloured by sharding.",
    )
    add_input_options(p)
    p.add_argument("--html", default=None, metavar="OUT", help="write a self-contained HTML page")
    p.add_argument("--dot", default=None, metavar="OUT", help="write a Graphviz graph")
    p.add_argument("--value", default=None, help="draw how one value's blocks map onto devices")
    p.add_argument("--collectives", action="store_true",
                   help="why each collective is there: the two layouts and their reasons")
    p.add_argument("--suggest", type=int, default=0, metavar="N",
                   help="with each collective, up to N measured changes that lower the bytes "
                   "moved (implies --collectives)")
    p.add_argument("--lint", action="store_true",
                   help="silent mistakes: replicated large values, padding, overridden "
                   "annotations, constraints that change nothing")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="output of --collectives/--suggest/--lint (default text)")
    p.add_argument(
        "-o", "--output", default=None, help="output file for the text (default: stdout)"
    )
    p.set_defaults(func=cmd_explain)
