"""StableHLO + sdy import: the JAX corpus, every supported form, locations, speed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.attributes import AllToAllParam, Keyword, OpaqueAttr, Symbol
from shardc.ir.mesh import AxisRef
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.stablehlo import export_stablehlo, import_stablehlo, looks_like_stablehlo
from shardc.stablehlo.attributes import MESH_ATTRS_PREFIX, SDY_CONSTANT_MARKER

DATA = Path(__file__).parent / "data" / "stablehlo"

# Every case of the JAX corpus imports (tests/data/stablehlo/README.md lists what each covers).
IMPORTABLE = [
    "attention", "bf16", "broadcast_reduce", "concat_slice_pad", "cond_switch", "conv2d",
    "donation_and_aliasing", "embedding_logits_xent", "embedding_lookup", "extra_syntax",
    "func_call", "integer_ops", "layer_norm", "megatron_mlp", "mesh_3axis", "mesh_device_order",
    "mesh_size_one_axis", "misc_ops", "mlp", "mlp_dp_only", "replicated_and_multiaxis",
    "reshape_split_merge", "scan_loop", "shard_map", "shard_map_partial", "softmax",
    "transformer_block", "transpose_chain", "unconstrained", "while_loop",
    "with_sharding_constraint",
]


def _load(name: str) -> str:
    return (DATA / name).read_text()


def test_corpus_is_fully_classified():
    cases = {p.name[: -len(".mlir")] for p in DATA.glob("*.mlir") if "." not in p.stem}
    assert cases == set(IMPORTABLE)


@pytest.mark.parametrize("case", IMPORTABLE)
@pytest.mark.parametrize("variant", ["", ".propagated", "/open", "/rules"])
def test_corpus_case_imports(case: str, variant: str):
    path = f"extras/{case}.{variant[1:]}.mlir" if variant.startswith("/") else case + variant
    path = path if path.endswith(".mlir") else path + ".mlir"
    module = import_stablehlo(_load(path), path)
    assert module.main.name == "main"
    assert "mesh" in module.meshes
    # The native text of an imported module parses back (native round trip of imports).
    assert print_module(parse_module(print_module(module))) == print_module(module)


def test_mlp_shardings_and_ops():
    m = import_stablehlo(_load("mlp.mlir"), "mlp.mlir")
    assert m.attributes["sym_name"] == "jit_f"
    assert m.attributes["mhlo.num_partitions"] == OpaqueAttr("8 : i32")
    assert MESH_ATTRS_PREFIX + "mesh" in m.attributes
    main = m.functions["main"]
    assert [str(a.mapping) for a in main.args] == [
        '<@mesh, [{"dp"}, {}]>', '<@mesh, [{}, {"tp"}]>', '<@mesh, [{"tp"}, {}]>'
    ]
    assert str(main.result_types[0].mapping) == '<@mesh, [{"dp"}, {}]>'
    assert main.res_attrs[0] == {"jax.result_info": OpaqueAttr('"result"')}
    dot, call, dot2, ret = main.body.ops
    assert dot.name == "dot_general"
    assert dot.attributes["lhs_contracting_dims"] == (1,)
    assert dot.attributes["rhs_contracting_dims"] == (0,)
    assert dot.attributes["precision"] == (Keyword("DEFAULT"), Keyword("DEFAULT"))
    assert call.name == "call" and call.attributes["callee"] == Symbol("relu")
    assert call.operands[0] is dot.result and dot2.operands[0] is call.result
    assert ret.name == "return" and ret.operands[0] is dot2.result
    relu = m.functions["relu"]
    assert relu.is_private
    cst = relu.body.ops[0]
    assert cst.name == "constant" and cst.result.name_hint == "cst"


def test_op_shardings_become_result_mappings():
    m = import_stablehlo(_load("extras/reshape_split_merge.open.mlir"))
    ops = m.functions["main"].body.ops
    assert str(ops[2].result.mapping) == '<@mesh, [{"dp", "tp":(1)2, ?}, {"tp":(2)2, ?}, {?}]>'
    assert ops[2].result.mapping.dims[0].axes[1] == AxisRef("tp", 1, 2)
    assert ops[4].name == "constant" and ops[4].attributes[SDY_CONSTANT_MARKER] is True
    assert ops[4].result.mapping is None


def test_constraint_priorities_and_reshard():
    m = import_stablehlo(_load("extras/priorities_handwritten.mlir"))
    main = m.functions["main"]
    assert [d.priority for d in main.args[1].mapping.dims] == [0, 2]
    constraint = main.body.ops[1]
    assert constraint.name == "sharding_constraint"
    assert str(constraint.result.mapping) == '<@mesh, [{?}, {"tp", ?}p1]>'
    assert "precision" not in main.body.ops[0].attributes
    prop = import_stablehlo(_load("with_sharding_constraint.propagated.mlir"))
    assert any(op.name == "reshard" for op in prop.walk())


def test_constants_floats_and_special_values():
    m = import_stablehlo(_load("embedding_logits_xent.mlir"))
    values = {}
    for op in m.walk():
        if op.name == "constant":
            v = op.attributes["value"]
            values.setdefault(op.result.type.dtype, []).append(v.values[0])
    assert -math.inf in values["f32"]
    assert any(math.isnan(x) for x in values["f32"])
    assert True in values["i1"]
    gelu = import_stablehlo(_load("megatron_mlp.mlir"))
    floats = [op.attributes["value"].values[0] for op in gelu.walk() if op.name == "constant"]
    assert any(abs(x - 0.797884583) < 1e-7 for x in floats)
    bf16 = import_stablehlo(_load("bf16.mlir"))
    assert any(op.attributes["value"].values[0] == -math.inf
               for op in bf16.walk() if op.name == "constant" and op.result.type.dtype == "bf16")


_ARITH = """func.func @f(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %0 = "arith.constant"() <{value = dense<2.5> : tensor<4xf32>}> : () -> tensor<4xf32>
  %1 = stablehlo.multiply %arg0, %c : tensor<4xi32>
  return %1, %0 : tensor<4xi32>, tensor<4xf32>
}
"""


def test_arith_constant_is_a_constant_that_prints_back_as_written():
    """MLIR's `arith.constant` of a tensor (pretty or generic) imports as a `constant`; it
    exports as MLIR prints it (jaxlib's parser prints this text for _ARITH)."""
    m = import_stablehlo(_ARITH)
    consts = [op for op in m.walk() if op.name == "constant"]
    assert [c.attributes["value"].values for c in consts] == [(1, 2, 3, 4), (2.5,)]
    out = run_reference(m, [np.arange(4, dtype=np.int32)], function="f")
    assert out[0].tolist() == [0, 2, 6, 12] and out[1].tolist() == [2.5] * 4
    assert export_stablehlo(m) == (
        "module {\n"
        "  func.func @f(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>) {\n"
        "    %cst = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>\n"
        "    %cst_0 = arith.constant dense<2.500000e+00> : tensor<4xf32>\n"
        "    %0 = stablehlo.multiply %arg0, %cst : tensor<4xi32>\n"
        "    return %0, %cst_0 : tensor<4xi32>, tensor<4xf32>\n"
        "  }\n"
        "}\n")


def test_generic_sdy_constant_stays_sdy_constant():
    text = ('func.func @f() -> tensor<2xi32> {\n'
            '  %0 = "sdy.constant"() <{value = dense<[5, 6]> : tensor<2xi32>}> : () -> tensor<2xi32>\n'
            "  return %0 : tensor<2xi32>\n}\n")
    m = import_stablehlo(text)
    assert m.functions["f"].body.first.attributes[SDY_CONSTANT_MARKER] is True
    assert "%0 = sdy.constant dense<[5, 6]> : tensor<2xi32>" in export_stablehlo(m)


def test_gather_and_reduce_attributes():
    m = import_stablehlo(_load("embedding_lookup.mlir"))
    gather = next(op for op in m.walk() if op.name == "gather")
    assert gather.attributes["offset_dims"] == (2,)
    assert gather.attributes["collapsed_slice_dims"] == (0,)
    assert gather.attributes["start_index_map"] == (0,)
    assert gather.attributes["index_vector_dim"] == 2
    assert gather.attributes["slice_sizes"] == (1, 32)
    assert gather.attributes["indices_are_sorted"] is False
    kinds = {op.attributes["kind"].word for op in m.walk() if op.name == "reduce"}
    assert kinds == {"and"}


def test_mesh_device_ids_and_size_one_axis():
    m = import_stablehlo(_load("mesh_device_order.mlir"))
    assert m.meshes["mesh"].device_ids == (0, 2, 4, 6, 1, 3, 5, 7)
    one = import_stablehlo(_load("mesh_size_one_axis.mlir"))
    assert one.meshes["mesh"].axes == (("pp", 1), ("dp", 8))


def test_debug_info_locations():
    text = _load("extras/mlp.debug_info.mlir")
    m = import_stablehlo(text, "mlp.debug_info.mlir")
    dot = m.functions["main"].body.ops[0]
    assert dot.loc_written
    assert dot.loc.file.endswith("generate.py") and dot.loc.line > 0 and dot.loc.col > 0
    # An op whose location names no file keeps its position in the imported text.
    for op in m.walk():
        assert op.loc is not None and op.loc.line > 0


SDY_OPS = """\
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}], unreduced={"y"}>}) -> tensor<16x8xf32> {
  %0 = sdy.all_reduce {"y"} %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<16x8xf32>
  %1 = sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<16x8xf32>
  %2 = sdy.all_gather [{}, {"x"}] %1 out_sharding=<@mesh, [{}, {}]> : tensor<16x8xf32>
  %3 = sdy.all_slice [{"x", "y"}, {}] %2 out_sharding=<@mesh, [{"x", "y"}, {}]> : tensor<16x8xf32>
  %4 = sdy.collective_permute %3 out_sharding=<@mesh, [{"y", "x"}, {}]> : tensor<16x8xf32>
  %5 = sdy.propagation_barrier %4 allowed_direction=BACKWARD : tensor<16x8xf32>
  sdy.sharding_group %5 group_id=3 : tensor<16x8xf32>
  %6 = sdy.sharding_constraint %5 <@mesh, [{"x", ?}, {?}]> : tensor<16x8xf32>
  return %6 : tensor<16x8xf32>
}
"""


def test_sdy_ops_and_collectives():
    m = import_stablehlo(SDY_OPS, "sdy.mlir")
    ops = m.functions["f"].body.ops
    assert [op.name for op in ops] == [
        "all_reduce", "all_to_all", "all_gather", "all_slice", "collective_permute",
        "propagation_barrier", "sharding_group", "sharding_constraint", "return",
    ]
    assert ops[0].attributes["reduction_axes"] == (AxisRef("y"),)
    assert ops[1].attributes == {"params": (AllToAllParam((AxisRef("x"),), 0, 1),)}
    assert ops[2].attributes["gathering_axes"] == ((), (AxisRef("x"),))
    assert ops[5].attributes["allowed_direction"] == Keyword("BACKWARD")
    assert ops[6].attributes["group_id"] == 3
    assert str(ops[4].result.mapping) == '<@mesh, [{"y", "x"}, {}]>'


GENERIC = """\
module @g {
  func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<4x6xf32>, %arg2: tensor<3x1xi32>, %arg3: tensor<3x4xf32>) -> (tensor<8xf32>, tensor<8x4xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]}> : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %6 = "stablehlo.maximum"(%arg5, %arg4) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) : (tensor<8x6xf32>, tensor<f32>) -> tensor<8xf32>
    %3 = "stablehlo.compare"(%2, %2) <{comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    %4 = "stablehlo.scatter"(%arg0, %arg2, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %6 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %5 = stablehlo.reduce(%0 init: %1) across dimensions = [1] : (tensor<8x6xf32>, tensor<f32>) -> tensor<8xf32>
     reducer(%arg4: tensor<f32>, %arg5: tensor<f32>)  {
      %6 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }
    "func.return"(%2, %4) : (tensor<8xf32>, tensor<8x4xf32>) -> ()
  }
}
"""


def test_generic_forms_and_regions():
    m = import_stablehlo(GENERIC, "generic.mlir")
    ops = m.functions["main"].body.ops
    assert [op.name for op in ops] == [
        "dot_general", "constant", "reduce", "compare", "scatter", "reduce", "return"
    ]
    assert ops[0].attributes["precision"] == (Keyword("DEFAULT"), Keyword("HIGHEST"))
    assert ops[2].attributes["kind"] == Keyword("maximum")
    assert ops[2].attributes["dimensions"] == (1,)
    assert ops[3].attributes["comparison_direction"] == Keyword("GE")
    assert ops[4].attributes["kind"] == Keyword("add")
    assert ops[4].attributes["scatter_dims_to_operand_dims"] == (0,)
    assert ops[5].attributes["kind"] == Keyword("add")


def test_slice_pad_concat_iota_forms():
    text = """\
func.func @f(%arg0: tensor<16x48xf32>, %arg1: tensor<f32>) -> tensor<8x24xf32> {
  %0 = stablehlo.slice %arg0 [2:10, 0:48:2] : (tensor<16x48xf32>) -> tensor<8x24xf32>
  %1 = stablehlo.pad %0, %arg1, low = [0, 1], high = [0, 2], interior = [0, 1] : (tensor<8x24xf32>, tensor<f32>) -> tensor<8x50xf32>
  %2 = stablehlo.concatenate %0, %0, dim = 1 : (tensor<8x24xf32>, tensor<8x24xf32>) -> tensor<8x48xf32>
  %3 = stablehlo.iota dim = 1 : tensor<8x48xi32>
  %4 = stablehlo.reverse %0, dims = [0] : tensor<8x24xf32>
  %5 = stablehlo.clamp %arg1, %0, %arg1 : (tensor<f32>, tensor<8x24xf32>, tensor<f32>) -> tensor<8x24xf32>
  %6 = chlo.erf %5 : tensor<8x24xf32> -> tensor<8x24xf32>
  %7 = chlo.erf_inv %6 : tensor<8x24xf32> -> tensor<8x24xf32>
  return %7 : tensor<8x24xf32>
}
"""
    ops = import_stablehlo(text).functions["f"].body.ops
    assert ops[0].attributes == {"start_indices": (2, 0), "limit_indices": (10, 48),
                                 "strides": (1, 2)}
    assert ops[1].attributes["interior_padding"] == (0, 1)
    assert ops[2].attributes == {"dimension": 1}
    assert ops[3].attributes == {"iota_dimension": 1}
    assert ops[4].attributes == {"dimensions": (0,)}
    assert ops[5].name == "clamp" and ops[6].name == "erf" and ops[7].name == "erf_inv"
    assert ops[7].operands[0] is ops[6].results[0]
    assert "chlo.erf_inv %6 : tensor<8x24xf32> -> tensor<8x24xf32>" in export_stablehlo(
        import_stablehlo(text))


def test_detect_format():
    assert looks_like_stablehlo(_load("mlp.mlir"))
    assert looks_like_stablehlo(_load("extras/mlp.debug_info.mlir"))
    assert looks_like_stablehlo(SDY_OPS)
    assert looks_like_stablehlo("// comment\nfunc.func @f() {\n  return\n}\n")
    native = (Path(__file__).parent.parent / "examples" / "mlp.mlir").read_text()
    assert not looks_like_stablehlo(native)
    imported = print_module(import_stablehlo(_load("extras/mlp.open.mlir")))
    assert not looks_like_stablehlo(imported)


def test_many_functions_import():
    """Ten copies of the transformer block (calls renamed apart) import as one module; import
    speed itself is measured in benchmarks/, not asserted in a unit test."""
    text = _load("extras/transformer_block.open.mlir")
    lines = text.splitlines()
    body = "\n".join(lines[2:-1])
    copies = [body.replace("@main", f"@main{i}").replace("private @", f"private @f{i}_")
              .replace("call @", f"call @f{i}_") for i in range(10)]
    big = "\n".join(lines[:2] + copies + ["}"]) + "\n"
    module = import_stablehlo(big)
    assert sum(1 for _ in module.walk()) > 500
    assert len(module.functions) == 10 * len(import_stablehlo(text).functions)


def test_every_grammar_rule_has_a_reader_callback():
    # The op families register their rules' callbacks (import_table.read_rule); a rule without
    # one would silently become a lark Tree the builder cannot read.
    from shardc.stablehlo.import_table import READ_RULES
    from shardc.stablehlo.reader import _parser

    parser = _parser()
    reader = parser.options.transformer
    rules = {str(r.alias or r.origin.name) for r in parser.rules}
    missing = sorted(r for r in rules if not r.startswith("_") and not hasattr(reader, r))
    assert missing == []
    assert set(READ_RULES) <= rules  # no callback for a rule grammar.lark does not have
