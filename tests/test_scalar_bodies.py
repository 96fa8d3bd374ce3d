"""`sort` and `reduce` with a body function: verifier, rules, vectorised evaluation against a
scalar Python loop, and the whole pipeline on simulated devices (numpy, JAX) against the
reference interpreter."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.executors import scalar_bodies
from shardc.executors.kernels.table import KERNELS
from shardc.executors.reference import run_reference
from shardc.executors.scalar_bodies import (
    evaluate_body,
    reduce_with_body,
    sort_with_comparator,
)
from shardc.ir.diagnostics import VerifyError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.propagation.rules.registry import rule_for
from shardc.pipeline import compile

# JAX's comparator for jnp.sort / argsort on f32 keys (tests/data/stablehlo/misc_ops.mlir):
# -0.0 -> 0.0, every NaN -> the positive quiet NaN, then a TOTALORDER less-than; the second
# operand (argsort's indices) is not compared, so ties keep their order (is_stable).
JAX_SORT_CMP = """
func private @cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %nan = constant {value = dense<0x7FC00000>} : tensor<f32>
  %0 = compare %a, %zero {comparison_direction = EQ, compare_type = FLOAT} : tensor<i1>
  %1 = select %0, %zero, %a : tensor<f32>
  %2 = compare %a, %a {comparison_direction = NE, compare_type = FLOAT} : tensor<i1>
  %3 = select %2, %nan, %1 : tensor<f32>
  %4 = compare %b, %zero {comparison_direction = EQ, compare_type = FLOAT} : tensor<i1>
  %5 = select %4, %zero, %b : tensor<f32>
  %6 = compare %b, %b {comparison_direction = NE, compare_type = FLOAT} : tensor<i1>
  %7 = select %6, %nan, %5 : tensor<f32>
  %8 = compare %3, %7 {comparison_direction = LT, compare_type = TOTALORDER} : tensor<i1>
  return %8
}
"""

# JAX's argmax body (integer_ops.mlir, with FLOAT compares): NaN wins, ties take the lower index.
ARGMAX_BODY = """
func private @body(%av: tensor<f32>, %ai: tensor<i32>, %xv: tensor<f32>, %xi: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = compare %av, %xv {comparison_direction = GT, compare_type = FLOAT} : tensor<i1>
  %1 = compare %av, %av {comparison_direction = NE, compare_type = FLOAT} : tensor<i1>
  %2 = or %0, %1 : tensor<i1>
  %3 = compare %av, %xv {comparison_direction = EQ, compare_type = FLOAT} : tensor<i1>
  %4 = compare %ai, %xi {comparison_direction = LT, compare_type = SIGNED} : tensor<i1>
  %5 = and %3, %4 : tensor<i1>
  %6 = or %2, %5 : tensor<i1>
  %7 = select %2, %av, %xv : tensor<f32>
  %8 = select %6, %ai, %xi : tensor<i32>
  return %7, %8
}
"""

# An associative, NOT commutative body: the first element wins (f32), the sum (i32).
FIRST_AND_SUM_BODY = """
func private @body(%av: tensor<f32>, %as: tensor<i32>, %xv: tensor<f32>, %xs: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %nan = constant {value = dense<0x7FC00000>} : tensor<f32>
  %0 = compare %av, %av {comparison_direction = NE} : tensor<i1>
  %1 = select %0, %xv, %av : tensor<f32>
  %2 = add %as, %xs : tensor<i32>
  return %1, %2
}
"""


def _reduce_module(shape, dims, body: str, inits=("0xFF800000", "0")) -> str:
    t = "x".join(map(str, shape))
    out = "x".join(str(n) for d, n in enumerate(shape) if d not in dims)
    out_f = f"tensor<{out}xf32>" if out else "tensor<f32>"
    out_i = f"tensor<{out}xi32>" if out else "tensor<i32>"
    return f"""
