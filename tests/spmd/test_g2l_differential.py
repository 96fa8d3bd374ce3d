"""sdy-convert-global-to-local against jaxlib's on random programs (tests/g2l_programs.py), after
sdy-reshard-to-collectives: shardc prints what jaxlib prints, function for function."""

from __future__ import annotations

import functools
import random

import pytest

pytest.importorskip("jax")

from tests.export_compare import JaxlibWorker, compare  # noqa: E402
from tests.g2l_programs import PRIME_MESHES, g2l_module  # noqa: E402

PIPELINE = "sdy-reshard-to-collectives,sdy-convert-global-to-local"


@pytest.fixture(scope="module")
def worker():
    w = JaxlibWorker()
    yield w
    w.close()


def test_shardc_prints_what_jaxlib_prints(worker) -> None:
    make = functools.partial(g2l_module, meshes=PRIME_MESHES)
    kinds: dict[str, int] = {}
    for seed in range(40):
        outcome = compare(make(random.Random(seed)), PIPELINE, worker)
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        assert outcome.kind not in ("differ", "shardc-error"), f"seed {seed}:\n{outcome.detail}"
    assert kinds.get("same", 0) >= 20, kinds  # the comparison really ran
