"""Limits with clear errors (issue 13): a located error at once, and a `--limit` to raise each;
an output file is written only when the command succeeds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shardc.cli import main
from shardc.ir.diagnostics import ShardcError
from shardc.ir.limits import Limits, check_source
from shardc.ir.parser import parse_module

ROOT = Path(__file__).resolve().parent.parent
SHARD_MAP = (ROOT / "examples" / "shard_map.mlir").read_text()
HUGE = SHARD_MAP.replace('"dp"=2', '"dp"=99999999999999999999999')


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("fmt", ["native", "sdy"])
def test_a_huge_mesh_is_a_located_error_at_once(capsys, tmp_path, fmt):
    text = HUGE
    if fmt == "sdy":
        code, out, _ = run(capsys, "export", write(tmp_path, "ok.mlir", SHARD_MAP))
        assert code == 0
        text = out.replace('"dp"=2', '"dp"=99999999999999999999999')
    path = write(tmp_path, "huge.mlir", text)
    start = time.perf_counter()
    code, _, err = run(capsys, "opt", path)
    assert time.perf_counter() - start < 5
    assert code == 1
    line = 1 if fmt == "native" else 2  # the sdy text opens with `module {`
    assert f"{path}:{line}:" in err and "99999999999999999999999 devices" in err
    assert "--limit devices=N" in err


def test_the_device_limit_can_be_raised(capsys, tmp_path):
    big = SHARD_MAP.replace('"dp"=2', '"dp"=32768')  # 131072 devices
    path = write(tmp_path, "big.mlir", big)
    code, _, err = run(capsys, "opt", path)
    assert code == 1 and "131072 devices, more than the limit of 65536" in err
    code, _, err = run(capsys, "opt", path, "--limit", "devices=200000")
    assert code == 0, err


def test_an_element_count_past_int64_is_a_located_error(capsys, tmp_path):
    big = "tensor<99999999999x99999999999x9999999999xf32>"
    text = f"func @f(%x: {big}) -> {big} {{\n  return %x\n}}\n"
    code, _, err = run(capsys, "opt", write(tmp_path, "big.mlir", text))
    assert code == 1 and ":1:1: error: argument %x has" in err and "2^63 - 1" in err


def test_deep_nesting_is_located_where_it_passes_the_limit():
    text = "func @f() -> () {\n  " + "(" * 300 + ")" * 300 + "\n}\n"
    with pytest.raises(ShardcError) as e:
        parse_module(text, "deep.mlir")
    assert str(e.value.loc) == "deep.mlir:2:258"  # bracket 257 counting the function's {
    assert "--limit depth=N" in e.value.message
    check_source(text, "deep.mlir", Limits(depth=400))  # raised: no longer an error


def test_brackets_in_strings_and_comments_do_not_nest():
    check_source('// ' + "(" * 1000 + '\n"' + "[" * 1000 + '"\n', "x.mlir")


def test_a_file_over_the_size_limit_is_refused_before_reading(capsys, tmp_path):
    path = write(tmp_path, "big.mlir", "// padding\n" * 200_000)  # ~2.2 MB
    code, _, err = run(capsys, "opt", path, "--limit", "file-mb=1")
    assert code == 1 and f"{path}:1:1: error: the input is larger than the limit of 1 MiB" in err
    code, _, _ = run(capsys, "opt", path)
    assert code == 0


def test_format_detection_is_linear_in_the_input(capsys, tmp_path):
    """A file of 200,000 comment lines took 9 minutes: `^\\s*module` backtracked over every
    blank line left after stripping comments."""
    path = write(tmp_path, "comments.mlir", "// padding\n" * 200_000)
    start = time.process_time()
    code, _, _ = run(capsys, "import", path)
    assert code == 0 and time.process_time() - start < 10


def test_run_refuses_values_too_large_to_simulate(capsys, tmp_path):
    text = 'mesh @m = <["x"=8]>\n\nfunc @f(%x: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> ' \
           '{\n  %0 = tanh %x : tensor<4096x4096xf32>\n  return %0\n}\n'
    path = write(tmp_path, "big.mlir", text)
    code, _, err = run(capsys, "run", path, "--limit", "run-mb=64")
    assert code == 1 and "--limit run-mb=N" in err and "over 8 simulated devices" in err


@pytest.mark.parametrize("bad", ["devices", "devices=x", "speed=3", "depth=0"])
def test_a_bad_limit_is_bad_usage(capsys, bad):
    code, _, err = run(capsys, "opt", "examples/mlp.mlir", "--limit", bad)
    assert code == 2 and "limit" in err


@pytest.mark.parametrize("command", [["opt"], ["compile"], ["import"]])
def test_an_output_file_is_written_only_on_success(capsys, tmp_path, command):
    bad = write(tmp_path, "bad.mlir", "func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                                      "  %0 = tanh %y : tensor<4xf32>\n  return %0\n}\n")
    fresh, kept = tmp_path / "fresh.out", tmp_path / "kept.out"
    kept.write_text("keep me")
    for out in (fresh, kept):
        code, _, err = run(capsys, *command, bad, "-o", str(out))
        assert code == 1 and "error" in err
    assert not fresh.exists()
    assert kept.read_text() == "keep me"


# A loop whose counter never moves: `while` runs until --limit while-iterations, then a located
# error (fuzz seed 73 found `run` hanging on such a loop).
STUCK = '''mesh @m = <["x"=2]>

func @main(%x: tensor<4x2xf32, <@m, [{"x"}, {}]>>) -> tensor<4x2xf32, <@m, [{"x"}, {}]>> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @body, cond = @cond} : tensor<i32>, tensor<4x2xf32>
  return %1
}

func private @cond(%i: tensor<i32>, %x: tensor<4x2xf32>) -> tensor<i1> {
  %n = constant {value = dense<TRIPS>} : tensor<i32>
  %0 = compare %i, %n {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @body(%i: tensor<i32>, %x: tensor<4x2xf32>) -> (tensor<i32>, tensor<4x2xf32>) {
  %s = constant {value = dense<STEP>} : tensor<i32>
  %0 = add %i, %s : tensor<i32>
  %1 = tanh %x : tensor<4x2xf32>
  return %0, %1
}
'''


def loop(trips: int, step: int) -> str:
    return STUCK.replace("TRIPS", str(trips)).replace("STEP", str(step))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_loop_that_never_ends_is_a_located_error(capsys, tmp_path, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    path = write(tmp_path, "stuck.mlir", loop(3, 0))
    start = time.process_time()
    code, _, err = run(capsys, "run", path, "--check", "--backend", backend,
                       "--limit", "while-iterations=500")
    assert code == 1 and time.process_time() - start < 30
    assert f"{path}:5:3: error: 'while' op: its condition still holds after 500 iterations" in err
    assert "--limit while-iterations=N" in err


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_loop_of_exactly_the_limit_runs(capsys, tmp_path, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    path = write(tmp_path, "loop.mlir", loop(50, 1))
    code, out, _ = run(capsys, "run", path, "--check", "--backend", backend,
                       "--limit", "while-iterations=50")
    assert code == 0 and "ok" in out
    code, _, err = run(capsys, "run", path, "--backend", backend,
                       "--limit", "while-iterations=49")
    assert code == 1 and "after 49 iterations" in err


def test_the_reference_interpreter_takes_the_limit():
    import numpy as np

    from shardc.executors.reference import run_reference

    module = parse_module(loop(3, 0))
    with pytest.raises(ShardcError, match="after 20 iterations") as e:
        run_reference(module, [np.ones((4, 2), np.float32)], limits=Limits(while_iterations=20))
    assert e.value.loc is not None and e.value.loc.line == 5
    assert run_reference(parse_module(loop(7, 1)), [np.ones((4, 2), np.float32)],
                         limits=Limits(while_iterations=7))[0].shape == (4, 2)
