"""sdy-per-instruction-partitioning (passes/spmd/per_instruction_partitioning.py): its filter, and what
the programs it writes compute on simulated devices (the manual computations' bodies hold
StableHLO collectives by replica groups and partition_id tables, run by the numpy executor)
against the input's global program, on random reshard programs (tests/export_programs.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.ops.manual import manual_computations
from shardc.passes.manager import parse_pipeline
from shardc.passes.spmd.per_instruction_partitioning import Filter
from shardc.stablehlo import import_stablehlo
from tests.export_compare import run_shardc
from tests.export_programs import reshard_module

PASS = "sdy-per-instruction-partitioning"
# What the pass refuses, located (tests/filecheck/spmd/per_instruction_partitioning_errors.mlir).
REFUSALS = ("are on different meshes", "which would be a manual axis",
            "padded for their indivisible shardings")


def test_filter_is_shardys_syntax() -> None:
    assert Filter.parse("").select_all and Filter.parse("  ").select_all
    f = Filter.parse("'selectHigh=3, dot, selectLow=1'")
    assert (f.low, f.high, f.names) == (1, 3, ["dot"])
    assert f.matches("stablehlo.dot_general", 2)
    assert not f.matches("stablehlo.dot_general", 4) and not f.matches("stablehlo.dot", 0)
    assert not f.matches("stablehlo.add", 2)
    # A bound that is not an integer is ignored, as Shardy ignores it.
    assert Filter.parse("selectLow=x").matches("sdy.reshard", 0)
    assert Filter.parse("reshard,pad").matches("sdy.reshard", 9)


def test_pipeline_options_take_quoted_values_and_comma_lists() -> None:
    """MLIR's option syntax as Shardy's RUN lines write it: a quoted value keeps its commas and
    spaces, and a bare word after `filter=dot` continues that value (it would be no option)."""
    (p,) = parse_pipeline(f"{PASS}{{filter=dot,constant, reshard partition-count=2}}")
    assert (p.filter, p.partition_count) == ("dot,constant,reshard", 2)
    (p,) = parse_pipeline(f"{PASS}{{filter='selectLow=0, selectHigh=0' replica-count=3}}")
    assert (p.filter, p.replica_count) == ("selectLow=0, selectHigh=0", 3)
    (p,) = parse_pipeline(f"{PASS}{{filter=''}}")
    assert p.filter == ""
    with pytest.raises(ShardcError, match="must be key=value"):
        parse_pipeline(f"{PASS}{{dot}}")


def _inputs(func, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(a.type.shape).astype(np.float32) for a in func.args]


def _same(original, module, seed: int) -> int:
    """Runs every public function of both; how many it compared."""
    n = 0
    for name, func in original.functions.items():
        if func.is_private:
            continue
        xs = _inputs(func, seed)
        want = run_reference(original, xs, function=name)
        got = run_reference(module, xs, function=name)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"seed {seed} @{name}")
        n += 1
    return n


def test_the_partitioned_reshards_compute_what_the_input_computes() -> None:
    """Every reshard of a random program becomes a manual computation of StableHLO collectives
    (all_gather, all_to_all, collective_permute, dynamic slices by partition_id); the program
    computes what the global one does. The programs the pass refuses say why, located."""
    compared = refused = wrapped = 0
    for seed in range(30):
        text = reshard_module(random.Random(seed))
        try:
            out = run_shardc(text, PASS)
        except ShardcError as e:
            assert any(r in e.message for r in REFUSALS), e.message
            assert e.loc is not None
            refused += 1
            continue
        module = import_stablehlo(out, "out.mlir")
        wrapped += len(manual_computations(module))
        compared += _same(import_stablehlo(text, "in.mlir"), module, seed)
    assert compared >= 40 and wrapped >= 40 and refused >= 5, (compared, wrapped, refused)


@pytest.mark.parametrize(("name", "pipeline"), [
    ("spmd/per_instruction_partitioning.mlir", PASS),
    ("spmd/per_instruction_partitioning.mlir", f"{PASS}{{filter=slice}}"),
    ("reshard/export_pipeline.mlir",
     "sdy-export-pipeline{inline-meshes=false enable-per-instruction-partitioning=true}"),
])
def test_the_filecheck_programs_compute_what_the_input_computes(name: str, pipeline: str) -> None:
    """A dot whose partial sums are all-reduced, a padded slice (its body all-gathers and
    dynamic-slices by partition_id) and the export pipeline's output with the pass in it."""
    text = (Path(__file__).parent.parent / "filecheck" / name).read_text()
    module = import_stablehlo(run_shardc(text, pipeline), "out.mlir")
    assert manual_computations(module)
    assert _same(import_stablehlo(text, name), module, 0) == 1
