"""benchmarks/shardy_lit.py: how a lit file of Shardy's becomes shardc cases (our own texts)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import shardy_lit as lit  # noqa: E402

FILE = """// RUN: sdy_opt %s -sdy-aggressive-propagate="propagation-strategy=aggressive" \\
// RUN:   -split-input-file 2>&1 | FileCheck %s --check-prefixes=CHECK,V2
// RUN: split-file %s %t

sdy.mesh @mesh = <["a"=2]>

// CHECK-LABEL: func @first
func.func @first(%arg0: tensor<8xf32>,
                 %arg1: tensor<8xf32>)
    -> tensor<8xf32> {
  // V2-NEXT: stablehlo.add
  // V1: never
  %0 = func.call @helper(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

func.func private @helper(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @second
func.func @second(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{bad op}}
  %0 = stablehlo.abs %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""


def test_run_lines_join_continuations_and_translate_options():
    runs = lit.run_lines(FILE)
    assert len(runs) == 2
    spec = lit.parse_run(runs[0])
    assert spec.pipeline == ["sdy-aggressive-propagate{propagation-strategy=aggressive}"]
    assert spec.prefixes == ["CHECK", "V2"] and spec.split and not spec.verify
    assert lit.parse_run(runs[1]) is None  # drives split-file, not sdy_opt


def test_split_input_file_makes_one_case_per_chunk_with_active_prefixes():
    cases = lit.cases_of("x.mlir", FILE)
    assert [c.name for c in cases] == ["chunk 0", "chunk 1"]
    assert cases[0].checks == ["// CHECK-LABEL: func @first", "// CHECK-NEXT: stablehlo.add"]
    assert cases[1].expected_errors == []  # -verify-diagnostics is not on this RUN line


def test_function_cases_keep_meshes_and_callees():
    text = FILE.replace(" \\\n// RUN:   -split-input-file", "").replace("// -----\n", "")
    cases = lit.cases_of("x.mlir", text)
    assert [c.name for c in cases] == ["@first", "@second"]
    first, second = cases
    assert "sdy.mesh @mesh" in first.text and "@helper(" in first.text
    assert "func.func @second" not in first.text and "@helper" not in second.text
    assert "-> tensor<8xf32> {" in first.text  # a signature over several lines stays whole


def test_expected_error_lines_are_absolute():
    text = "a\n// expected-error @+1 {{bad}}\nb\nc // expected-error {{here}}\n// expected-error @above {{up}}\n"
    assert lit.expected_errors(text) == [(3, "bad"), (4, "here"), (4, "up")]


def test_explicit_module_is_unwrapped():
    text = 'module @m attributes {x = 1} {\n  sdy.mesh @a = <["x"=2]>\n  func.func @f() {\n  }\n}\n'
    header, prelude, funcs, footer = lit.split_functions(text)
    assert header.startswith("module @m attributes {x = 1} {")
    assert prelude == ['sdy.mesh @a = <["x"=2]>'] and [n for n, _ in funcs] == ["f"]
