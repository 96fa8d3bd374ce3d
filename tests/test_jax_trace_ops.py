"""The JAX executors' op translations that call `jax.lax` directly (jax_ops/, jax_collectives.py)
build what the `jax.numpy` / tuple-axis forms they replace build: the same primitives and
values, at a fraction of the per-device trace (the first call of `shardc.jit` traces every op).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from shardc.executors.jax_collectives import _moveaxis, axis_index  # noqa: E402
from shardc.executors.jax_ops.elementwise import _select, _unary_table  # noqa: E402
from shardc.executors.jax_ops.reductions import _MONOID_REDUCERS  # noqa: E402
from shardc.executors.reduce_kinds import identity  # noqa: E402

jnp = jax.numpy


def _mesh(shape: tuple[int, ...], names: tuple[str, ...]):
    return jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(names))


@pytest.mark.parametrize("axes", [("x",), ("y",), ("x", "y"), ("y", "x"), ("x", "y", "z"),
                                  ("z", "x"), ()])
def test_axis_index_is_the_linear_index_jax_computes(axes) -> None:
    mesh = _mesh((2, 2, 2), ("x", "y", "z"))

    def body(_):
        ours, theirs = axis_index(lax, axes), lax.axis_index(axes)
        return jnp.stack([ours, theirs]).reshape(1, 1, 1, 2)

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P("x", "y", "z"),
                              check_vma=False))
    out = np.asarray(f(np.zeros(())))
    np.testing.assert_array_equal(out[..., 0], out[..., 1])
    assert out[..., 0].dtype == np.int32
    if axes == ("x", "y", "z"):  # (the device's position, row-major)
        np.testing.assert_array_equal(out[..., 0].reshape(-1), np.arange(8))


KINDS = [(kind, dtype) for kind in _MONOID_REDUCERS
         for dtype in (np.float32, np.int32, np.uint8, np.bool_)
         if not (kind in ("and", "or") and dtype == np.float32)]


def _outcome(fn, x) -> str:
    try:
        return str(jax.make_jaxpr(fn)(x))
    except TypeError as e:  # (a sum or product of booleans: JAX refuses both ways)
        return f"TypeError: {e}"


@pytest.mark.parametrize("kind,dtype", KINDS)
def test_the_monoid_reducer_is_the_one_lax_reduce_picks(kind, dtype) -> None:
    """`lax.reduce` from the kind's identity resolves to the same primitive (jaxpr text
    equal, or the same error), so the program is what it was."""
    fn = {"add": lax.add, "multiply": lax.mul, "maximum": lax.max, "minimum": lax.min,
          "and": lax.bitwise_and, "or": lax.bitwise_or}[kind]
    x = jax.ShapeDtypeStruct((4, 6), dtype)
    neutral = np.array(identity(kind, np.dtype(dtype)), dtype=dtype)
    direct = _outcome(lambda v: getattr(lax, _MONOID_REDUCERS[kind])(v, (1,)), x)
    general = _outcome(lambda v: lax.reduce(v, neutral, fn, (1,)), x)
    assert direct == general
    assert direct.startswith("TypeError") == (dtype == np.bool_ and kind in ("add", "multiply"))


@pytest.mark.parametrize("name,dtype", [(n, d) for n in (
    "negate", "exponential", "exponential_minus_one", "log", "log_plus_one", "sqrt", "cbrt",
    "tanh", "sine", "cosine", "tan") for d in (np.float32, np.float16, jnp.bfloat16)]
    + [("negate", np.int32), ("negate", np.uint8)])
def test_unary_lax_functions_build_what_jax_numpy_builds(name, dtype) -> None:
    jnp_fn = {"negate": jnp.negative, "exponential": jnp.exp, "exponential_minus_one": jnp.expm1,
              "log": jnp.log, "log_plus_one": jnp.log1p, "sqrt": jnp.sqrt, "cbrt": jnp.cbrt,
              "tanh": jnp.tanh, "sine": jnp.sin, "cosine": jnp.cos, "tan": jnp.tan}[name]
    x = jax.ShapeDtypeStruct((3, 5), dtype)
    ours = jax.make_jaxpr(_unary_table()[name])(x)
    theirs = jax.make_jaxpr(jnp_fn)(x)
    # (jax.numpy's wrappers are jitted functions: their body is the one primitive)
    assert [e.primitive.name for e in ours.jaxpr.eqns] == [name_of(theirs)]
    assert ours.out_avals == theirs.out_avals


def name_of(closed) -> str:
    eqns = closed.jaxpr.eqns
    while len(eqns) == 1 and "jaxpr" in eqns[0].params:
        eqns = eqns[0].params["jaxpr"].jaxpr.eqns
    (eqn,) = eqns
    return eqn.primitive.name


def test_select_is_lax_select_when_operands_agree_else_jnp_where() -> None:
    rng = np.random.default_rng(0)
    p = rng.random((3, 4)) < 0.5
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(_select(None, p, a, b), np.where(p, a, b))
    agree = jax.make_jaxpr(lambda p, a, b: _select(None, p, a, b))(p, a, b)
    assert [e.primitive.name for e in agree.jaxpr.eqns] == ["select_n"]
    # A scalar predicate, or a weakly typed operand: jnp.where's broadcasting and promotion.
    np.testing.assert_array_equal(_select(None, np.bool_(True), a, b), a)
    weak = jax.make_jaxpr(lambda p, b: _select(None, p, jnp.asarray(1.0) + 0 * b.sum(), b))
    assert weak(p, b).out_avals[0].shape == (3, 4)


@pytest.mark.parametrize("source,dest", [(0, 0), (0, 2), (2, 0), (1, 3), (3, 1)])
def test_moveaxis_is_jnp_moveaxis(source, dest) -> None:
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(_moveaxis(lax, jnp.asarray(x), source, dest),
                                  np.moveaxis(x, source, dest))


@pytest.mark.parametrize("kind,init,combined", [
    ("add", "0.0", False), ("add", "-0.0", True), ("add", "2.5", True),
    ("maximum", "0xFF800000", False), ("maximum", "0.0", True), ("minimum", "0x7F800000", False),
    ("multiply", "1.0", False),
])
def test_a_reduce_from_its_identity_is_the_monoid_reducer_alone(kind, init, combined) -> None:
    """A reduce whose init is a constant holding the identity its monoid reducer starts from
    (bit for bit: -0.0 is not a sum's) is that reducer alone; any other init is combined once.
    The JAX executor computes what the numpy one does either way."""
    from shardc.executors.jax_exec import JaxExecutor
    from shardc.executors.numpy_exec import NumpyExecutor
    from shardc.ir.parser import parse_module

    module = parse_module(f"""mesh @m = <["x"=2]>

func @main(%x: tensor<4x6xf32>) -> (tensor<4xf32>) attributes {{mesh = @m, in_shapes = [[4, 6]], \
in_shardings = [<@m, [{{}}, {{}}]>], out_shapes = [[4]], out_shardings = [<@m, [{{}}]>]}} {{
  %z = constant {{value = dense<{init}>}} : tensor<f32>
  %r = reduce %x, %z {{dimensions = [1], kind = {kind}}} : tensor<4xf32>
  return %r
}}
""")
    ex = JaxExecutor(module)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    x[0] = -0.0  # (a sum of -0.0s: +0.0 from a sum's identity, -0.0 from -0.0)
    jaxpr = jax.make_jaxpr(lambda v: ex.call(ex.func, [v]))(x)
    names = [e.primitive.name for e in jaxpr.eqns]
    combine = {"add": "add", "maximum": "max", "minimum": "min", "multiply": "mul"}[kind]
    assert (combine in names) == combined, names
    got = np.asarray(jax.jit(lambda v: ex.call(ex.func, [v]))(x)[0])
    (want,) = NumpyExecutor(module).run([x])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_all_slices_of_one_block_size_share_their_start() -> None:
    """The all_slices of one function over the same axes and block size compute where the
    device's block starts once (one axis_index). Each device still gets its block."""
    from shardc.executors.jax_arrays import JaxArrayProgram
    from shardc.executors.numpy_exec import NumpyExecutor
    from shardc.ir.parser import parse_module

    module = parse_module("""mesh @m = <["x"=2, "y"=2]>

func @main(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>) -> (tensor<4xf32>, \
tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) attributes {mesh = @m, in_shapes = [[8], [8], [8]], \
in_shardings = [<@m, [{}]>, <@m, [{}]>, <@m, [{}]>], out_shapes = [[8], [8], [8], [8]], \
out_shardings = [<@m, [{"x"}]>, <@m, [{"x"}]>, <@m, [{"y"}]>, <@m, [{"x", "y"}]>]} {
  %sa = spmd.all_slice %a {axes = ["x"], dim = 0, groups = [[0, 2], [1, 3]]} : tensor<4xf32>
  %sb = spmd.all_slice %b {axes = ["x"], dim = 0, groups = [[0, 2], [1, 3]]} : tensor<4xf32>
  %sc = spmd.all_slice %c {axes = ["y"], dim = 0, groups = [[0, 1], [2, 3]]} : tensor<4xf32>
  %sd = spmd.all_slice %sa {axes = ["y"], dim = 0, groups = [[0, 1], [2, 3]]} : tensor<2xf32>
  return %sa, %sb, %sc, %sd
}
""")
    mesh = _mesh((2, 2), ("x", "y"))
    program = JaxArrayProgram(module, devices=list(mesh.devices.flat), mesh=mesh)
    structs = [jax.ShapeDtypeStruct((8,), np.float32, sharding=s) for s in program.in_shardings]
    jaxpr = jax.make_jaxpr(program.jitted)(*structs)
    names = []

    def walk(j) -> None:
        for e in j.eqns:
            names.append(e.primitive.name)
            for p in e.params.values():
                if hasattr(p, "eqns"):
                    walk(p)
                elif hasattr(p, "jaxpr") and hasattr(p.jaxpr, "eqns"):
                    walk(p.jaxpr)

    walk(jaxpr.jaxpr)
    # x: one start for %sa and %sb; y: blocks of 4 (%sc) and 2 (%sd) start apart
    assert names.count("dynamic_slice") == 4
    assert names.count("axis_index") == 3, names
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(8).astype(np.float32) for _ in range(3)]
    got = [np.asarray(o) for o in program(*inputs)]
    want = NumpyExecutor(module).run(inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
