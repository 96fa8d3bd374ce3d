"""jaxlib's passes standing in for `shardc opt`, so that benchmarks/shardy_lit.py can measure
jaxlib itself on Shardy's lit tests:

    python benchmarks/shardy_lit.py --shardy SHARDY --files 'transforms/export/test/X*' \\
        --shardc 'python benchmarks/jaxlib_opt.py'

Takes `opt FILE [-p PIPELINE]` (the pipeline as shardc spells it; function passes are nested
for jaxlib by tests/export_compare.py) and prints what jaxlib prints; a failure is exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.export_compare import run_jaxlib  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "opt":
        print("usage: jaxlib_opt.py opt FILE [-p PIPELINE]", file=sys.stderr)
        return 2
    pipeline = argv[argv.index("-p") + 1] if "-p" in argv else ""
    try:
        print(run_jaxlib(Path(argv[1]).read_text(), pipeline))
    except Exception as e:  # noqa: BLE001 - jaxlib's MLIRError, reported as the tool's error
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