func @main(%x: tensor<{t}xf32>, %y: tensor<{t}xi32>) -> ({out_f}, {out_i}) {{
  %a = constant {{value = dense<{inits[0]}>}} : tensor<f32>
  %b = constant {{value = dense<{inits[1]}>}} : tensor<i32>
  %m, %i = reduce %x, %y, %a, %b {{body = @body, dimensions = {list(dims)}}} : {out_f}, {out_i}
  return %m, %i
}}
""" + body


def _scalar_reduce(module, x, y, inits):
    """A left-to-right fold with the body called on 0-d arrays, one element at a time."""
    (op,) = [op for op in module.main.ops if op.name == "reduce"]
    body = evaluate_body(module.functions["body"], KERNELS)
    dims = list(op.attributes["dimensions"])
    kept = [d for d in range(x.ndim) if d not in dims]
    xt = np.transpose(x, kept + dims).reshape([x.shape[d] for d in kept] + [-1])
    yt = np.transpose(y, kept + dims).reshape(xt.shape)
    out_v = np.empty(xt.shape[:-1], np.float32)
    out_i = np.empty(xt.shape[:-1], np.int32)
    for idx in np.ndindex(*xt.shape[:-1]):
        acc = tuple(np.asarray(v) for v in inits)
        for k in range(xt.shape[-1]):
            acc = body(*acc, np.asarray(xt[idx + (k,)]), np.asarray(yt[idx + (k,)]))
        out_v[idx], out_i[idx] = acc
    return out_v, out_i


def _values(rng, shape, nan=0.1, ties=True):
    x = rng.standard_normal(shape).astype(np.float32)
    if ties:
        x = np.round(x, 1)  # many equal values
    x[rng.random(shape) < nan] = np.nan
    x[rng.random(shape) < 0.05] = -0.0
    return x


# ----- verifier -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("%s = sort %x {comparator = @nope, dimension = 0} : tensor<8xf32>",
         "comparator @nope is not defined"),
        ("%s = sort %x {comparator = @cmp2, dimension = 0} : tensor<8xf32>",
         "comparator @cmp2 has signature (tensor<f32>, tensor<f32>, tensor<i32>, tensor<i32>)"),
        ("%s = sort %x {comparator = @cmp1, dimension = 1} : tensor<8xf32>",
         "dimension 1 is out of range for rank 1"),
        ("%s, %t = sort %x {comparator = @cmp1, dimension = 0} : tensor<8xf32>, tensor<8xf32>",
         "has 1 operands but 2 results"),
        ("%r = reduce %x, %x, %f, %f {body = @cmp1, dimensions = [0]} : tensor<f32>",
         "has 2 results, got 1"),
        ("%r = reduce %x, %f {body = @cmp1, dimensions = [0]} : tensor<f32>",
         "body @cmp1 has signature (tensor<f32>, tensor<f32>) -> (tensor<i1>), expected "
         "(tensor<f32>, tensor<f32>) -> (tensor<f32>)"),
        ("%r = reduce %x, %i {body = @cmp1, dimensions = [0]} : tensor<i32>",
         "init 0 must be a scalar of f32, got tensor<i32>"),
        ("%r = reduce %x, %f {dimensions = [0]} : tensor<f32>",
         "needs exactly one of 'kind'"),
        ("%r = reduce %x, %f {body = @cmp1, kind = add, dimensions = [0]} : tensor<f32>",
         "needs exactly one of 'kind'"),
    ],
)
def test_verifier_errors(op: str, message: str) -> None:
    text = f"""
