"""StableHLO + sdy export: exact round trips of JAX's and Shardy's text, floats, native modules."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from shardc.ir.attributes import DenseElements, Symbol
from shardc.ir.core import Function, Module, Operation
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import get_op_def
from shardc.ir.parser import parse_module
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo import ExportError, export_stablehlo, import_stablehlo
from shardc.stablehlo.literals import format_float

DATA = Path(__file__).parent / "data" / "stablehlo"
EXAMPLES = Path(__file__).parent.parent / "examples"

from tests.test_stablehlo_import import IMPORTABLE  # noqa: E402 - every corpus case

ROUND_TRIP_FILES = (
    [f"{c}.mlir" for c in IMPORTABLE]
    + [f"{c}.propagated.mlir" for c in IMPORTABLE]
    + [f"extras/{c}.open.mlir" for c in IMPORTABLE]
    + [f"extras/{c}.rules.mlir" for c in IMPORTABLE]
    + [f"extras/{c}.origins.mlir" for c in
       ("mlp", "attention", "reshape_split_merge", "with_sharding_constraint")]
    + [f"extras/priorities_handwritten{v}.mlir" for v in ("", ".open", ".propagated")]
    + [f"regions/{p.name}" for p in sorted((DATA / "regions").glob("*.mlir"))]
)


@pytest.mark.parametrize("path", ROUND_TRIP_FILES)
def test_corpus_round_trips_exactly(path: str):
    text = (DATA / path).read_text()
    assert export_stablehlo(import_stablehlo(text, path)) == text


def test_debug_info_round_trips_modulo_locations():
    text = (DATA / "extras/mlp.debug_info.mlir").read_text()
    stripped = "\n".join(
        re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", line)
        for line in text.splitlines() if not line.startswith("#loc")
    ) + "\n"
    module = import_stablehlo(text)
    assert export_stablehlo(module) == stripped
    with_locs = export_stablehlo(module, debug_info=True)
    assert re.search(r'dot_general .* loc\(".*generate\.py":\d+:\d+\)', with_locs)
    again = import_stablehlo(with_locs)
    dots = [op for op in again.walk() if op.name == "dot_general"]
    assert dots[0].loc_written and dots[0].loc.file.endswith("generate.py")


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        (1.0, "f32", "1.000000e+00"),
        (0.0, "f32", "0.000000e+00"),
        (-0.0, "f32", "-0.000000e+00"),
        (128.0, "f32", "1.280000e+02"),
        (0.5, "f32", "5.000000e-01"),
        (0.044715, "f32", "4.471500e-02"),
        (0.797884583, "f32", "0.797884583"),
        (9.99999974e-06, "f32", "9.99999974E-6"),
        (-math.inf, "f32", "0xFF800000"),
        (math.inf, "f32", "0x7F800000"),
        (math.nan, "f32", "0x7FC00000"),
        (-math.inf, "bf16", "0xFF80"),
        (1.0, "bf16", "1.000000e+00"),
        (123456792.0, "f32", "0x4CEB79A3"),
    ],
)
def test_float_formatting_matches_mlir(value: float, dtype: str, text: str):
    from shardc.stablehlo.attributes import round_to_dtype

    assert format_float(round_to_dtype(value, dtype), dtype) == text


def _structure(module: Module) -> list:
    """Everything but value names: meshes, signatures, ops, attributes, dataflow by position.
    Functions that only serve as regions have no name in MLIR's text: they are named by the
    order they are first referenced in (`region0`, ...) and listed in that order, last."""
    from shardc.ir.ops.manual import fill_all
    from shardc.stablehlo.inlining import region_only_functions, region_symbols

    fill_all(module)  # the importer types a manual_computation's values by its attributes
    regions = region_only_functions(module)
    order: list[str] = []
    for f in module.functions.values():
        for op in f.body:
            order.extend(n for n in region_symbols(op) if n in regions and n not in order)
    for name in order:  # regions of regions
        for op in module.functions[name].body:
            order.extend(n for n in region_symbols(op) if n in regions and n not in order)
    rename = {name: f"region{i}" for i, name in enumerate(order)}
    functions = [f for f in module.functions.values() if f.name not in regions]
    functions += [module.functions[n] for n in order]
    out: list = [sorted((m.name, m.axes, m.device_ids) for m in module.meshes.values())]
    for f in functions:
        index = {id(a): ("arg", i) for i, a in enumerate(f.args)}
        out.append((rename.get(f.name, f.name), f.visibility, [a.type for a in f.args],
                    f.result_types, f.arg_attrs, f.res_attrs))
        for k, op in enumerate(f.body):
            for j, r in enumerate(op.results):
                index[id(r)] = (k, j)
            attrs = {k: _renamed(v, rename) for k, v in _explicit(op).items()}
            out.append((op.name, [index[id(v)] for v in op.operands],
                        [r.type for r in op.results], attrs))
    return out


def _renamed(value, rename: dict[str, str]):
    if isinstance(value, Symbol):
        return Symbol(rename.get(value.name, value.name))
    if isinstance(value, tuple):
        return tuple(_renamed(v, rename) for v in value)
    return value


def _explicit(op) -> dict:
    """Attributes other than those equal to the op's default (StableHLO prints no defaults)."""
    op_def = get_op_def(op.name)
    specs = op_def.attrs if op_def is not None else {}
    out = {
        k: v for k, v in op.attributes.items()
        if not (k in specs and not specs[k].required and v == specs[k].default)
    }
    if op.name == "constant":  # f32 literals are compared as the f32 values they denote
        t = op.results[0].type
        out["value"] = out["value"].to_numpy(t.shape, t.dtype).tobytes()
    return out


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.mlir")))
def test_native_examples_survive_export_and_import(example: str):
    module = parse_module((EXAMPLES / example).read_text(), example)
    text = export_stablehlo(module)
    back = import_stablehlo(text, example)
    assert _structure(back) == _structure(module)


