"""A zoo model's training step: forward, loss, backward (shardc.autodiff), optimizer update.

    module = MODELS["transformer"].build("dp_tp", train="adam", layers=2)

The model body builds its forward pass as usual; `append_training_step` then turns `@main` into
one step of training. A model whose output is a scalar (the embedding model's cross-entropy) is
its own loss; any other gets a `%target` shaped like its output, sharded like its first data
argument, and the mean squared error. The parameters are every argument that is not data
(`ModelSpec.data`). The step returns the loss and the updated parameters, sharded as the
parameters are (so the next step takes them as they are):

    sgd:   @main(data..., [target], params...)                  -> (loss, params'...)
           p' = p - lr * g
    adam:  @main(data..., [target], params..., m..., r..., count)
               -> (loss, params'..., m'..., r'...)
           m' = b1 m + (1 - b1) g     r' = sqrt(b2 r^2 + (1 - b2) g^2)     t = count + 1
           p' = p - lr * (m' / (1 - b1^t)) / (r' / sqrt(1 - b2^t) + eps)

Adam keeps the second moment as its square root `r` (v = r^2: the same steps), so any state a
random input gives is a valid one (a negative `v` is not, and divides by ~0). `%count: i32` is
the number of steps taken before this one: 0 on the first, as optax counts.

Optimizer state is sharded like its parameter (the preset's annotation for the role).
"""

from __future__ import annotations

from dataclasses import dataclass

import shardc.models.layers as L
from shardc.autodiff import erase_dead, gradients
from shardc.ir.builder import Builder, FunctionBuilder
from shardc.ir.core import Function, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.models.annotations import Annotations

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class Hyper:
    """Optimizer constants (the step's IR holds them as constants)."""

    lr: float = 0.01
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8


def mse(b: Builder, y: Value, target: Value) -> Value:
    """mean((y - target)^2), a scalar."""
    d = b.subtract(y, target)
    total = b.reduce(b.multiply(d, d), tuple(range(y.type.rank)), "add")
    return b.multiply(total, b.constant(1.0 / y.type.num_elements, y.type.dtype))


def append_training_step(
    b: Builder, a: Annotations, data: tuple[str, ...], optimizer: str, hyper: Hyper = Hyper()
) -> None:
    """Rewrite the module's `@main` (a forward pass whose arguments played `a.order`'s roles)
    into one training step with `optimizer` (see the module docstring)."""
    if optimizer not in OPTIMIZERS:
        raise ShardcError(f"unknown optimizer '{optimizer}' (expected {', '.join(OPTIMIZERS)})")
    func = b.module.functions["main"]
    ret = func.return_op
    assert ret is not None and len(a.order) == len(func.args) and ret.num_operands == 1
    y = ret.operand(0)
    ret.erase()
    forward = {id(op) for op in func.body}
    inputs = [v for v, r in zip(func.args, a.order) if r in data]
    params = [(v, r) for v, r in zip(func.args, a.order) if r not in data]
    state: list[Value] = []
    with b.insertion_point(after=func.body.last):
        if y.type.rank == 0:
            loss = y
        else:
            like = next((r for r in a.order if r in data), None)
            target = _arg(func, "target", y.type.shape, a(like, y.type.rank) if like else None)
            inputs.append(target)
            loss = mse(b, y, target)
        loss = L.named(loss, "loss")
        grads = gradients(b, func, loss, [p for p, _ in params])
        for (p, _), g in zip(params, grads):
            g.name_hint = f"grad_{p.name_hint}"
        if optimizer == "sgd":
            updated = [b.subtract(p, L.scale(b, g, hyper.lr)) for (p, _), g in zip(params, grads)]
            kept = [p for p, _ in params]
        else:
            updated, state = _adam(b, func, a, params, grads, hyper)
            kept = [p for p, _ in params] + state[: 2 * len(params)]
        for v, p in zip(updated, kept):
            v.name_hint = f"new_{p.name_hint}"
        mappings = [None, *(p.mapping for p in kept)]
        FunctionBuilder(b, func).returns(loss, *updated, mappings=mappings)
    erase_dead(func, forward)
    _order_args(func, inputs + [p for p, _ in params] + state)


def _adam(
    b: Builder,
    func: Function,
    a: Annotations,
    params: list[tuple[Value, str]],
    grads: list[Value],
    hyper: Hyper,
) -> tuple[list[Value], list[Value]]:
    """(new params, new m, new v) and the state arguments (m..., v..., step)."""
    ms = [_arg(func, f"m_{p.name_hint}", p.type.shape, a(r, p.type.rank)) for p, r in params]
    rs = [_arg(func, f"r_{p.name_hint}", p.type.shape, a(r, p.type.rank)) for p, r in params]
    count = _arg(func, "count", (), None, "i32")
    step = b.add(b.convert(count, "f32"), b.constant(1.0))
    c1 = b.subtract(b.constant(1.0), b.power(b.constant(hyper.b1), step))
    c2 = b.sqrt(b.subtract(b.constant(1.0), b.power(b.constant(hyper.b2), step)))
    new_p, new_m, new_r = [], [], []
    for (p, _), g, m, r in zip(params, grads, ms, rs):
        shape = p.type.shape
        m2 = b.add(L.scale(b, m, hyper.b1), L.scale(b, g, 1.0 - hyper.b1))
        g2 = L.scale(b, b.multiply(g, g), 1.0 - hyper.b2)
        r2 = b.sqrt(b.add(L.scale(b, b.multiply(r, r), hyper.b2), g2))
        m_hat = b.divide(m2, b.broadcast(c1, shape, ()))
        denom = b.add(b.divide(r2, b.broadcast(c2, shape, ())), L.full(b, hyper.eps, shape))
        new_p.append(b.subtract(p, L.scale(b, b.divide(m_hat, denom), hyper.lr)))
        new_m.append(m2)
        new_r.append(r2)
    return new_p + new_m + new_r, ms + rs + [count]


def _arg(
    func: Function,
    name: str,
    shape: tuple[int, ...],
    mapping: NamedMapping | None,
    dtype: str = "f32",
) -> Value:
    """A new argument at the end of `func` (`_order_args` puts it in place)."""
    v = Value(DistributedTensorType(tuple(shape), dtype, mapping), func, len(func.args), name)
    func.args.append(v)
    func.arg_attrs.append({})
    return v


def _order_args(func: Function, order: list[Value]) -> None:
    """Put the arguments of `func` in `order` (every argument once)."""
    assert sorted(map(id, order)) == sorted(map(id, func.args))
    attrs = {id(v): func.arg_attrs[v.index] for v in func.args}
    func.args = list(order)
    func.arg_attrs = [attrs[id(v)] for v in order]
    for i, v in enumerate(order):
        v.index = i