func @main(%x: tensor<8xf32>, %f: tensor<f32>, %i: tensor<i32>) -> tensor<f32> {{
  {op}
  return %f
}}
func private @cmp1(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {{
  %0 = compare %a, %b {{comparison_direction = LT}} : tensor<i1>
  return %0
}}
func private @cmp2(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {{
  %0 = compare %a, %b {{comparison_direction = LT}} : tensor<i1>
  return %0
}}
"""
    with pytest.raises(VerifyError, match=re.escape(message)):
        parse_module(text)


# ----- rules ----------------------------------------------------------------------------------


def _rules(text: str) -> list[str]:
    return [str(rule_for(op)) for op in parse_module(text).main.ops if op.name != "return"]


def test_sort_rules() -> None:
    text = """
func @main(%x: tensor<4x32x8xf32>, %y: tensor<4x32x8xi32>, %v: tensor<16xf32>) -> tensor<16xf32> {
  %0, %1 = sort %x, %y {comparator = @cmp, dimension = 1} : tensor<4x32x8xf32>, tensor<4x32x8xi32>
  %2 = sort %v {comparator = @cmp1, dimension = 0} : tensor<16xf32>
  return %2
}
func private @cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = LT} : tensor<i1>
  return %0
}
func private @cmp1(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = LT} : tensor<i1>
  return %0
}
"""
    assert _rules(text) == [
        "#sdy.op_sharding_rule<([i, j, k], [i, j, k])->([i, j, k], [i, j, k]) "
        "{i=4, j=32, k=8} need_replication={j}>",
        # A sort dim that is the only non-trivial dim: blocked as well (jaxlib 0.10.2 and
        # Shardy's HEAD both print this rule).
        "#sdy.op_sharding_rule<([i])->([i]) {i=16} need_replication={i} blocked_propagation={i}>",
    ]


def test_variadic_reduce_rule() -> None:
    text = _reduce_module((4, 6, 8), (0, 2), ARGMAX_BODY)
    assert _rules(text)[-1] == (
        "#sdy.op_sharding_rule<([i, j, k], [i, j, k], [], [])->([j], [j]) {i=4, j=6, k=8} "
        "reduction={i, k}>"
    )


# ----- vectorised evaluation == a scalar loop -------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    data=st.data(),
    seed=st.integers(0, 2**31),
    which=st.sampled_from(["argmax", "first_and_sum"]),
)
def test_reduce_tree_equals_a_scalar_fold(shape, data, seed, which) -> None:
    dims = data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1).map(sorted))
    body = ARGMAX_BODY if which == "argmax" else FIRST_AND_SUM_BODY
    inits = ("0xFF800000", "0") if which == "argmax" else ("0x7FC00000", "0")
    module = parse_module(_reduce_module(tuple(shape), tuple(dims), body, inits))
    rng = np.random.default_rng(seed)
    x = _values(rng, shape)
    y = rng.integers(-50, 50, shape).astype(np.int32)
    if which == "argmax":
        y = np.arange(x.size, dtype=np.int32).reshape(shape)
    got = run_reference(module, [x, y], check_types=True)
    (op,) = [op for op in module.main.ops if op.name == "reduce"]
    init_arrays = [o.defining_op for o in op.operands[2:]]
    init_values = [KERNELS["constant"](d) for d in init_arrays]
    want = _scalar_reduce(module, x, y, init_values)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_argmax_body_is_numpy_argmax_with_nans_and_ties() -> None:
    rng = np.random.default_rng(1)
    x = _values(rng, (33, 17), nan=0.02)
    module = parse_module(_reduce_module((33, 17), (0,), ARGMAX_BODY))
    _, got = run_reference(module, [x, np.broadcast_to(np.arange(33, dtype=np.int32)[:, None],
                                                       (33, 17)).copy()])
    np.testing.assert_array_equal(got, np.argmax(x, axis=0))  # first NaN, else first max


def _sort_module(shape, dim: int, stable: bool = True) -> str:
    t = "x".join(map(str, shape))
    return f"""
