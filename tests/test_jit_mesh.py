"""shardc.jit without a mesh, as `jax.jit` is written: the mesh of `jax.set_mesh` around the
call, else the mesh the arguments were placed on; the first call binds it and a call under
another mesh is an error. Also: a shardc.jit function under a JAX transformation is a clear
error, and a nested `jax.jit` of a lambda (a function JAX names `@"<lambda>"`, a quoted symbol)
reads, prints back and runs."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.ir.parser import parse_module  # noqa: E402
from shardc.ir.printer import print_module  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"))


X = np.arange(64, dtype=np.float32).reshape(8, 8) / 64


@shardc.jit  # defined where no mesh is known, as a module's step function is
def step(x):
    return jnp.tanh(jax.lax.with_sharding_constraint(x, P("dp", "tp"))) @ x.T


def test_the_call_under_set_mesh_gives_the_mesh(mesh):
    with jax.set_mesh(mesh):
        y = step(X)
    assert y.sharding.mesh.shape == mesh.shape and len(y.sharding.device_set) == 8
    np.testing.assert_allclose(np.asarray(y), np.tanh(X) @ X.T, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(step(X)), np.tanh(X) @ X.T, rtol=1e-5)  # bound now
    other = jax.make_mesh((4, 2), ("a", "b"))
    with jax.set_mesh(other), pytest.raises(shardc.ShardcError, match="one shardc.jit per mesh"):
        step(X)


def test_the_arguments_placement_gives_the_mesh(mesh):
    f = shardc.jit(lambda x: x @ x.T, in_shardings=P("dp"))  # a spec, no mesh
    x = jax.device_put(X, NamedSharding(mesh, P(None, "tp")))
    y = f(x)
    assert y.sharding.mesh.shape == mesh.shape
    np.testing.assert_allclose(np.asarray(y), X @ X.T, rtol=1e-5)
    assert f.lower(x).in_shardings[0].spec == P("dp", None)  # the spec given, on that mesh


def test_no_mesh_anywhere_is_an_error_naming_the_ways_to_give_one():
    with pytest.raises(shardc.ShardcError, match="needs a mesh.*jax.set_mesh"):
        shardc.jit(lambda x: x * 2)(X)


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_under_a_jax_transformation_is_a_clear_error(mesh, transform):
    f = shardc.jit(lambda y: (y ** 2).sum(), mesh=mesh)
    outer = jax.grad(f) if transform == "grad" else jax.vmap(f)
    with pytest.raises(shardc.ShardcError, match="y is a tracer.*inside the function"):
        outer(X)


def test_a_nested_jit_of_a_lambda_reads_prints_and_runs(mesh):
    def fn(x):
        return jax.jit(lambda z: z * 3)(x) + 1

    text = jax.jit(fn).lower(X).as_text()
    assert 'call @"<lambda>"' in text and 'func.func private @"<lambda>"' in text
    module = import_stablehlo(text)
    assert "<lambda>" in module.functions
    assert export_stablehlo(module) == text
    native = print_module(module)
    assert 'func private @"<lambda>"' in native and 'callee = @"<lambda>"' in native
    assert print_module(parse_module(native)) == native
    y = shardc.jit(fn, mesh=mesh, in_shardings=P("dp"))(X)
    np.testing.assert_allclose(np.asarray(y), X * 3 + 1)


def test_a_function_name_mlir_writes_bare_prints_back_bare():
    # MLIR's bare identifiers take `-`; shardc's native text does not, and quotes it there.
    text = ("module @m {\n  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    %0 = call @a-b(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "    return %0 : tensor<4xf32>\n  }\n"
            "  func.func private @a-b(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    return %arg0 : tensor<4xf32>\n  }\n}\n")
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    native = print_module(module)
    assert 'func private @"a-b"' in native and print_module(parse_module(native)) == native
