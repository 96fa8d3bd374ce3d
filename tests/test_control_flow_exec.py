"""Sharded `while` / `case` programs run on 8 simulated devices (numpy) and under JAX
`shard_map` give the unsharded reference interpreter's results; the global program runs under
JAX too (`lax.while_loop` / `lax.switch`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.executors.numpy_exec import NumpyExecutor, run_spmd
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.parser import parse_module
from shardc.ir.types import numpy_dtype
from shardc.pipeline import compile

DATA = Path(__file__).parent / "data" / "control"
PROGRAMS = [
    "while_loop",
    "cond_switch",
    "while_captures",
    "case_sources",
    "scan_like",
    "nested",
    "while_reshard",
]


def inputs(module, seed: int = 0, index: int | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        dtype = numpy_dtype(a.type.dtype)
        if dtype.kind in "iu":
            value = rng.integers(0, 4) if index is None else index
            out.append(np.asarray(value, dtype=dtype).reshape(a.type.shape))
        else:
            out.append((rng.standard_normal(a.type.shape) * 0.3).astype(dtype))
    return out


def assert_close(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * scale)


def compiled(name: str):
    return compile(parse_module((DATA / f"{name}.mlir").read_text(), f"{name}.mlir"))


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("index", [-1, 0, 1, 2, 7])
def test_numpy_spmd_matches_reference(name: str, index: int) -> None:
    """Every index (out of range: the last branch) and trip count the integer argument gives."""
    result = compiled(name)
    args = inputs(result.module, seed=index + 5, index=index)
    want = run_reference(parse_module((DATA / f"{name}.mlir").read_text()), args)
    assert_close(result.run(args), want)
    assert_close(NumpyExecutor(result.spmd, general_groups=True).run(args), want)


def test_reference_semantics() -> None:
    """The reference interpreter against numpy written out: two loops and a call."""
    module = parse_module((DATA / "while_loop.mlir").read_text())
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    for n in (0, 2, 5):
        want, j = x.copy(), 0
        for _ in range(4):  # first loop: 4 trips of x * 0.5 + j
            want, j = want * np.float32(0.5) + np.float32(j), j + 1
        j = 0
        while j < n and want.sum(dtype=np.float32) < 1e6:  # second: data-dependent
            want, j = want * np.float32(2.0), j + 1
        (got,) = run_reference(module, [x, np.int32(n)])
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_case_out_of_range_index_runs_last_branch() -> None:
    module = parse_module((DATA / "case_sources.mlir").read_text())
    a, b = (np.full((16, 32), v, np.float32) for v in (2.0, 3.0))
    c = np.full((32, 16), 5.0, np.float32)
    for index, value in [(0, -4.0), (1, -6.0), (2, -5.0), (3, -5.0), (-1, -5.0), (99, -5.0)]:
        (got,) = run_reference(module, [np.int32(index), a, b, c])
        assert np.all(got == value), index


UNEVEN = """
mesh @m = <["x"=4]>

func @main(%x: tensor<10x6xf32, <@m, [{"x"}, {}]>>, %n: tensor<i32>) -> (tensor<10x6xf32>, tensor<6xf32>) {
  %c = constant {value = dense<0>} : tensor<i32>
  %z = constant {value = dense<0.0>} : tensor<6xf32>
  %0, %1, %2 = while %c, %x, %z, %n {body = @body, captures = 1, cond = @cond} : tensor<i32>, tensor<10x6xf32>, tensor<6xf32>
  return %1, %2
}

