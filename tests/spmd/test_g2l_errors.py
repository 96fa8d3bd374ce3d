"""sdy-convert-global-to-local on programs Shardy's pass rejects: a located error, exit 1."""

from __future__ import annotations

import pytest

from shardc.cli import main

MESH = 'sdy.mesh @m = <["x"=2, "y"=2]>\n'

CASES = {
    "uneven": (
        'func.func @f(%arg0: tensor<5xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> '
        '(tensor<5xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) {\n'
        '  return %arg0 : tensor<5xf32>\n}\n',
        ":2:1: error:", "does not split evenly 2 ways"),
    "noop_permute": (
        'func.func @f(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> '
        '(tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) {\n'
        '  %0 = sdy.collective_permute %arg0 out_sharding=<@m, [{"x"}]> : tensor<4xf32>\n'
        '  return %0 : tensor<4xf32>\n}\n',
        ":3:3: error:", "already laid out as its out_sharding"),
    "partial_slice_of_sharded_dim": (
        'func.func @f(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> '
        '(tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) {\n'
        '  %0 = stablehlo.slice %arg0 [1:5] {sdy.sharding = #sdy.sharding_per_value<[<@m, '
        '[{"x"}]>]>} : (tensor<8xf32>) -> tensor<4xf32>\n'
        '  return %0 : tensor<4xf32>\n}\n',
        ":3:3: error:", "requires device communication"),
    "dot_without_its_all_reduce": (
        'func.func @f(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"y"}]>}, '
        '%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"y"}, {}]>}) -> '
        '(tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}], unreduced={"y"}>}) {\n'
        '  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] '
        '{sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}], unreduced={"y"}>]>} : '
        '(tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>\n'
        '  return %0 : tensor<4x4xf32>\n}\n',
        ":3:3: error:", "one user to be an sdy.all_reduce"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rejected_with_a_located_error(name: str, tmp_path, capsys) -> None:
    body, where, words = CASES[name]
    path = tmp_path / "in.mlir"
    path.write_text(MESH + body)
    code = main(["opt", str(path), "-p", "sdy-convert-global-to-local"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"{path}{where}" in err and words in err, err
    assert "Traceback" not in err
