"""`shardc explain --collectives/--suggest/--lint`, the HTML collectives table and the lints."""

from __future__ import annotations

import json
import re

from shardc.explain.collectives_report import collectives_report
from shardc.explain.lints import NO_EFFECT, OVERRIDDEN, PADDING, REPLICATED
from shardc.explain.whatif.baseline import compile_baseline
from shardc.explain.whatif.engine import WhatIf
from shardc.explain.whatif.memory import Timeline
from shardc.ir.parser import parse_module
from shardc.models.catalogue import MODELS
from tests.test_cli import _root, run  # noqa: F401 - the command's runner, run from the root


def test_collectives_json_has_both_sides_and_measured_suggestions(capsys) -> None:
    code, out, err = run(capsys, "explain", "examples/mlp_fsdp.mlir", "--suggest", "2",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"collectives", "total_comm_bytes", "peak_memory_bytes_per_device",
                         "lints", "measurements", "fast_path"}
    rows = data["collectives"]
    assert len(rows) == 4 and sum(r["bytes_per_device"] for r in rows) == data["total_comm_bytes"]
    for r in rows:
        assert r["loc"].startswith("examples/mlp_fsdp.mlir:")
        assert r["serves"]["op"] in ("dot_general", "maximum", "return")
        for side in ("have", "need"):
            assert r[side]["layout"].startswith("<@mesh")
            for why in r[side]["why"]:
                assert why["chain"][-1]["kind"] in ("in_sharding", "factor rule", "out_sharding")
        for s in r["suggestions"]:
            assert s["comm_bytes_delta"] < 0 and s["measured"] in ("re-propagated", "recompiled")
    assert sum(data["measurements"].values()) > 0


def test_collectives_text_names_the_lines_and_the_annotations(capsys) -> None:
    code, out, _ = run(capsys, "explain", "examples/mlp_dp_tp.mlir", "--collectives")
    assert code == 0
    assert re.search(r"all_reduce over tp at examples/mlp_dp_tp\.mlir:\d+:\d+", out)
    assert "its in_sharding" in out and "unreduced over" in out


def test_lint_alone_prints_the_lints(capsys) -> None:
    code, out, _ = run(capsys, "explain", "--model", "mlp", "--preset", "fsdp", "--lint")
    assert code == 0
    assert out.startswith("overridden: %x") or "overridden:" in out
    assert "suggest" not in out


def test_suggest_takes_a_count(capsys) -> None:
    code, _, err = run(capsys, "explain", "examples/mlp.mlir", "--suggest", "-1")
    assert code != 0 and "--suggest" in err


def test_the_page_links_every_collective_to_its_node(tmp_path, capsys) -> None:
    page = tmp_path / "p.html"
    code, _, err = run(capsys, "explain", "examples/mlp_fsdp.mlir", "--suggest", "1",
                       "--html", str(page))
    assert code == 0, err
    text = page.read_text()
    rows = re.findall(r'<tr class="collective" id="c-\d+"><td><a href="#(n-[^"]+)">', text)
    assert len(rows) == 4
    for anchor in rows:
        assert f'id="{anchor}"' in text  # the node in the SVG graph
    assert text.count("<details>") == 4 and "suggest: " in text


# ----- lints ----------------------------------------------------------------------------------


def _lints(text: str):
    report = collectives_report(parse_module(text, "t.mlir"), lint=True)
    return report.lints


def test_a_large_replicated_value_is_linted_with_its_waste() -> None:
    lints = _lints(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<64x64xf32, <@m, [{"x"}, {}]>>, %w: tensor<64x64xf32, <@m, [{}, {}]>>)'
        " -> tensor<64x64xf32> {\n"
        "  %0 = dot_general %a, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}"
        " : tensor<64x64xf32>\n  return %0\n}\n"
    )
    (w,) = [lint for lint in lints if lint.kind == REPLICATED and lint.value == "%w"]
    assert w.bytes == 64 * 64 * 4 * 3 // 4  # all but a quarter of it, on every device
    assert w.loc == ""  # an argument: no op line


def test_a_dim_its_axes_do_not_divide_is_linted_with_its_padding() -> None:
    lints = _lints(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<10x8xf32, <@m, [{"x"}, {}]>>) -> tensor<10x8xf32> {\n'
        "  %0 = tanh %a : tensor<10x8xf32>\n  return %0\n}\n"
    )
    pads = [lint for lint in lints if lint.kind == PADDING]
    assert {p.value for p in pads} == {"%a", "%0"}
    assert all(p.bytes == (3 * 8 - 10 * 8 // 4) * 4 for p in pads)  # 3 rows, 2.5 needed
    assert any(p.loc == "t.mlir:3:3" for p in pads)


def test_an_annotation_every_use_undoes_is_linted() -> None:
    lints = _lints(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>, '
        '%w: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32> {\n'
        "  %0 = dot_general %a, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}"
        " : tensor<16x16xf32>\n  return %0\n}\n"
    )
    over = [lint for lint in lints if lint.kind == OVERRIDDEN]
    assert over and all(lint.bytes > 0 for lint in over)


def test_a_constraint_that_changes_nothing_is_linted() -> None:
    lints = _lints(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32> {\n'
        "  %0 = tanh %a : tensor<16x16xf32>\n"
        '  %1 = sharding_constraint %0 : tensor<16x16xf32, <@m, [{"x"}, {}]>>\n'
        "  %2 = negate %1 : tensor<16x16xf32>\n  return %2\n}\n"
    )
    (nothing,) = [lint for lint in lints if lint.kind == NO_EFFECT]
    assert nothing.loc == "t.mlir:4:3"


def test_a_constraint_that_matters_is_not_linted() -> None:
    lints = _lints(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32> {\n'
        "  %0 = tanh %a : tensor<16x16xf32>\n"
        '  %1 = sharding_constraint %0 : tensor<16x16xf32, <@m, [{}, {"x"}]>>\n'
        "  %2 = negate %1 : tensor<16x16xf32>\n  return %2\n}\n"
    )
    assert not [lint for lint in lints if lint.kind == NO_EFFECT]


def test_the_engine_keeps_the_baseline_it_was_given() -> None:
    """Measuring changes leaves the compiled program and its timeline as they were."""
    base = compile_baseline(MODELS["mlp"].build("dp_tp", train="sgd"))
    before = base.totals
    report = collectives_report(base.input, suggest_n=3)
    whatif = WhatIf(report.base)
    assert whatif.why_not_fast is None
    assert report.base.totals == before
    order = {id(op): k for k, op in enumerate(report.base.propagated.main.body)}
    line = Timeline(report.base.module.main,
                    lambda op: order.get(id(report.base.copy_op(op))) if report.base.copy_op(op)
                    else None)
    assert line.peak == before.peak_bytes
