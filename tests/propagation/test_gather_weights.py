"""`gather-weights` and `CompileOptions.gather_weights` (passes/propagation/gather_weights.py):
which weights FSDP's plan gathers, that `auto` keeps the cheaper of the two plans, and that
the gathered plan computes what the unsharded program does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.models.catalogue import MODELS
from shardc.passes.propagation.gather_weights import weight_gathers
from shardc.pipeline import DEFAULT_PIPELINE, CompileOptions, compile, plan_cost

GPT = Path(__file__).resolve().parent.parent.parent / "examples" / "jax"


def _gpt(name: str):
    pytest.importorskip("jax")
    from shardc.stablehlo import import_stablehlo

    path = GPT / f"gpt_train_{name}.mlir"
    return import_stablehlo(path.read_text(), str(path))


def _inputs(module) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 16, a.type.shape).astype(np.int32) if "i" in str(a.type.dtype)
            else rng.standard_normal(a.type.shape).astype(np.float32)
            for a in module.main.args]


def _mlp(x: str, w1: str, w2: str, ff: int = 256) -> str:
    return f"""mesh @mesh = <["dp"=2, "tp"=2]>
func @main(%x: tensor<16x64xf32, <@mesh, {x}>>, %w1: tensor<64x{ff}xf32, <@mesh, {w1}>>,
           %w2: tensor<{ff}x64xf32, <@mesh, {w2}>>) -> tensor<16x64xf32> {{
  %h = dot_general %x, %w1 {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x{ff}xf32>
  %y = dot_general %h, %w2 {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x64xf32>
  return %y
}}
"""


def test_fsdp_weights_against_the_batch_are_gathered() -> None:
    module = parse_module(_mlp('[{"dp"}, {}]', '[{"dp"}, {"tp"}]', '[{"dp"}, {}]'))
    got = {g.arg.name_hint: (str(g.target), g.table) for g in weight_gathers(module)}
    assert got == {"w1": ('<@mesh, [{}, {"tp"}]>', False), "w2": ("<@mesh, [{}, {}]>", False)}


@pytest.mark.parametrize("shardings", [
    ('[{"dp"}, {}]', '[{}, {"tp"}]', '[{"tp"}, {}]'),  # Megatron: w2's rows against w1's columns
    ('[{}, {"dp"}]', '[{"dp"}, {}]', '[{}, {}]'),  # x and w1 split the contracted dim alike
    ('[{}, {}]', '[{"dp"}, {}]', '[{"dp"}, {}]'),  # no other argument on "dp"
])
def test_no_conflict_gathers_nothing(shardings: tuple[str, str, str]) -> None:
    assert weight_gathers(parse_module(_mlp(*shardings))) == []


def test_the_jax_gpt_fsdp_step_gathers_every_weight_and_the_table() -> None:
    gathers = weight_gathers(_gpt("fsdp"))
    assert len(gathers) == 13  # 6 matrices per layer, 2 layers, and the embedding table
    assert all(not g.target.used_axes() for g in gathers)
    # the table: the token lookup indexes it; the logits' product contracts d_model, not its
    # sharded vocab
    assert [g.arg.type.shape for g in gathers if g.table] == [(256, 64)]
    for name in ("dp", "tp", "dp_tp"):
        assert weight_gathers(_gpt(name)) == []


def test_auto_keeps_the_cheapest_plan_and_it_runs_like_the_reference() -> None:
    """Three plans: as propagated (51 collectives), every weight gathered (2: one all_gather,
    one all_reduce of the gradients) and every weight but the embedding table gathered (9,
    and the fewest bytes: the lookup moves the rows it reads, not the table)."""
    module = _gpt("fsdp")
    auto = compile(module)
    latency = CompileOptions().collective_latency
    plans = {p: compile(module, CompileOptions(pipeline=p + DEFAULT_PIPELINE,
                                               gather_weights="never")).report
             for p in ("", "gather-weights,", "gather-weights{tables=false},")}
    issued = [r["issued"]["count"] for r in plans.values()]
    assert issued == [51, 2, 9]
    costs = [plan_cost(r, "ring", latency) for r in plans.values()]
    assert plan_cost(auto.report, "ring", latency) == min(costs) == costs[2]
    assert auto.report["total_comm_bytes"] == min(r["total_comm_bytes"] for r in plans.values())
    inputs = _inputs(module)
    want = run_reference(module, inputs)
    for backend in ("numpy", "jax"):
        for g, w in zip(auto.run(inputs, backend=backend), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * max(np.max(np.abs(w)), 1.0))


@pytest.mark.parametrize("ff, gathered", [(256, True), (4096, False)])
def test_auto_weighs_bytes_against_collectives(ff: int, gathered: bool) -> None:
    """FSDP on a 16-row batch: with small weights, gathering them (2 collectives, more bytes)
    beats moving the activations (5 collectives) once each collective costs its latency; with
    16x larger weights moving the activations is cheaper, and `auto` keeps it."""
    module = parse_module(_mlp('[{"dp"}, {}]', '[{"dp"}, {"tp"}]', '[{"dp"}, {}]', ff))
    reports = {g: compile(module, CompileOptions(gather_weights=g)).report
               for g in ("never", "always", "auto")}
    never, always, auto = reports["never"], reports["always"], reports["auto"]
    assert always["issued"]["count"] < never["issued"]["count"]
    assert always["total_ring_bytes"] > never["total_ring_bytes"]
    kept = always if gathered else never
    assert auto["collectives"] == kept["collectives"] and auto["issued"] == kept["issued"]
    inputs = _inputs(module)
    (want,) = run_reference(module, inputs)
    (got,) = compile(module, CompileOptions(gather_weights="always")).run(inputs)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.max(np.abs(want)))


def test_an_unknown_choice_is_an_error() -> None:
    module = parse_module(_mlp('[{"dp"}, {}]', '[{}, {}]', '[{}, {}]'))
    with pytest.raises(ShardcError, match="unknown gather_weights 'maybe'"):
        compile(module, CompileOptions(gather_weights="maybe"))


def test_the_zoo_gpt_fsdp_step_gathers_its_weights_and_moves_less() -> None:
    """The zoo GPT's FSDP step (tokens and labels on "dp", every weight's first dim on "dp"):
    the token gather and every product meet the batch's axis, so its weights and table are
    gathered; that moves fewer bytes in fewer collectives, and runs like the unsharded step."""
    module = MODELS["gpt"].build("fsdp", train="sgd")
    assert {g.arg.name_hint for g in weight_gathers(module)} == {
        "table", "wq_0", "wk_0", "wv_0", "wo_0", "w1_0", "w2_0"}
    auto = compile(module)
    never = compile(module, CompileOptions(gather_weights="never")).report
    assert auto.report["total_ring_bytes"] < never["total_ring_bytes"]
    assert auto.report["issued"]["count"] < never["issued"]["count"]
    inputs = _inputs(module)
    for g, w in zip(auto.run(inputs), run_reference(module, inputs), strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * max(np.max(np.abs(w)), 1.0))


def test_the_command_takes_the_choice_and_reports_the_plans(capsys) -> None:
    import json

    from shardc.cli import main as shardc

    path = str(GPT / "gpt_train_fsdp.mlir")
    pytest.importorskip("jax")
    assert shardc(["compile", path, "--input-format", "sdy", "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    choice = report["gather_weights"]
    assert choice["kept"] == "gather-weights{tables=false}"
    assert [p["issued"] for p in choice["plans"]] == [51, 2, 9]
    assert min(p["price"] for p in choice["plans"]) == choice["plans"][2]["price"]
    # latency priced at 0: the ring bytes alone, where moving activations is cheapest
    assert shardc(["compile", path, "--input-format", "sdy", "--collective-latency", "0",
                   "--report", "text"]) == 0
    assert "gather-weights: kept as propagated (as propagated: 51 collectives" in (
        capsys.readouterr().out)
    assert shardc(["compile", path, "--input-format", "sdy", "--gather-weights", "never",
                   "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "gather_weights" not in report and report["issued"]["count"] == 51


def test_a_gathered_plan_that_fails_to_compile_is_skipped_by_auto(monkeypatch) -> None:
    import shardc.pipeline as pipeline

    compile_pipeline = pipeline._compile_pipeline

    def failing(module, options, text, consume):
        if text.startswith("gather-weights"):
            raise ShardcError("error: this plan cannot compile")
        return compile_pipeline(module, options, text, consume)

    monkeypatch.setattr(pipeline, "_compile_pipeline", failing)
    module = parse_module(_mlp('[{"dp"}, {}]', '[{"dp"}, {"tp"}]', '[{"dp"}, {}]'))
    report = compile(module).report
    assert [p["plan"] for p in report["gather_weights"]["plans"]] == ["as propagated"]
    with pytest.raises(ShardcError, match="this plan cannot compile"):
        compile(module, CompileOptions(gather_weights="always"))


def test_a_megatron_bias_reaching_the_contracted_dim_is_no_conflict() -> None:
    """b1 on "tp" flows (broadcast, add, tanh) into w2's product on the dim that product
    contracts, where w2 has "tp" too: the same factor, no conflict. On the batch's dim it is."""
    def text(b1_dims: str) -> str:
        return f"""mesh @mesh = <["tp"=2]>
func @main(%x: tensor<16x64xf32>, %w1: tensor<64x256xf32, <@mesh, [{{}}, {{"tp"}}]>>,
           %b1: tensor<{b1_dims}xf32, <@mesh, [{{"tp"}}]>>,
           %w2: tensor<256x64xf32, <@mesh, [{{"tp"}}, {{}}]>>) -> tensor<16x64xf32> {{
  %h = dot_general %x, %w1 {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x256xf32>
  %b = broadcast_in_dim %b1 {{broadcast_dimensions = [{1 if b1_dims == "256" else 0}]}} : tensor<16x256xf32>
  %a = add %h, %b : tensor<16x256xf32>
  %t = tanh %a : tensor<16x256xf32>
  %y = dot_general %t, %w2 {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x64xf32>
  return %y
}}
"""
    assert weight_gathers(parse_module(text("256"))) == []
    # the same axis broadcast onto the batch dim instead: w2's "tp" must go
    assert [g.arg.name_hint for g in weight_gathers(parse_module(text("16")))] == ["w2"]


def test_explain_explains_the_plan_compile_keeps() -> None:
    """`shardc explain --collectives` runs the pipeline itself: it runs the one compile kept,
    and says why each weight is gathered."""
    from shardc.explain.collectives_report import collectives_report

    module = _gpt("fsdp")
    report = collectives_report(module, CompileOptions(), lint=False)
    assert report.base.totals.comm_bytes == compile(module).report["total_comm_bytes"] == 924_676
    gathered = [e for e in report.explanations
                if e.reason == "weight gathered where it is defined"]
    assert len(gathered) == 12  # the weight matrices; the table stays sharded
    assert all(e.ends_at_user_or_rule() and e.kind == "all_gather" for e in gathered)
    texts = {d.text for e in gathered for c in e.chains for d in c}
    assert any(t.startswith("FSDP's plan gathers this weight") for t in texts)