func @main(%x: tensor<{t}xf32>, %i: tensor<{t}xi32>) -> (tensor<{t}xf32>, tensor<{t}xi32>) {{
  %s, %p = sort %x, %i {{comparator = @cmp, dimension = {dim}, is_stable = {str(stable).lower()}}} : tensor<{t}xf32>, tensor<{t}xi32>
  return %s, %p
}}
""" + JAX_SORT_CMP


def _scalar_sort(module, x, i, dim):
    """Python's stable sort per slice, the comparator called on one pair of scalars at a time."""
    less = evaluate_body(module.functions["cmp"], KERNELS)

    def cmp(a, b) -> int:
        if less(np.asarray(a[0]), np.asarray(b[0]), np.asarray(a[1]), np.asarray(b[1]))[0]:
            return -1
        if less(np.asarray(b[0]), np.asarray(a[0]), np.asarray(b[1]), np.asarray(a[1]))[0]:
            return 1
        return 0

    xs, is_ = np.moveaxis(x, dim, -1).copy(), np.moveaxis(i, dim, -1).copy()
    for idx in np.ndindex(*xs.shape[:-1]):
        pairs = sorted(zip(xs[idx], is_[idx]), key=functools.cmp_to_key(cmp))
        xs[idx] = [p[0] for p in pairs]
        is_[idx] = [p[1] for p in pairs]
    return np.moveaxis(xs, -1, dim), np.moveaxis(is_, -1, dim)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    data=st.data(),
    seed=st.integers(0, 2**31),
    matrix_max_n=st.sampled_from([64, 0]),  # comparison matrices, or the merge sort
)
def test_sort_equals_a_scalar_stable_sort(shape, data, seed, matrix_max_n) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    module = parse_module(_sort_module(tuple(shape), dim))
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, nan=0.15)
    x[rng.random(shape) < 0.05] = -np.nan
    i = rng.integers(0, 100, shape).astype(np.int32)
    with mock.patch.object(scalar_bodies, "MATRIX_MAX_N", matrix_max_n):
        got = run_reference(module, [x, i], check_types=True)
    want = _scalar_sort(module, x, i, dim)
    np.testing.assert_array_equal(got[0].view(np.int32), want[0].view(np.int32))  # bitwise
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("n", [40, 300])  # comparison matrices; merge sort
def test_jax_comparator_argsort_is_numpy_stable_argsort(n: int) -> None:
    rng = np.random.default_rng(2)
    x = _values(rng, (8, n), nan=0.1)
    x[0, :5] = [0.0, -0.0, 0.0, -0.0, 0.0]  # -0 == 0: ties keep their order
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), (8, n)).copy()
    s, p = run_reference(parse_module(_sort_module((8, n), 1)), [x, iota])
    np.testing.assert_array_equal(p, np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(s, np.sort(x, axis=1))


# Two keys: the f32 key descending, ties broken by the i32 key ascending (a lexicographic order
# over both operands, as jnp.lexsort emits).
LEX_DESC_CMP = """
func private @cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = GT, compare_type = TOTALORDER} : tensor<i1>
  %1 = compare %a, %b {comparison_direction = EQ, compare_type = TOTALORDER} : tensor<i1>
  %2 = compare %c, %d {comparison_direction = LT} : tensor<i1>
  %3 = and %1, %2 : tensor<i1>
  %4 = or %0, %3 : tensor<i1>
  return %4
}
"""


@pytest.mark.parametrize("matrix_max_n", [64, 0])
def test_two_key_descending_sort_equals_a_scalar_sort(matrix_max_n: int) -> None:
    text = _sort_module((5, 37), 1).replace(JAX_SORT_CMP, LEX_DESC_CMP)
    module = parse_module(text)
    rng = np.random.default_rng(6)
    x = _values(rng, (5, 37), nan=0.1)
    i = rng.integers(0, 4, (5, 37)).astype(np.int32)
    with mock.patch.object(scalar_bodies, "MATRIX_MAX_N", matrix_max_n):
        got = run_reference(module, [x, i])
    want = _scalar_sort(module, x, i, 1)
    np.testing.assert_array_equal(got[0].view(np.int32), want[0].view(np.int32))
    np.testing.assert_array_equal(got[1], want[1])


def test_vectorised_helpers_take_leading_batch_dims() -> None:
    """The numpy SPMD executor's device dims: `lead` dims in front, broadcast (size 1) or not."""
    module = parse_module(_sort_module((2, 6), 1))
    (op,) = [op for op in module.main.ops if op.name == "sort"]
    less = evaluate_body(module.functions["cmp"], KERNELS)
    rng = np.random.default_rng(3)
    x = _values(rng, (4, 2, 6))
    i = np.broadcast_to(np.arange(6, dtype=np.int32), (1, 2, 6))
    s, p = sort_with_comparator(op, less, [x, i], np, lead=1)
    for k in range(4):
        want = sort_with_comparator(op, less, [x[k], i[0]], np)
        np.testing.assert_array_equal(s[k], want[0])
        np.testing.assert_array_equal(p[k], want[1])
    module = parse_module(_reduce_module((5, 3), (0,), ARGMAX_BODY))
    (op,) = [op for op in module.main.ops if op.name == "reduce"]
    body = evaluate_body(module.functions["body"], KERNELS)
    x = _values(rng, (4, 5, 3))
    y = np.broadcast_to(np.arange(5, dtype=np.int32)[:, None], (1, 5, 3))
    inits = [np.full((1,), -np.inf, np.float32), np.zeros((1,), np.int32)]
    m, a = reduce_with_body(op, body, [x, y, *inits], np, lead=1)
    np.testing.assert_array_equal(a, np.argmax(x, axis=1))


# ----- the pipeline on simulated devices ----------------------------------------------------


def _pipeline_module(mesh: str, x_sharding: str, shape=(16, 32)) -> str:
    t = "x".join(map(str, shape))
    n = shape[0]
    return f"""
mesh @mesh = <{mesh}>

func @main(%x: tensor<{t}xf32, <@mesh, {x_sharding}>>) -> (tensor<{t}xf32>, tensor<{t}xi32>, tensor<{shape[1]}xi32>, tensor<i32>) {{
  %iota = iota {{iota_dimension = 1}} : tensor<{t}xi32>
  %rows = iota {{iota_dimension = 0}} : tensor<{t}xi32>
  %flat = iota {{iota_dimension = 0}} : tensor<{n * shape[1]}xi32>
  %fi = reshape %flat : tensor<{t}xi32>
  %ninf = constant {{value = dense<0xFF800000>}} : tensor<f32>
  %zero = constant {{value = dense<0>}} : tensor<i32>
  %s, %p = sort %x, %iota {{comparator = @cmp, dimension = 1, is_stable = true}} : tensor<{t}xf32>, tensor<{t}xi32>
  %m, %i = reduce %x, %rows, %ninf, %zero {{body = @body, dimensions = [0]}} : tensor<{shape[1]}xf32>, tensor<{shape[1]}xi32>
  %am, %ai = reduce %x, %fi, %ninf, %zero {{body = @body, dimensions = [0, 1]}} : tensor<f32>, tensor<i32>
  return %s, %p, %i, %ai
}}
""" + JAX_SORT_CMP + ARGMAX_BODY


CASES = [
    ('["dp"=2, "tp"=4]', '[{"dp"}, {"tp"}]', (16, 32)),
    ('["dp"=2, "tp"=4]', '[{"dp", "tp"}, {}]', (16, 32)),
    ('["dp"=2, "tp"=4]', '[{}, {"dp", "tp"}]', (16, 32)),
    ('["x"=4, "y"=2]', '[{"x"}, {"y"}]', (10, 6)),  # uneven reduced dim: replicated instead
    ('["x"=8]', '[{"x"}, {}]', (8, 5)),  # a fully split dim: one row per device
    ('["x"=4, "y"=2]', '[{"x"}, {"y"}]', (8, 100)),  # sorted by the merge sort
]


def _inputs(shape):
    rng = np.random.default_rng(4)
    return [_values(rng, shape, nan=0.03)]


@pytest.mark.parametrize(("mesh", "sharding", "shape"), CASES)
def test_pipeline_runs_like_the_reference(mesh: str, sharding: str, shape) -> None:
    module = parse_module(_pipeline_module(mesh, sharding, shape))
    inputs = _inputs(shape)
    want = run_reference(module, inputs)
    np.testing.assert_array_equal(want[2], np.argmax(inputs[0], axis=0))
    assert want[3] == np.argmax(inputs[0])
    result = compile(module)
    for backend in ("numpy", "jax"):
        got = result.run(inputs, backend=backend)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_sharded_reduced_dim_moves_partials_not_inputs() -> None:
    """argmax over a dp-sharded dim gathers the 2 per-device (value, index) rows of each
    column block, never the input."""
    text = """
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>) -> tensor<32xi32> {
  %rows = iota {iota_dimension = 0} : tensor<16x32xi32>
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %zero = constant {value = dense<0>} : tensor<i32>
  %m, %i = reduce %x, %rows, %ninf, %zero {body = @body, dimensions = [0]} : tensor<32xf32>, tensor<32xi32>
  return %i
}
""" + ARGMAX_BODY
    result = compile(parse_module(text))
    assert [op.name for op in result.module.main.ops].count("reduce") == 2
    gathers = [op for op in result.spmd.main.ops if op.name.startswith("spmd.")]
    assert [op.name for op in gathers] == ["spmd.axis_index", *["spmd.all_gather"] * 2]
    assert [op.results[0].type.shape for op in gathers[1:]] == [(2, 8), (2, 8)]


def test_only_the_major_reduced_dim_stays_sharded() -> None:
    """A full argmax over a [{"dp"}, {"tp"}] input: dim 0 is split into per-device partials,
    dim 1 is gathered first, so elements combine in row-major order (the first NaN wins)."""
    module = parse_module(_pipeline_module('["dp"=2, "tp"=4]', '[{"dp"}, {"tp"}]'))
    result = compile(module)
    (partial,) = [
        op for op in result.module.main.ops
        if op.name == "reduce" and op.attributes["dimensions"] == (1, 2)
    ]
    assert str(partial.operand(0).mapping) == '<@mesh, [{"dp"}, {}, {}]>'
    assert partial.results[0].type.shape == (2,)


def test_body_functions_stay_unsharded() -> None:
    module = parse_module(_pipeline_module('["dp"=2, "tp"=4]', '[{"dp"}, {"tp"}]'))
    result = compile(module)
    for name in ("cmp", "body"):
        func = result.module.functions[name]
        values = [*func.args, *(r for op in func.ops for r in op.results)]
        assert all(v.mapping is None or v.mapping.is_fully_replicated for v in values)


def test_sort_of_a_sharded_vector_gathers_it() -> None:
    """Shardy's rule blocks a vector's sort dim (need_replication, blocked_propagation); the dim
    is gathered (spmd sorts whole slices) and the result resliced for the consumer."""
    text = """
mesh @mesh = <["x"=4]>

func @main(%v: tensor<10xf32, <@mesh, [{"x"}]>>, %i: tensor<10xi32, <@mesh, [{"x"}]>>) -> (tensor<10xf32, <@mesh, [{"x"}]>>, tensor<10xi32, <@mesh, [{"x"}]>>) {
  %s, %p = sort %v, %i {comparator = @cmp, dimension = 0, is_stable = true} : tensor<10xf32>, tensor<10xi32>
  return %s, %p
}
""" + JAX_SORT_CMP
    module = parse_module(text)
    assert str(rule_for(next(iter(module.main.ops)))) == (
        "#sdy.op_sharding_rule<([i], [i])->([i], [i]) {i=10} need_replication={i} "
        "blocked_propagation={i}>"
    )
    rng = np.random.default_rng(5)
    inputs = [_values(rng, (10,)), np.arange(10, dtype=np.int32)]
    want = run_reference(module, inputs)
    np.testing.assert_array_equal(want[1], np.argsort(inputs[0], kind="stable"))
    result = compile(module)
    for backend in ("numpy", "jax"):
        for g, w in zip(result.run(inputs, backend=backend), want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("which", ["argmax", "first_and_sum"])
def test_jax_reduce_and_sort_equal_the_reference(which: str) -> None:
    """The JAX translation (lax.reduce with the traced body; the sort's comparison matrices in
    jax.numpy) against the numpy reference, NaNs and ties included."""
    pytest.importorskip("jax")
    from shardc.executors.jax_global import global_function

    body, inits = {
        "argmax": (ARGMAX_BODY, ("0xFF800000", "0")),
        "first_and_sum": (FIRST_AND_SUM_BODY, ("0x7FC00000", "0")),
    }[which]
    for seed in range(4):
        rng = np.random.default_rng(seed)
        module = parse_module(_reduce_module((7, 5, 9), (0, 2), body, inits))
        x = _values(rng, (7, 5, 9), nan=0.3)
        y = np.arange(x.size, dtype=np.int32).reshape(x.shape)
        for g, w in zip(global_function(module)(x, y), run_reference(module, [x, y])):
            np.testing.assert_array_equal(np.asarray(g), w)
    for n in (9, 100):
        module = parse_module(_sort_module((3, n), 1))
        x = _values(np.random.default_rng(n), (3, n), nan=0.2)
        i = np.broadcast_to(np.arange(n, dtype=np.int32), (3, n)).copy()
        for g, w in zip(global_function(module)(x, i), run_reference(module, [x, i])):
            np.testing.assert_array_equal(np.asarray(g), w)


@st.composite
def _sharded_programs(draw):
    """A sort and an argmax-style reduce of one input on a random mesh and sharding."""
    mesh = draw(st.sampled_from([{"a": 2, "b": 2}, {"a": 4}, {"a": 2, "b": 3}, {"a": 8}]))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12])) for _ in range(rank))
    free = list(mesh)
    dims = []
    for _ in range(rank):
        axes = [a for a in free if draw(st.booleans())]
        free = [a for a in free if a not in axes]
        dims.append("{" + ", ".join(f'"{a}"' for a in axes) + "}")
    reduced = draw(st.sets(st.integers(0, rank - 1), min_size=1).map(sorted))
    sort_dim = draw(st.integers(0, rank - 1))
    mesh_text = "[" + ", ".join(f'"{a}"={n}' for a, n in mesh.items()) + "]"
    t = "x".join(map(str, shape))
    out = "x".join(str(n) for d, n in enumerate(shape) if d not in reduced)
    out_f, out_i = (f"tensor<{out}x{e}>" if out else f"tensor<{e}>" for e in ("f32", "i32"))
    n = int(np.prod(shape))
    text = f"""
mesh @mesh = <{mesh_text}>

func @main(%x: tensor<{t}xf32, <@mesh, [{", ".join(dims)}]>>) -> (tensor<{t}xf32>, tensor<{t}xi32>, {out_i}) {{
  %flat = iota {{iota_dimension = 0}} : tensor<{n}xi32>
  %idx = reshape %flat : tensor<{t}xi32>
  %ninf = constant {{value = dense<0xFF800000>}} : tensor<f32>
  %zero = constant {{value = dense<0>}} : tensor<i32>
  %s, %p = sort %x, %idx {{comparator = @cmp, dimension = {sort_dim}, is_stable = true}} : tensor<{t}xf32>, tensor<{t}xi32>
  %m, %i = reduce %x, %idx, %ninf, %zero {{body = @body, dimensions = {reduced}}} : {out_f}, {out_i}
  return %s, %p, %i
}}
""" + JAX_SORT_CMP + ARGMAX_BODY
    return text, shape


