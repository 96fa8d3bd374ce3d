"""shardc.autodiff: every reverse-mode rule against central finite differences (f64, the
reference interpreter), and the zoo's training steps: their gradients likewise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from shardc.autodiff import gradients
from shardc.executors.reference import run_reference
from shardc.ir.builder import Builder
from shardc.ir.core import Value
from shardc.models.catalogue import MODELS
from shardc.models.embedding import lookup

Body = Callable[[Builder, list[Value]], Value]


def _weighted_sum(b: Builder, y: Value, seed: int) -> Value:
    """sum(y * c) for fixed random c: a scalar that depends on every element of y."""
    c = np.random.default_rng(seed).standard_normal(y.type.shape)
    w = b.constant(c, "f64", y.type.shape)
    return b.reduce(b.multiply(y, w), tuple(range(y.type.rank)), "add")


def _program(shapes: list[tuple[int, ...]], body: Body, ints: dict[int, int]):
    """(module returning loss and its gradients, the loss-only module)."""
    modules = []
    for with_grads in (True, False):
        b = Builder()
        with b.function("main") as f:
            args = [
                f.arg(s, "i32" if i in ints else "f64", name=f"a{i}")
                for i, s in enumerate(shapes)
            ]
            loss = _weighted_sum(b, body(b, args), 1)
            wrt = [a for i, a in enumerate(args) if i not in ints]
            outs = [loss] + (gradients(b, f.func, loss, wrt) if with_grads else [])
            f.returns(*outs)
        modules.append(b.module)
    return modules


def _check(shapes: list[tuple[int, ...]], body: Body, ints: dict[int, int] | None = None,
           positive: bool = False) -> None:
    ints = ints or {}
    grad_module, loss_module = _program(shapes, body, ints)
    rng = np.random.default_rng(0)
    inputs = []
    for i, s in enumerate(shapes):
        if i in ints:
            inputs.append(rng.integers(0, ints[i], s).astype(np.int32))
        elif positive:
            inputs.append(rng.uniform(0.5, 2.0, s))
        else:
            inputs.append(rng.standard_normal(s))
    _, *grads = run_reference(grad_module, inputs)
    eps = 1e-6
    k = 0
    for i, x in enumerate(inputs):
        if i in ints:
            continue
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            for sign in (1, -1):
                moved = [a.copy() for a in inputs]
                moved[i][idx] += sign * eps
                numeric[idx] += sign * run_reference(loss_module, moved)[0] / (2 * eps)
        np.testing.assert_allclose(grads[k], numeric, rtol=1e-5, atol=1e-6)
        k += 1


UNARY = ["negate", "exponential", "log", "rsqrt", "sqrt", "tanh", "logistic"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_rules(name: str) -> None:
    _check([(3, 4)], lambda b, a: b.op(name, [a[0]]), positive=True)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "minimum"])
def test_binary_rules(name: str) -> None:
    _check([(3, 4), (3, 4)], lambda b, a: b.op(name, a), positive=name == "divide")


def test_select_transpose_reshape_broadcast() -> None:
    def body(b: Builder, a: list[Value]) -> Value:
        x, y, v = a
        p = b.compare(x, y, "GT")
        s = b.select(p, x, b.transpose(b.reshape(y, (4, 3)), (1, 0)))
        return b.multiply(s, b.broadcast(v, (3, 4), (0,)))

    _check([(3, 4), (12,), (3,)], lambda b, a: body(b, [a[0], b.reshape(a[1], (3, 4)), a[2]]))


def test_broadcast_of_size_one_and_permuted_dims() -> None:
    _check([(4, 1, 3)], lambda b, a: b.broadcast(a[0], (3, 5, 4, 2), (2, 3, 0)))


@pytest.mark.parametrize("kind", ["add", "maximum", "minimum"])
def test_reduce_rules(kind: str) -> None:
    _check([(3, 4, 5)], lambda b, a: b.reduce(a[0], (0, 2), kind))


def test_dot_general_with_batch_and_several_contracting_dims() -> None:
    _check(
        [(2, 3, 4, 5), (5, 2, 6, 3)],
        lambda b, a: b.dot_general(a[0], a[1], ((1, 3), (3, 0)), ((0,), (1,))),
    )


def test_gather_rule_is_a_scatter_add() -> None:
    _check([(6, 4), (3, 5)], lambda b, a: lookup(b, a[0], a[1]), ints={1: 6})


SMALL = {
    "mlp": {"batch": 4, "d_model": 4, "d_ff": 6, "layers": 2},
    "transformer": {"batch": 2, "seq": 3, "d_model": 4, "heads": 2, "d_head": 2, "d_ff": 6},
    "embedding": {"batch": 2, "seq": 3, "vocab": 5, "d_model": 4},
    "moe": {"groups": 2, "group_size": 4, "d_model": 3, "experts": 2, "d_ff": 4, "capacity": 2},
    "mixer": {"batch": 2, "patches": 3, "channels": 4, "token_hidden": 3, "channel_hidden": 5},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_training_step_gradients_are_jax_grads(name: str) -> None:
    """The SGD step of each zoo model (small sizes): (p - p') / lr is what `jax.grad` of the
    forward program (as a JAX function) gives."""
    jax = pytest.importorskip("jax")
    from shardc.executors.jax_global import global_function

    spec = MODELS[name]
    small = SMALL.get(name, {})
    step, forward = spec.build(None, train="sgd", **small), spec.build(None, **small)
    rng = np.random.default_rng(0)
    inputs = {}
    for a in step.main.args:
        if a.type.dtype == "i32":
            inputs[a.name_hint] = rng.integers(0, 5, a.type.shape).astype(np.int32)
        else:
            inputs[a.name_hint] = rng.standard_normal(a.type.shape).astype(np.float32)
    loss, *updated = run_reference(step, list(inputs.values()))
    f = global_function(forward)
    names = [a.name_hint for a in forward.main.args]
    params = [a.name_hint for a in step.main.args][-len(updated):]

    def jax_loss(p: dict) -> object:
        (y,) = f(*[p[n] if n in p else inputs[n] for n in names])
        return y if y.ndim == 0 else ((y - inputs["target"]) ** 2).mean()

    want_loss, want = jax.value_and_grad(jax_loss)({n: inputs[n] for n in params})
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for n, u in zip(params, updated):
        got = (inputs[n] - u) / 0.01
        scale = max(float(np.max(np.abs(want[n]))), 1e-3)
        np.testing.assert_allclose(got, want[n], rtol=0, atol=2e-3 * scale, err_msg=n)
