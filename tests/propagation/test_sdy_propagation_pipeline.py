"""`shardc opt X.mlir -p sdy-propagation-pipeline` prints what jaxlib 0.10.2's Shardy prints.

For every JAX corpus case `tests/data/stablehlo/<case>.mlir`, the command's output is compared
byte for byte with Shardy's `<case>.propagated.mlir` (import + propagation + export; see
`tests/data/stablehlo/README.md`). No normalisation. A case that differs would be a strict
xfail in `DIFFERENCES` whose reason names the cause (docs/interop.md, "Shardy's whole
pipeline"); today all 31 match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.cli import main

DATA = Path(__file__).parent.parent / "data" / "stablehlo"
CASES = sorted(
    p.name[: -len(".mlir")] for p in DATA.glob("*.mlir") if not p.name.endswith(".propagated.mlir")
)

# Cases whose output still differs from Shardy's, with the cause (a strict xfail each): none.
DIFFERENCES: dict[str, str] = {}


def _params():
    for case in CASES:
        reason = DIFFERENCES.get(case)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(case, marks=marks, id=case)


def test_corpus_is_complete() -> None:
    assert len(CASES) == 31
    assert set(DIFFERENCES) <= set(CASES)


@pytest.mark.parametrize("case", list(_params()))
def test_prints_what_shardy_prints(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["opt", str(DATA / f"{case}.mlir"), "-p", "sdy-propagation-pipeline"])
    out = capsys.readouterr().out
    assert code == 0
    assert out == (DATA / f"{case}.propagated.mlir").read_text()
