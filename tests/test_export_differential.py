"""Shardy's export passes against jaxlib's on random programs (tests/export_programs.py): where
both run, shardc prints what jaxlib prints, function for function.

Known gaps (docs/interop.md) are the only errors shardc may raise: a `collective_permute`
between two meshes with the same axes and another device order, and Shardy's
`replicated_to_unreduced` / `sharded_to_unreduced` ops, which shardc's IR does not have yet.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("jax")

from tests.export_compare import JaxlibWorker, compare  # noqa: E402
from tests.export_programs import op_module, reshard_module  # noqa: E402

KNOWN_GAPS = (
    "'collective_permute' op operand is on mesh",
    "unknown op 'replicated_to_unreduced'",
    "unknown op 'sharded_to_unreduced'",
)
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
        assert outcome.kind != "differ", f"seed {seed}:\n{outcome.detail}"
        if outcome.kind == "shardc-error":
            assert any(g in outcome.detail for g in KNOWN_GAPS), f"seed {seed}: {outcome.detail}"
    assert kinds.get("same", 0) >= 8, kinds  # the comparison really ran
