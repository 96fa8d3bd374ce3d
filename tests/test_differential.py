"""The whole pipeline, end to end: compile a program, run it on simulated devices, and compare
with the unsharded reference. Random programs (tests/programs.py) on random meshes are the
project's strongest correctness net."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from shardc.executors.reference import run_reference
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.pipeline import compile, with_mesh
from tests.programs import modules
from tests.shardy_compare import importable_corpus


def random_inputs(module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(a.type.shape).astype(np.float32) for a in module.main.args]


def assert_close(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        scale = max(float(np.max(np.abs(w))), 1.0) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale)


def check(module, backend: str = "numpy") -> None:
    inputs = random_inputs(module)
    expected = run_reference(module, inputs)
    result = compile(module)
    assert_close(result.run(inputs, backend=backend), expected)


EXAMPLE = """\
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = tanh %0 : tensor<16x256xf32>
  %2 = dot_general %1, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %2
}
"""

MESHES = [
    {"dp": 1, "tp": 1},
    {"dp": 2, "tp": 1},
    {"dp": 1, "tp": 8},
    {"dp": 2, "tp": 4},
    {"dp": 4, "tp": 2},
    {"dp": 3, "tp": 5},
    {"dp": 2, "tp": 3},
    {"dp": 8, "tp": 1},
]


@pytest.mark.parametrize("mesh", MESHES, ids=lambda m: f"dp{m['dp']}_tp{m['tp']}")
def test_megatron_mlp_on_many_meshes(mesh) -> None:
    check(with_mesh(EXAMPLE, mesh))


def test_megatron_mlp_needs_one_all_reduce() -> None:
    result = compile(parse_module(EXAMPLE))
    kinds = [c["kind"] for c in result.report["collectives"]]
    assert kinds == ["all_reduce"]


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(modules(max_ops=10))
def test_random_programs_run_like_the_reference(module) -> None:
    check(parse_module(print_module(module)))


@pytest.mark.parametrize("name", importable_corpus())
def test_jax_programs_compile_and_run_like_the_reference(name: str) -> None:
    """Every JAX program shardc imports compiles and runs sharded to the unsharded result."""
    from pathlib import Path

    from shardc.ir.types import is_float, numpy_dtype
    from shardc.stablehlo import import_stablehlo

    path = Path(__file__).parent / "data" / "stablehlo" / f"{name}.mlir"
    module = import_stablehlo(path.read_text(), str(path))
    rng = np.random.default_rng(0)
    inputs = []
    for a in module.main.args:
        dt = numpy_dtype(a.type.dtype)
        if is_float(a.type.dtype):
            inputs.append(rng.standard_normal(a.type.shape).astype(dt))
        else:
            inputs.append(rng.integers(0, 4, a.type.shape).astype(dt))
    expected = run_reference(module, inputs)
    got = compile(module).run(inputs)
    tol = 2e-2 if any(a.type.dtype in ("bf16", "f16") for a in module.main.args) else 1e-5
    for g, w in zip(got, expected):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        scale = max(float(np.max(np.abs(w64))), 1.0) if w64.size else 1.0
        np.testing.assert_allclose(g64, w64, rtol=0, atol=tol * scale)


EXAMPLES = sorted((__import__("pathlib").Path(__file__).parent.parent / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_runs_on_both_backends(path) -> None:
    """`shardc run EXAMPLE --check` on numpy and on JAX (8 CPU devices): both equal the reference."""
    pytest.importorskip("jax")
    from shardc.ir.types import is_float, numpy_dtype

    module = parse_module(path.read_text(), str(path))
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal(a.type.shape).astype(numpy_dtype(a.type.dtype))
        if is_float(a.type.dtype)
        else rng.integers(0, 4, a.type.shape).astype(numpy_dtype(a.type.dtype))
        for a in module.main.args
    ]
    expected = run_reference(module, inputs)
    result = compile(module)
    assert_close(result.run(inputs, backend="numpy"), expected)
    assert_close(result.run(inputs, backend="jax"), expected)


# The gradient of an embedding lookup as JAX writes a training step: `jnp.take`'s transpose
# (a scatter-add of batch-sharded rows) in a private function, the table left to propagation,
# and a step counter on JAX's axis-less `@empty_mesh` (optax's count), so the module has two
# meshes and close-shardings leaves unreached values without a sharding. The callee's partial
# sums must be reduced before it returns (the Flax NNX step's wrong embedding gradient).
EMBEDDING_GRAD = """\
mesh @empty_mesh = <[]>
mesh @mesh = <["dp"=DP, "tp"=TP]>

func @main(%table: tensor<16x8xf32>, %ids: tensor<BATCHx6x1xi32, <@mesh, [{"dp"}, {}, {}]>>, %dy: tensor<BATCHx6x8xf32, <@mesh, [{"dp"}, {}, {}]>>, %count: tensor<i32, <@empty_mesh, []>>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<i32>) {
  %g = call %ids, %dy {callee = @take_grad} : tensor<16x8xf32>
  %lr = constant {value = dense<0.1>} : tensor<f32>
  %b = broadcast_in_dim %lr {broadcast_dimensions = []} : tensor<16x8xf32>
  %step = multiply %g, %b : tensor<16x8xf32>
  %new = subtract %table, %step : tensor<16x8xf32>
  %one = constant {value = dense<1>} : tensor<i32>
  %next = add %count, %one : tensor<i32>
  return %new, %g, %next
}

func private @take_grad(%ids: tensor<BATCHx6x1xi32>, %dy: tensor<BATCHx6x8xf32>) -> tensor<16x8xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = broadcast_in_dim %zero {broadcast_dimensions = []} : tensor<16x8xf32>
  %1 = scatter %0, %ids, %dy {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, kind = add} : tensor<16x8xf32>
  return %1
}
"""


@pytest.mark.parametrize(
    ("dp", "tp", "batch", "backend"),
    [(2, 4, 4, "numpy"), (2, 4, 4, "jax"), (8, 1, 8, "jax"), (4, 2, 6, "numpy"),
     (4, 2, 6, "jax"), (3, 2, 5, "numpy")],
)
def test_embedding_gradient_in_a_called_function(dp: int, tp: int, batch: int,
                                                  backend: str) -> None:
    if backend == "jax":
        pytest.importorskip("jax")
    text = EMBEDDING_GRAD.replace("DP", str(dp)).replace("TP", str(tp))
    module = parse_module(text.replace("BATCH", str(batch)))
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 4, (batch, 6, 1)).astype(np.int32)  # rows repeat across the batch
    inputs = [rng.standard_normal((16, 8)).astype(np.float32), ids,
              rng.standard_normal((batch, 6, 8)).astype(np.float32), np.array(3, np.int32)]
    expected = run_reference(module, inputs)
    assert_close(compile(module).run(inputs, backend=backend), expected)