func private @cond(%i: tensor<i32>, %x: tensor<10x6xf32>, %s: tensor<6xf32>, %n: tensor<i32>) -> tensor<i1> {
  %0 = compare %i, %n {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @body(%i: tensor<i32>, %x: tensor<10x6xf32>, %s: tensor<6xf32>, %n: tensor<i32>) -> (tensor<i32>, tensor<10x6xf32>, tensor<6xf32>) {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce %x, %zero {dimensions = [0], kind = add} : tensor<6xf32>
  %1 = add %s, %0 : tensor<6xf32>
  %2 = cosine %x : tensor<10x6xf32>
  %one = constant {value = dense<1>} : tensor<i32>
  %3 = add %i, %one : tensor<i32>
  return %3, %2, %1
}
"""


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_uneven_shards_in_a_loop(trips: int) -> None:
    """10 rows over 4 devices: the padding never reaches the loop's reduction."""
    result = compile(parse_module(UNEVEN))
    x = np.random.default_rng(trips).standard_normal((10, 6)).astype(np.float32)
    want = run_reference(parse_module(UNEVEN), [x, np.int32(trips)])
    assert_close(result.run([x, np.int32(trips)]), want)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    trips=st.integers(-1, 6),
    index=st.integers(-3, 5),
    seed=st.integers(0, 2**16),
    mesh=st.sampled_from(["x=2,y=4", "x=4,y=2", "x=8,y=1", "x=1,y=8"]),
)
def test_random_trips_indices_and_meshes(trips: int, index: int, seed: int, mesh: str) -> None:
    sizes = dict(kv.split("=") for kv in mesh.split(","))
    text = (DATA / "nested.mlir").read_text().replace(
        '<["dp"=2, "tp"=4]>', f'<["dp"={sizes["x"]}, "tp"={sizes["y"]}]>'
    )
    text = text.replace("dense<4>", f"dense<{trips}>")
    case_text = (DATA / "case_sources.mlir").read_text().replace(
        '<["dp"=2, "tp"=4]>', f'<["dp"={sizes["x"]}, "tp"={sizes["y"]}]>'
    )
    for source in (text, case_text):
        module = parse_module(source)
        args = inputs(module, seed=seed, index=index)
        want = run_reference(module, args)
        assert_close(run_spmd(compile(module).spmd, args), want)


def test_numpy_rejects_a_condition_that_differs_between_devices() -> None:
    text = """
mesh @m = <["x"=2]>
func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[8]], in_shardings = [<@m, [{"x"}]>], out_shapes = [[8]], out_shardings = [<@m, [{"x"}]>]} {
  %0 = spmd.axis_index {axes = ["x"]} : tensor<i32>
  %1 = while %x, %0 {body = @body, captures = 1, cond = @cond} : tensor<4xf32>
  return %1
}
func private @cond(%x: tensor<4xf32>, %i: tensor<i32>) -> tensor<i1> {
  %zero = constant {value = dense<0>} : tensor<i32>
  %0 = compare %i, %zero {comparison_direction = EQ} : tensor<i1>
  return %0
}
func private @body(%x: tensor<4xf32>, %i: tensor<i32>) -> tensor<4xf32> {
  return %x
}
"""
    module = parse_module(text)
    with pytest.raises(ExecutionError, match="loop condition differs between devices"):
        run_spmd(module, [np.zeros(8, np.float32)])


@pytest.mark.parametrize("name", PROGRAMS)
def test_jax_shard_map_matches_reference(name: str) -> None:
    pytest.importorskip("jax")
    from shardc.executors.jax_exec import JaxExecutor

    result = compiled(name)
    executor = JaxExecutor(result.spmd)
    for index in (0, 1, 5):
        args = inputs(result.module, seed=index, index=index)
        want = run_reference(parse_module((DATA / f"{name}.mlir").read_text()), args)
        assert_close(executor.run(args), want)


@pytest.mark.parametrize("name", PROGRAMS)
def test_jax_global_matches_reference(name: str) -> None:
    """The global program with its shardings under `jax.jit` (XLA partitions it)."""
    jax = pytest.importorskip("jax")
    from shardc.executors.jax_global import global_function, jit_global

    result = compiled(name)
    args = inputs(result.module, seed=3, index=2)
    want = run_reference(parse_module((DATA / f"{name}.mlir").read_text()), args)
    assert_close(jax.jit(global_function(result.module))(*args), want)
    jitted, *_ = jit_global(result.module)
    assert_close(jitted(*args), want)
