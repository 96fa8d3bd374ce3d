"""The special functions JAX writes as `chlo.*` ops (jnp.sinh, jnp.arcsin, lax.lgamma,
lax.digamma, lax.erfc, lax.bessel_i1e, lax.nextafter, lax.zeta, lax.polygamma): each imports
and prints back byte for byte, runs on the reference interpreter to `jax.jit`'s numbers (f32
and bf16), and compiles for 8 devices: shardc.jit lets a sharding through each as XLA does
(it expands them into element-wise ops before Shardy), while the `propagation-pipeline` on the
imported text, like jaxlib's Shardy pass, has no rule for them."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.stablehlo import export_stablehlo, import_stablehlo

jax = pytest.importorskip("jax")
pytest.importorskip("scipy", reason="the reference kernels of the special functions use scipy")
jnp, lax = jax.numpy, jax.lax

# op -> (function of one array, the input range it is defined on)
FUNCTIONS = {
    "sinh": (jnp.sinh, (-3, 3)),
    "cosh": (jnp.cosh, (-3, 3)),
    "asin": (jnp.arcsin, (-0.99, 0.99)),
    "acos": (jnp.arccos, (-0.99, 0.99)),
    "atan": (jnp.arctan, (-5, 5)),
    "asinh": (jnp.arcsinh, (-5, 5)),
    "acosh": (jnp.arccosh, (1.01, 6)),
    "atanh": (jnp.arctanh, (-0.99, 0.99)),
    "lgamma": (lax.lgamma, (-4.5, 8)),
    "digamma": (lax.digamma, (-4.5, 8)),
    "erfc": (lax.erfc, (-3, 3)),
    "bessel_i1e": (lax.bessel_i1e, (-6, 6)),
    "next_after": (lambda x: lax.nextafter(x, jnp.flip(x)), (-2, 2)),
    "zeta": (lambda x: lax.zeta(x, x - 1.0), (2.1, 6)),
    "polygamma": (lambda x: lax.polygamma(jnp.round(x - 2.0), x), (2.0, 5.5)),
}


def _args(name: str, dtype=np.float32) -> np.ndarray:
    lo, hi = FUNCTIONS[name][1]
    x = np.linspace(lo, hi, 64).reshape(8, 8)
    if name == "digamma":
        x[0, :3] = [0.0, -1.0, -2.0]  # its poles: NaN under XLA
    return x.astype(dtype)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_round_trips_and_runs_to_jax_numbers(name: str, dtype: str) -> None:
    fn = FUNCTIONS[name][0]
    x = _args(name, jnp.dtype(dtype))
    text = jax.jit(fn).lower(x).as_text()
    assert f"chlo.{name} " in text
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    (got,) = run_reference(module, [np.asarray(x)])
    want = np.asarray(jax.jit(fn)(x))
    assert got.dtype == want.dtype
    tol = 1e-5 if dtype == "float32" else 1e-2  # bf16: one rounding of the same float32 value
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol, equal_nan=True)
    if name == "next_after":  # exact: one step of the bits
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name", ["sinh", "lgamma", "next_after"])
def test_a_sharding_goes_through_under_jit_not_under_shardys_pipeline(name: str) -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardc
    from shardc.pipeline import compile

    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    fn = FUNCTIONS[name][0]
    x = _args(name)

    def step(a):
        return fn(a) * 2.0

    sharded = NamedSharding(mesh, P("x"))
    want = jax.jit(step, in_shardings=(sharded,))
    ours = shardc.jit(step, in_shardings=(sharded,), mesh=mesh)
    xla = want.lower(x).compile().output_shardings
    assert xla.spec[0] == "x"  # XLA's result is sharded: its expansion let "x" through
    assert ours.lower(x).out_shardings.is_equivalent_to(xla, 2)
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(want(x)), rtol=1e-5, atol=1e-5)
    # the imported text under the propagation pipeline: no rule, so nothing reaches the result
    result = compile(import_stablehlo(want.lower(x).as_text()))
    assert result.module.main.result_types[0].mapping.is_fully_replicated
    (got,) = result.run([x])
    np.testing.assert_allclose(got, np.asarray(want(x)), rtol=1e-5, atol=1e-5)