@settings(max_examples=40, deadline=None)
@given(program=_sharded_programs(), seed=st.integers(0, 2**31))
def test_random_sharded_programs_run_like_the_reference(program, seed) -> None:
    text, shape = program
    module = parse_module(text)
    x = _values(np.random.default_rng(seed), shape, nan=0.1)
    want = run_reference(module, [x])
    for g, w in zip(compile(module).run([x]), want):
        np.testing.assert_array_equal(g, w)


# ----- propagation against Shardy itself (jaxlib, in-process) --------------------------------

_SHARDY_VALUE = re.compile(r"sdy.sharding_per_value<\[(.*?\]>)\]>")


@st.composite
def _propagation_cases(draw):
    """(native text, StableHLO text) of one program: sort (x, iota), tanh, a variadic reduce,
    random argument and result shardings."""
    mesh = draw(st.sampled_from([{"dp": 2, "tp": 4}, {"a": 2, "b": 2, "c": 2}, {"x": 8}]))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([1, 4, 8, 16])) for _ in range(rank))

    def sharding() -> str:
        free = list(mesh)
        dims = []
        for _ in range(rank):
            axes = [a for a in free if draw(st.booleans())]
            free = [a for a in free if a not in axes]
            inner = ", ".join(f'"{a}"' for a in axes)
            dims.append("{" + inner + (", ?" if draw(st.booleans()) else "") + "}")
        return "<@mesh, [" + ", ".join(dims).replace("{, ?}", "{?}") + "]>"

    arg = sharding()
    out = sharding() if draw(st.booleans()) else None
    iota_dim = draw(st.integers(0, rank - 1))
    sort_dim = draw(st.integers(0, rank - 1))
    reduced = draw(st.sets(st.integers(0, rank - 1), min_size=1).map(sorted))
    t = "x".join(map(str, shape))
    kept = "x".join(str(n) for d, n in enumerate(shape) if d not in reduced)
    ri = f"tensor<{kept}xi32>" if kept else "tensor<i32>"
    rf = f"tensor<{kept}xf32>" if kept else "tensor<f32>"
    mesh_text = "<[" + ", ".join(f'"{a}"={n}' for a, n in mesh.items()) + "]>"
    out_native = f"tensor<{t}xf32, {out}>" if out else f"tensor<{t}xf32>"
    native = f"""mesh @mesh = {mesh_text}

func @main(%x: tensor<{t}xf32, {arg}>) -> ({out_native}, {ri}) {{
  %iota = iota {{iota_dimension = {iota_dim}}} : tensor<{t}xi32>
  %s, %p = sort %x, %iota {{comparator = @cmp, dimension = {sort_dim}, is_stable = true}} : tensor<{t}xf32>, tensor<{t}xi32>
  %t = tanh %s : tensor<{t}xf32>
  %ninf = constant {{value = dense<0xFF800000>}} : tensor<f32>
  %zero = constant {{value = dense<0>}} : tensor<i32>
  %m, %i = reduce %t, %p, %ninf, %zero {{body = @body, dimensions = {reduced}}} : {rf}, {ri}
  return %t, %i
}}
""" + JAX_SORT_CMP + ARGMAX_BODY
    out_attr = f" {{sdy.sharding = #sdy.sharding{out}}}" if out else ""
    shlo = f"""module @jit_f {{
  sdy.mesh @mesh = {mesh_text}
  func.func public @main(%arg0: tensor<{t}xf32> {{sdy.sharding = #sdy.sharding{arg}}}) -> (tensor<{t}xf32>{out_attr}, {ri}) {{
    %iota = stablehlo.iota dim = {iota_dim} : tensor<{t}xi32>
    %s:2 = "stablehlo.sort"(%arg0, %iota) <{{dimension = {sort_dim} : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
      %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }}) : (tensor<{t}xf32>, tensor<{t}xi32>) -> (tensor<{t}xf32>, tensor<{t}xi32>)
    %t = stablehlo.tanh %s#0 : tensor<{t}xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.reduce(%t init: %ninf), (%s#1 init: %zero) across dimensions = {reduced} : (tensor<{t}xf32>, tensor<{t}xi32>, tensor<f32>, tensor<i32>) -> ({rf}, {ri})
     reducer(%a1: tensor<f32>, %b1: tensor<f32>) (%a2: tensor<i32>, %b2: tensor<i32>) {{
      %gt = stablehlo.compare GT, %a1, %b1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %gt, %a1, %b1 : tensor<i1>, tensor<f32>
      %k = stablehlo.select %gt, %a2, %b2 : tensor<i1>, tensor<i32>
      stablehlo.return %v, %k : tensor<f32>, tensor<i32>
    }}
    return %t, %r#1 : tensor<{t}xf32>, {ri}
  }}
}}
"""
    return native, shlo


