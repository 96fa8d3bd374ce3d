"""Regenerate the zoo examples: one native IR file per model and annotation preset.

    python examples/generate.py            # write examples/<model>_<preset>.mlir
    python examples/generate.py --check    # exit 1 if a file is missing or out of date

Each file is the printed module of `MODELS[model].build(preset)` with the default sizes, so it
round-trips through `shardc opt` unchanged. `examples/mlp.mlir` is hand-written and not touched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

from shardc.ir.printer import print_module  # noqa: E402
from shardc.models.catalogue import MODELS  # noqa: E402


def example_texts() -> dict[str, str]:
    """File name -> text, for every model and preset, in registry order."""
    out: dict[str, str] = {}
    for name, spec in MODELS.items():
        for preset in spec.presets:
            out[f"{name}_{preset}.mlir"] = print_module(spec.build(preset))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the files are current")
    args = parser.parse_args(argv)
    stale = []
    for file_name, text in example_texts().items():
        path = HERE / file_name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(file_name)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run python examples/generate.py)")
        return 1
    if not args.check:
        print(f"wrote {len(stale)} file(s)" + (f": {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
