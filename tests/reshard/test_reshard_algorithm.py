"""`compile` with Shardy's reshard algorithm (`--reshard-algorithm shardy`,
`lower-collectives{planner=shardy}`): correct programs, and the report's two plans side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardc.cli import main
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.pipeline import CompileOptions, compile

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
CASES = ["mlp_fsdp", "moe_ep_tp", "transformer_dp_tp", "mixer_dp_tp", "embedding_tp"]


@pytest.mark.parametrize("name", CASES)
def test_shardy_algorithm_runs_like_the_unsharded_program(name: str, capsys, monkeypatch) -> None:
    module = parse_module((EXAMPLES / f"{name}.mlir").read_text(), f"{name}.mlir")
    result = compile(module, CompileOptions(reshard_algorithm="shardy"))
    assert not any(op.name == "reshard" for f in result.module.functions.values()
                   for op in f.body)
    monkeypatch.chdir(EXAMPLES.parent)
    code = main(["run", f"examples/{name}.mlir", "--reshard-algorithm", "shardy", "--check"])
    out = capsys.readouterr()
    assert code == 0 and "ok" in out.out, out.err


def test_report_shows_both_plans_and_the_chosen_one_is_applied() -> None:
    module = parse_module((EXAMPLES / "mlp_fsdp.mlir").read_text(), "mlp_fsdp.mlir")
    results = {a: compile(module, CompileOptions(reshard_algorithm=a))
               for a in ("cheapest", "shardy")}
    cheapest, shardy = results["cheapest"].report, results["shardy"].report
    # Every reshard is costed under both algorithms, whichever one lowers it.
    assert cheapest["reshard_plan_totals"] == shardy["reshard_plan_totals"]
    totals = cheapest["reshard_plan_totals"]
    assert set(totals) == {"optimal", "shardy"}
    assert totals["optimal"] <= totals["shardy"]
    # The FSDP gradient-style reshard: unreduced -> sharded. Shardy reduces, then slices.
    (entry, *_) = [e for e in cheapest["reshard_plans"] if "unreduced" in e["from"]]
    assert entry["optimal"]["collectives"] == ["reduce_scatter"]
    assert entry["shardy"]["collectives"] == ["all_reduce", "all_slice"]
    assert entry["shardy"]["ring_bytes"] == 2 * entry["optimal"]["ring_bytes"]
    # The per-plan totals add the entries up, and each run lowered with its own algorithm.
    for name, algorithm in (("optimal", "cheapest"), ("shardy", "shardy")):
        assert totals[name] == sum(e[name]["ring_bytes"] for e in cheapest["reshard_plans"])
        lowered = results[algorithm].context.data["lower_collectives"]["ring_bytes"]
        assert lowered == totals[name]


def test_the_other_plan_is_made_when_the_report_is_built() -> None:
    """The other algorithm's plan of each reshard is costed when the report asks for it
    (`shardc.jit` compiles without a report), and then as the chosen algorithm costs it."""
    module = parse_module((EXAMPLES / "mlp_fsdp.mlir").read_text(), "mlp_fsdp.mlir")
    cheapest = compile(module, CompileOptions())
    entries = cheapest.context.data["reshard_plans"]
    assert entries and all(e["optimal"] is not None and e["shardy"] is None for e in entries)
    report = cheapest.report
    assert "reshard_plans_pending" not in cheapest.context.data
    shardy = compile(module, CompileOptions(reshard_algorithm="shardy")).report
    assert [e["shardy"] for e in report["reshard_plans"]] == [
        e["shardy"] for e in shardy["reshard_plans"]]
    assert all(e["shardy"] is not None for e in report["reshard_plans"])


def test_unknown_algorithm_is_an_error() -> None:
    with pytest.raises(ShardcError, match="unknown reshard algorithm 'fastest'"):
        CompileOptions(reshard_algorithm="fastest").full_pipeline()


def test_pipeline_text_names_the_planner() -> None:
    assert "lower-collectives{planner=shardy}" in CompileOptions(
        reshard_algorithm="shardy").full_pipeline()
    assert "planner" not in CompileOptions().full_pipeline()


def test_cli_option(capsys, monkeypatch) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    code = main(["compile", "examples/moe_ep_tp.mlir", "--reshard-algorithm", "shardy",
                 "--report", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    assert set(report["reshard_plan_totals"]) == {"shardy", "optimal"}
    code = main(["compile", "examples/moe_ep_tp.mlir", "--reshard-algorithm", "shardy",
                 "--report", "text"])
    out = capsys.readouterr()
    assert code == 0 and "Shardy's algorithm" in out.out
    with pytest.raises(SystemExit):
        main(["compile", "examples/moe_ep_tp.mlir", "--reshard-algorithm", "fastest"])
