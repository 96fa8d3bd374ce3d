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


def test_pad_for_divisibility_prints_what_jaxlib_prints(worker) -> None:
    """Random shard/compute/gather programs with non-divisible dims (tests/pad_programs.py),
    compared without what jaxlib 0.10.2's older pass does otherwise (the shardings and order of
    its padding masks); a program jaxlib rejects must get a located error from shardc, or be one
    of the dot_generals whose result jaxlib's older pass does not widen to what its padded
    operands give (docs/interop.md)."""
    from shardc.ir.diagnostics import ShardcError
    from tests.export_compare import run_shardc, without_mask_shardings
    from tests.pad_programs import pad_module

    kinds: dict[str, int] = {}
    for seed in range(60):
        text = pad_module(random.Random(seed))
        outcome = compare(text, "sdy-pad-for-divisibility", worker, without_mask_shardings)
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        assert outcome.kind not in ("differ", "shardc-error"), f"seed {seed}:\n{outcome.detail}"
        if outcome.kind == "jaxlib-rejects" and "dot_general" not in outcome.detail:
            with pytest.raises(ShardcError):
                run_shardc(text, "sdy-pad-for-divisibility")
    assert kinds.get("same", 0) >= 30, kinds
