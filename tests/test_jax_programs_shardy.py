"""Real JAX programs of issue 11, lowered live: `sdy-propagation-pipeline` prints what jaxlib's
Shardy prints, byte for byte.

- a residual MLP calling `jax.nn.relu` twice (a private function per use site, with different
  shardings at the two calls: Shardy propagates each call site on its own, `@relu`/`@relu_0`);
- a training step with `jax.checkpoint` (`stablehlo.optimization_barrier`, a data-flow op);
- a max-pooling training step with the pooled (spatial) dim sharded: `reduce_window` and its
  gradient `select_and_scatter`, windows the size of their stride;
- an argument sharding that does not divide its dim (`{"tp"}`, 4 devices, on a dim of 6: the
  largest dividing prefix `{"tp":(1)2}` is kept).
"""

from __future__ import annotations

import functools

import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from shardc.api import opt  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.shardy_compare import run_shardy  # noqa: E402


@functools.cache
def mesh():
    if len(jax.devices()) < 8:
        pytest.skip("needs 8 (simulated) devices")
    return jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)


def ns(spec) -> NamedSharding:
    return NamedSharding(mesh(), spec)


def f32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def residual_mlp() -> str:
    def f(x, w1, w2, w3, w4):
        h = jax.nn.relu(x @ w1) @ w2 + x
        return jax.nn.relu(h @ w3) @ w4 + h

    shardings = (ns(P("dp", None)), ns(P(None, "tp")), ns(P("tp", None)), ns(P()), ns(P()))
    args = (f32(16, 32), f32(32, 64), f32(64, 32), f32(32, 64), f32(64, 32))
    return jax.jit(f, in_shardings=shardings).lower(*args).as_text()


def remat_training_step() -> str:
    def block(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2

    def loss(params, x, y):
        return jnp.mean((jax.checkpoint(block)(x, *params) - y) ** 2)

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    shardings = ((ns(P(None, "tp")), ns(P("tp", None))), ns(P("dp", None)), ns(P("dp", None)))
    args = ((f32(32, 64), f32(64, 32)), f32(16, 32), f32(16, 32))
    return jax.jit(step, in_shardings=shardings).lower(*args).as_text()


def max_pool_training_step() -> str:
    def loss(w, x):
        pooled = jax.lax.reduce_window(
            jnp.tanh(x * w), -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
        )
        return jnp.sum(pooled * pooled)

    def step(w, x):
        value, grad = jax.value_and_grad(loss)(w, x)
        return value, w - 0.1 * grad

    shardings = (ns(P()), ns(P(None, "tp", None, None)))
    text = jax.jit(step, in_shardings=shardings).lower(f32(4), f32(8, 8, 8, 4)).as_text()
    assert "select_and_scatter" in text and "reduce_window" in text
    return text


def non_dividing_argument() -> str:
    # JAX refuses a sharding that does not divide, so it is written into the lowered text
    text = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=ns(P("dp", None))).lower(f32(10, 6))
    return text.as_text().replace('[{"dp"}, {}]>}', '[{"dp"}, {"tp"}]>}', 1)


PROGRAMS = {
    "residual_mlp": residual_mlp,
    "remat_training_step": remat_training_step,
    "max_pool_training_step": max_pool_training_step,
    "non_dividing_argument": non_dividing_argument,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_pipeline_prints_what_jaxlib_prints(name: str) -> None:
    text = PROGRAMS[name]()
    expected = run_shardy(text, "builtin.module(sdy-propagation-pipeline)")
    module = import_stablehlo(text, f"{name}.mlir")
    opt(module, "sdy-propagation-pipeline")
    assert export_stablehlo(module).rstrip("\n") == expected.rstrip("\n")


def test_the_programs_show_what_they_are_about() -> None:
    """The cases exercise what they are named for (so a JAX upgrade cannot hollow them out)."""
    assert residual_mlp().count("call @relu") == 2
    assert "stablehlo.optimization_barrier" in remat_training_step()
    assert '{"tp"}]>}' in non_dividing_argument()


# Bytes per device XLA's partitioner moves for these programs (jax 0.10.2, 8 CPU devices:
# the collectives of `jax.jit(...).lower(...).compile().as_text()`, as benchmarks/quality.py
# counts them): one all-reduce of the residual MLP's row-parallel product; the remat step's
# tp all-reduce (1,024) and its dp all-reduce of the loss and both weight gradients (4,100);
# the max-pool step's all-reduce of the loss and the 4-element weight's gradient (20: the
# pooled dim stays sharded, each device pools and scatters its own windows).
XLA_BYTES = {"residual_mlp": 1024, "remat_training_step": 5124, "max_pool_training_step": 20}


@pytest.mark.parametrize("name", sorted(XLA_BYTES))
def test_compile_moves_no_more_than_xla_and_runs_like_the_reference(name: str) -> None:
    """The remat barrier is an identity per value all the way down: propagation passes through
    it, insert-reshards lays each operand out as its result (nothing gathered), and the
    per-device program keeps it on local blocks."""
    import numpy as np

    from shardc.api import compile
    from shardc.executors.reference import run_reference

    module = import_stablehlo(PROGRAMS[name](), f"{name}.mlir")
    result = compile(module)
    assert result.report["total_comm_bytes"] <= XLA_BYTES[name]
    rng = np.random.default_rng(0)
    inputs = [0.5 * rng.standard_normal(a.type.shape).astype(np.float32)
              for a in module.main.args]
    want = run_reference(module, inputs)
    for backend in ("numpy", "jax"):
        for got, w in zip(result.run(inputs, backend=backend), want, strict=True):
            # `run --check`'s test: the error against the output's largest magnitude (f32 sums
            # of partial products come out in another order)
            assert np.max(np.abs(got - w)) <= 1e-5 * np.max(np.abs(w)) + 1e-6, backend
