"""Shardy's export passes against jaxlib's on random programs (tests/export_programs.py): every
program jaxlib's pass takes, shardc's takes too and prints what jaxlib prints, function for
function (docs/interop.md has the survey).
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("jax")

from tests.export_call_programs import call_module, call_module_with_edges  # noqa: E402
from tests.export_collective_programs import cmv1_module  # noqa: E402
from tests.export_compare import (  # noqa: E402
    JaxlibWorker,
    compare,
    without_mask_shardings,
    without_pairs,
)
from tests.export_programs import (  # noqa: E402
    main_module,
    op_module,
    permutation_module,
    reshard_module,
)
from tests.pad_programs import pad_module  # noqa: E402

CASES = {
    "sdy-reshard-to-collectives": reshard_module,
    "sdy-insert-explicit-reshards{enable-full-version=true}": op_module,
    "sdy-insert-explicit-reshards": op_module,
    "sdy-resolve-permutation-factors{enable-halo-exchange=false}": permutation_module,
    "sdy-resolve-permutation-factors": permutation_module,
    "sdy-inline-meshes": op_module,
    "sdy-remove-all-gather-reduce-scatter-for-cmv1": cmv1_module,
    "sdy-add-func-data-flow-edges": call_module,
    "sdy-sink-func-data-flow-edges": call_module_with_edges,
    "sdy-pad-for-divisibility": pad_module,
    "sdy-export-pipeline{inline-meshes=false}": main_module,
}
# What a pass's output is compared after (jaxlib 0.10.2's pass is older than Shardy's).
NORMALIZE = {"sdy-pad-for-divisibility": without_mask_shardings,
             "sdy-resolve-permutation-factors": without_pairs}
# What jaxlib runs instead (its older export pipeline has no inline-meshes option, nor step).
JAXLIB = {"sdy-export-pipeline{inline-meshes=false}": "sdy-export-pipeline"}

# What shardc does not build and says so (docs/interop.md): a shardc error with this text is
# counted apart, any other fails the test.
UNSUPPORTED: dict[str, str] = {}


def unsupported(pipeline: str, detail: str) -> bool:
    text = UNSUPPORTED.get(pipeline)
    return text is not None and text in detail


@pytest.fixture(scope="module")
def worker():
    w = JaxlibWorker()
    yield w
    w.close()


@pytest.mark.parametrize("pipeline", list(CASES))
def test_shardc_prints_what_jaxlib_prints(pipeline: str, worker) -> None:
    kinds: dict[str, int] = {}
    for seed in range(80):
        outcome = compare(CASES[pipeline](random.Random(seed)), pipeline, worker,
                          NORMALIZE.get(pipeline), JAXLIB.get(pipeline))
        kind = "unsupported" if outcome.kind == "shardc-error" and unsupported(
            pipeline, outcome.detail) else outcome.kind
        kinds[kind] = kinds.get(kind, 0) + 1
        assert kind not in ("differ", "shardc-error"), f"seed {seed}:\n{outcome.detail}"
    assert kinds.get("same", 0) >= 8, kinds  # the comparison really ran


def test_pad_for_divisibility_rejects_what_jaxlib_rejects(worker) -> None:
    """A program jaxlib's pass rejects gets a located error from shardc too, except the
    dot_generals whose result jaxlib's older pass does not widen to what its padded operands
    give (docs/interop.md)."""
    from shardc.ir.diagnostics import ShardcError
    from tests.export_compare import run_shardc

    rejected = 0
    for seed in range(60):
        text = pad_module(random.Random(seed))
        outcome = compare(text, "sdy-pad-for-divisibility", worker, without_mask_shardings)
        widened = "incompatible with return type" in outcome.detail  # the dot_general case
        if outcome.kind == "jaxlib-rejects" and not widened:
            rejected += 1
            with pytest.raises(ShardcError):
                run_shardc(text, "sdy-pad-for-divisibility")
    assert rejected >= 5
