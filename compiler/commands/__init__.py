"""The `shardc` subcommands, one module per family (see docs/cli.md).

- `table.py`: every subcommand, in the order `shardc --help` lists them (cli.py builds the
  parser from it);
- `text_io.py`: reading inputs (a file or stdin, `// -----` chunks), writing outputs, bad usage;
- `opt.py` (`opt`, `passes`), `convert.py` (`import`, `export`);
- `program.py`: the input program of `compile`/`run`/`explain` (IN or `--model`, `--mesh`);
- `compile.py`, `run.py`, `explain.py` (`models`, `explain`).
"""