COLLECTIVES = """\
module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func public @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}], unreduced={"y"}>}) -> tensor<16x8xf32> {
    %0 = sdy.all_reduce {"y"} %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<16x8xf32>
    %1 = sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<16x8xf32>
    %2 = sdy.all_gather [{}, {"x"}] %1 out_sharding=<@mesh, [{}, {}]> : tensor<16x8xf32>
    %3 = sdy.all_slice [{"x", "y"}, {}] %2 out_sharding=<@mesh, [{"x", "y"}, {}]> : tensor<16x8xf32>
    %4 = sdy.collective_permute %3 out_sharding=<@mesh, [{"y", "x"}, {}]> : tensor<16x8xf32>
    %5 = sdy.propagation_barrier %4 allowed_direction=BACKWARD {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y", "x", ?}, {?}]>]>} : tensor<16x8xf32>
    sdy.sharding_group %5 group_id=3 : tensor<16x8xf32>
    %6 = sdy.sharding_constraint %5 <@mesh, [{"x", ?}, {?}]> : tensor<16x8xf32>
    %7 = sdy.reshard %6 <@mesh, [{"y":(1)2}, {}]> : tensor<16x8xf32>
    return %7 : tensor<16x8xf32>
  }
}
"""

SCATTER_AND_FRIENDS = """\
module @g {
  func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<3x1xi32>, %arg2: tensor<3x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
    %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %8 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %8 : tensor<f32>
    }) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.slice %0 [2:6, 0:4:2] : (tensor<8x4xf32>) -> tensor<4x2xf32>
    %2 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      stablehlo.return %arg4 : tensor<f32>
    }) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %cst = stablehlo.constant dense<[[1.000000e+00, 2.500000e+00], [-3.000000e+00, 0x7F800000]]> : tensor<2x2xf32>
    %c = stablehlo.constant dense<[true, false]> : tensor<2xi1>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %c_1 = stablehlo.constant dense<-7> : tensor<i8>
    %3 = stablehlo.is_finite %cst : (tensor<2x2xf32>) -> tensor<2x2xi1>
    %4 = stablehlo.compare GT, %cst, %cst : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
    %5 = stablehlo.convert %cst_0 : (tensor<bf16>) -> tensor<f32>
    %6 = stablehlo.convert %5 : tensor<f32>
    %7 = chlo.square %6 : tensor<f32> -> tensor<f32>
    return %0, %2 : tensor<8x4xf32>, tensor<8x4xf32>
  }
}
"""


@pytest.mark.parametrize("text", [COLLECTIVES, SCATTER_AND_FRIENDS],
                         ids=["collectives", "scatter"])
def test_handwritten_sdy_text_round_trips(text: str):
    assert export_stablehlo(import_stablehlo(text)) == text


def test_exports_shardings_in_shardys_places():
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})
    module = parse_module(
        'mesh @mesh = <["dp"=2, "tp"=4]>\n\n'
        'func @main(%x: tensor<8x16xf32, <@mesh, [{"dp", ?}, {?}]>>) -> tensor<8x16xf32> {\n'
        '  %0 = tanh %x : tensor<8x16xf32, <@mesh, [{"dp"}, {"tp":(1)2}]>>\n'
        "  return %0\n}\n"
    )
    assert module.meshes["mesh"] == mesh
    text = export_stablehlo(module)
    assert ('%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}'
            in text)
    assert ('%0 = stablehlo.tanh %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, '
            '[{"dp"}, {"tp":(1)2}]>]>} : tensor<8x16xf32>' in text)
    assert text.startswith("module {\n  sdy.mesh @mesh = <[\"dp\"=2, \"tp\"=4]>\n")


def test_new_constants_get_mlir_names():
    module = Module()
    func = Function("main", [], [DistributedTensorType((), "f32")])
    module.add_function(func)
    values = []
    for dtype, v in (("f32", 1.0), ("i32", 3), ("f32", 2.0), ("i1", True)):
        op = Operation("constant", [], [DistributedTensorType((), dtype)],
                       {"value": DenseElements((v,))})
        func.body.append(op)
        values.append(op.result)
    func.body.append(Operation("return", [values[0]], []))
    text = export_stablehlo(module)
    assert "%cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>" in text
    assert "%c = stablehlo.constant dense<3> : tensor<i32>" in text
    assert "%cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>" in text
    assert "%c_1 = stablehlo.constant dense<true> : tensor<i1>" in text


def test_ops_without_stablehlo_form_are_export_errors():
    module = parse_module(
        "func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = reciprocal %x : tensor<4xf32>\n"
        "  return %0\n}\n"
    )
    with pytest.raises(ExportError, match="reciprocal"):
        export_stablehlo(module)
