"""The `shardc` command's contract (../shared/design/CLI.md): subcommands, report schema, exit
codes, and errors without tracebacks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shardc.cli import main

MLP = "examples/mlp.mlir"
REPORT_KEYS = {
    "mesh",
    "collectives",
    "total_comm_bytes",
    "total_ring_bytes",
    "by_kind",
    "by_axis",
    "peak_memory_bytes_per_device",
    "values",
    "warnings",
    "timings_s",
}
COLLECTIVE_KEYS = {
    "kind",
    "axes",
    "global_shape",
    "local_shape",
    "dtype",
    "bytes_per_device",
    "ring_bytes_per_device",
    "group_size",
    "groups",
    "value",
}


@pytest.fixture(autouse=True)
def _root(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_opt_round_trips_every_example(capsys) -> None:
    from pathlib import Path

    for path in sorted(Path("examples").glob("*.mlir")):
        code, out, err = run(capsys, "opt", str(path))
        assert code == 0, err
        assert out == path.read_text(), path


def test_compile_json_report_schema(capsys) -> None:
    code, out, err = run(capsys, "compile", MLP, "--report", "json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report) >= REPORT_KEYS
    assert report["mesh"] == {"dp": 2, "tp": 4}
    (c,) = report["collectives"]
    assert set(c) >= COLLECTIVE_KEYS
    assert c["kind"] == "all_reduce" and c["axes"] == ["tp"]
    assert c["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # 8x64 f32 local buffer; the ring all_reduce sends 2*(n-1)/n of it.
    assert c["bytes_per_device"] == 8 * 64 * 4
    assert c["ring_bytes_per_device"] == 2 * 3 * 8 * 64 * 4 // 4
    assert report["total_comm_bytes"] == c["bytes_per_device"]
    assert report["by_kind"] == {"all_reduce": {"count": 1, "bytes": 2048}}
    assert report["by_axis"] == {"tp": 2048}
    values = {v["name"]: v for v in report["values"]}
    assert values["%x"]["local_shape"] == [8, 64]
    assert "input: 0" in values["%0"]["origin"]


def test_compile_text_report_and_emit(capsys) -> None:
    code, out, _ = run(capsys, "compile", MLP, "--report", "text")
    assert code == 0 and "all_reduce" in out and "peak live memory" in out
    code, out, _ = run(capsys, "compile", MLP, "--emit", "spmd")
    assert code == 0 and "spmd.all_reduce" in out and "tensor<8x64xf32>" in out
    code, out, _ = run(capsys, "compile", MLP, "--emit", "sdy")
    assert code == 0 and "sdy.all_reduce" in out or "sdy.mesh" in out
    code, out, _ = run(capsys, "compile", MLP)
    assert code == 0 and "all_reduce %" in out


def test_run_check_passes_and_fails(capsys, tmp_path) -> None:
    code, out, err = run(capsys, "run", MLP, "--check")
    assert code == 0, err
    assert "ok" in out
    code, out, err = run(capsys, "run", MLP, "--check", "--rtol", "-1")
    assert code == 1 and "FAILED" in out and "beyond tolerance" in err


def test_run_with_inputs_file_and_output(capsys, tmp_path) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w1 = rng.standard_normal((64, 256)).astype(np.float32)
    w2 = rng.standard_normal((256, 64)).astype(np.float32)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=x, w1=w1, w2=w2)
    out_path = tmp_path / "out.npz"
    code, _, err = run(capsys, "run", MLP, "--inputs", str(inputs), "-o", str(out_path))
    assert code == 0, err
    got = np.load(out_path)["arr_0"]
    want = np.maximum(x @ w1, 0) @ w2
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    np.savez(inputs, x=x)
    code, _, err = run(capsys, "run", MLP, "--inputs", str(inputs))
    assert code == 1 and "no array for argument 1" in err


def test_mesh_override(capsys) -> None:
    code, out, err = run(capsys, "run", MLP, "--mesh", "dp=1,tp=3", "--check")
    assert code == 0, err
    code, _, err = run(capsys, "compile", MLP, "--mesh", "dp=2")
    assert code == 1 and "give a size for exactly those axes" in err
    code, _, err = run(capsys, "compile", MLP, "--mesh", "dp=two")
    assert code == 2 and "name=size" in err


def test_models_and_model_compile(capsys) -> None:
    code, out, _ = run(capsys, "models")
    assert code == 0 and "transformer" in out and "--preset dp_tp" in out
    code, out, err = run(
        capsys,
        "compile",
        "--model",
        "transformer",
        "--layers",
        "2",
        "--mesh",
        "dp=2,tp=4",
        "--preset",
        "dp_tp",
        "--report",
        "json",
    )
    assert code == 0, err
    kinds = [c["kind"] for c in json.loads(out)["collectives"]]
    assert kinds == ["all_reduce"] * 4  # Megatron: one per attention and one per MLP, per layer
    code, _, err = run(capsys, "compile", "--model", "nope")
    assert code == 2 and "unknown model" in err


def test_explain_text_html_and_grid(capsys, tmp_path) -> None:
    html = tmp_path / "out.html"
    code, out, err = run(capsys, "explain", MLP, "--html", str(html))
    assert code == 0, err
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") or "<html" in page
    assert "http://" not in page and "https://" not in page
    code, out, _ = run(capsys, "explain", MLP)
    assert code == 0 and "%x" in out and "input: 0" in out
    code, out, _ = run(capsys, "explain", MLP, "--value", "0")
    assert code == 0 and 'split 4 ways over "tp"' in out


def test_user_errors_are_located_and_exit_1(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        'mesh @m = <["x"=2]>\n\nfunc @main(%a: tensor<4xf32, <@m, [{"y"}]>>) -> tensor<4xf32> {\n  return %a\n}\n'
    )
    for command in ("opt", "compile", "run", "explain"):
        code, _, err = run(capsys, command, str(bad))
        assert code == 1, (command, err)
        assert f"{bad}:3:" in err and "unknown axis 'y'" in err and "Traceback" not in err
