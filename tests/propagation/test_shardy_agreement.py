"""shardc's propagation decides the same shardings as Shardy on real JAX programs.

The stored corpus (tests/data/stablehlo) was made by JAX 0.10.2; `extras/<case>.open.mlir` is
Shardy's propagation of `<case>.mlir` (see tests/data/stablehlo/README.md). Every value of
every case that shardc imports is compared.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.stablehlo import import_stablehlo
from tests.shardy_compare import compare_modules, importable_corpus

DATA = Path(__file__).parent.parent / "data" / "stablehlo"


# Differences that come from Shardy passes after propagation which shardc's propagation-pipeline
# does not model (the `.open` files are cut after them, see tests/data/stablehlo/README.md):
# `sdy-update-non-divisible-input-output-shardings` drops "tp" from a 16x66 result (66 is not
# divisible by 4; Shardy's propagation itself gives it "tp", as shardc does). (Shardy's
# call-graph passes also give private functions' scalar arguments `[]`, which
# shardy_compare counts as no sharding, and rename a function called from several places.)
KNOWN_DIFFERENCES = {
    "concat_slice_pad": {
        'concat_slice_pad@main result 1: shardc <@mesh, [{"dp", ?}, {"tp", ?}]> | '
        'shardy <@mesh, [{"dp", ?}, {?}]>',
    },
}

CASES = [n for n in importable_corpus() if (DATA / "extras" / f"{n}.open.mlir").exists()]


def test_enough_cases_import() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", CASES)
def test_propagation_matches_shardy(name: str) -> None:
    load_all_passes()
    raw = DATA / f"{name}.mlir"
    ours = import_stablehlo(raw.read_text(), str(raw))
    PassManager(parse_pipeline("propagation-pipeline")).run(ours, PassContext())
    shardy_path = DATA / "extras" / f"{name}.open.mlir"
    theirs = import_stablehlo(shardy_path.read_text(), str(shardy_path))
    agreement = compare_modules(ours, theirs, name)
    assert not agreement.structural, agreement.structural
    assert agreement.compared > 0
    known = KNOWN_DIFFERENCES.get(name, set())
    assert set(agreement.differences) == known, "\n".join(agreement.differences)
    assert agreement.equal == agreement.compared - len(known)