def _ours(native: str) -> list[str]:
    from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

    load_all_passes()
    module = parse_module(native)
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    out = []
    for op in module.main.ops:
        if op.name in ("iota", "sort", "tanh", "reduce"):
            shown = [str(r.mapping) for r in op.results if r.mapping is not None]
            out.append(", ".join(shown) if shown else "<none>")
    return out


def _theirs(shlo: str) -> list[str]:
    from tests.shardy_compare import run_shardy, shardy_pipeline_until_propagation

    text = run_shardy(shlo, shardy_pipeline_until_propagation())
    main = text[text.index("func.func public @main") :]
    out = []
    for line in main.splitlines():
        op = re.search(r"stablehlo\.(iota|tanh|reduce)\b", line) or line.lstrip().startswith("})")
        if op:  # `})` closes the sort's comparator region, the op's attributes follow
            found = _SHARDY_VALUE.search(line)
            out.append(found.group(1) if found else "<none>")
    return out


@settings(max_examples=25, deadline=None)
@given(case=_propagation_cases())
def test_propagation_through_sort_and_body_reduce_matches_shardy(case) -> None:
    pytest.importorskip("jax")
    native, shlo = case
    assert _ours(native) == _theirs(shlo), native


EXAMPLE = Path(__file__).parent.parent / "examples" / "argsort_argmax.mlir"


def test_example_round_trips_and_runs_on_both_backends() -> None:
    """examples/argsort_argmax.mlir (docs/ir.md): printed back byte for byte;
    compiled, it runs on numpy and JAX like the reference. (Not in examples/ itself until the
    StableHLO exporter inlines scalar bodies: every example there is exported too.)"""
    text = EXAMPLE.read_text()
    module = parse_module(text, EXAMPLE.name)
    assert print_module(module) == text
    docs = (EXAMPLE.parent.parent / "docs" / "ir.md").read_text()
    assert "```mlir\n" + text + "```" in docs  # the docs show this very file
    x = np.random.default_rng(7).standard_normal((16, 32)).astype(np.float32)
    x[[1, 4, 4], [2, 2, 9]] = np.nan  # (its plain TOTALORDER comparator puts -0.0 before 0.0)
    want = run_reference(module, [x])
    np.testing.assert_array_equal(want[0], np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(want[1], np.argmax(x, axis=0))
    result = compile(module)
    for backend in ("numpy", "jax"):
        for g, w in zip(result.run([x], backend=backend), want):
            np.testing.assert_array_equal(g, w)
