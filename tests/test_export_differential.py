"""Shardy's export passes against jaxlib's on random programs (tests/export_programs.py): every
program jaxlib's pass takes, shardc's takes too and prints what jaxlib prints, function for
function (docs/interop.md has the survey).
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("jax")

from tests.export_compare import JaxlibWorker, compare  # noqa: E402
from tests.export_programs import op_module, reshard_module  # noqa: E402

CASES = {
    "sdy-reshard-to-collectives": reshard_module,
    "sdy-insert-explicit-reshards{enable-full-version=true}": op_module,
    "sdy-insert-explicit-reshards": op_module,
}


@pytest.fixture(scope="module")
def worker():
    w = JaxlibWorker()
    yield w
    w.close()


@pytest.mark.parametrize("pipeline", list(CASES))
def test_shardc_prints_what_jaxlib_prints(pipeline: str, worker) -> None:
    kinds: dict[str, int] = {}
    for seed in range(80):
        outcome = compare(CASES[pipeline](random.Random(seed)), pipeline, worker)
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        assert outcome.kind not in ("differ", "shardc-error"), f"seed {seed}:\n{outcome.detail}"
    assert kinds.get("same", 0) >= 8, kinds  # the comparison really ran
