"""Constant sub-computations and chlo ops on real JAX code, against jaxlib's own Shardy run
in-process: `sdy-propagation-pipeline` printed byte for byte as jaxlib prints it, and
`propagation-pipeline` (what `shardc compile` runs) deciding every value's sharding as Shardy's
propagation does, the copies of constant sub-computations each user reads included.

- A RoPE table built by a helper (a nested `jax.jit`: iota -> arithmetic -> cos/sin) and used
  at four places: Shardy's splitter copies the call, callee and all, once per use, so each copy
  takes its own user's sharding (split-constants, docs/propagation.md).
- A MaxText-style Llama step (layers stacked and scanned, each rematerialised; grad of the loss):
  JAX hoists the causal mask into `call @_where` before the loop, which is such a call too.
- The Llama block unscanned (RoPE tables and the mask inline), forward and grad.
- `jnp.var` (a private helper called at two sites, inside a batch norm): its `chlo.square` has
  no sharding rule in Shardy, so propagation does not go through it.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.shardy_compare import compare_modules, constant_trees, run_shardy  # noqa: E402

B, S, D, H, KV, DH, F, L = 8, 32, 64, 8, 2, 8, 128, 3  # grouped-query attention: 2 KV heads


def _mesh(axes: tuple[str, str]):
    return jax.make_mesh((2, 4), axes, axis_types=(AxisType.Auto,) * 2)


def _f32(*shape: int):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def rope_call() -> str:
    mesh = _mesh(("dp", "tp"))

    @jax.jit
    def rope_table():
        pos = jnp.arange(S, dtype=jnp.float32)[:, None]
        inv = 1.0 / (10000.0 ** (jnp.arange(16, dtype=jnp.float32) / 16))
        return jnp.cos(pos * inv), jnp.sin(pos * inv)

    def f(q, k):  # q: [S, H, 16] heads on tp; k: [S, 16] sequence on dp
        cos, sin = rope_table()
        return q * cos[:, None, :] + q * sin[:, None, :], k * cos + k * sin

    shardings = (NamedSharding(mesh, P(None, "tp")), NamedSharding(mesh, P("dp")))
    return jax.jit(f, in_shardings=shardings).lower(_f32(S, H, 16), _f32(S, 16)).as_text()


def _rms(x, g):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g


def _rope(x):
    pos = jnp.arange(S, dtype=jnp.float32)
    inv = 1.0 / (10000.0 ** (jnp.arange(0, DH, 2, dtype=jnp.float32) / DH))
    ang = pos[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def _llama_block(x, p):
    h = _rms(x, p["g1"])
    q, k, v = (jnp.einsum("bsd,dhk->bshk", h, p[w]) for w in ("wq", "wk", "wv"))
    q, k = _rope(q), _rope(k)
    k, v = jnp.repeat(k, H // KV, axis=2), jnp.repeat(v, H // KV, axis=2)
    s = jnp.einsum("bqhk,bshk->bhqs", q, k) / np.sqrt(DH)
    s = jnp.where(jnp.arange(S)[:, None] >= jnp.arange(S)[None, :], s, -1e9)
    o = jnp.einsum("bhqs,bshk->bqhk", jax.nn.softmax(s, -1), v)
    x = x + jnp.einsum("bqhk,hkd->bqd", o, p["wo"])
    h = _rms(x, p["g2"])
    return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]


_SHAPES = {"g1": (D,), "g2": (D,), "wq": (D, H, DH), "wk": (D, KV, DH), "wv": (D, KV, DH),
           "wo": (H, DH, D), "w1": (D, F), "w3": (D, F), "w2": (F, D)}
_SPECS = {"g1": P(), "g2": P(), "wq": P("fsdp", "tp"), "wk": P("fsdp"), "wv": P("fsdp"),
          "wo": P("tp", None, "fsdp"), "w1": P("fsdp", "tp"), "w3": P("fsdp", "tp"),
          "w2": P("tp", "fsdp")}


def llama(kind: str) -> str:
    mesh = _mesh(("fsdp", "tp"))
    x = (NamedSharding(mesh, P("fsdp")), _f32(B, S, D))
    if kind == "scanned_grad":  # MaxText's shape: layers stacked, scanned, rematerialised
        def loss(x, p):
            def body(h, lp):
                return jax.checkpoint(_llama_block)(h, lp), None

            return jax.lax.scan(body, x, p)[0].mean()

        specs = {k: NamedSharding(mesh, P(None, *s)) for k, s in _SPECS.items()}
        params = {k: _f32(L, *s) for k, s in _SHAPES.items()}
        f = jax.jit(jax.grad(loss, argnums=1), in_shardings=(x[0], specs))
        return f.lower(x[1], params).as_text()
    specs = {k: NamedSharding(mesh, s) for k, s in _SPECS.items()}
    params = {k: _f32(*s) for k, s in _SHAPES.items()}
    fun = _llama_block if kind == "fwd" else jax.grad(lambda x, p: _llama_block(x, p).mean(), 1)
    return jax.jit(fun, in_shardings=(x[0], specs)).lower(x[1], params).as_text()


def batchnorm_var_twice() -> str:
    mesh = _mesh(("fsdp", "tp"))

    def batchnorm(x, g, b):
        def bn(x, g, b):
            return (x - x.mean(0)) * jax.lax.rsqrt(jnp.var(x, 0) + 1e-5) * g + b

        z = jax.nn.relu(bn(x, g, b)) @ jnp.ones((64, 64), jnp.float32)
        return bn(jax.lax.with_sharding_constraint(z, NamedSharding(mesh, P(None, "tp"))), g, b)

    shardings = tuple(NamedSharding(mesh, s) for s in (P("fsdp"), P(), P()))
    return jax.jit(batchnorm, in_shardings=shardings).lower(
        _f32(32, 64), _f32(64), _f32(64)).as_text()


def chlo_ops() -> str:
    """chlo.square and chlo.erf between sharded element-wise ops and a reduction."""
    mesh = _mesh(("fsdp", "tp"))

    def f(x):
        return (jnp.tanh(jax.lax.square(x)) + jax.lax.erf(x - x.mean(0))).sum(0)

    return jax.jit(f, in_shardings=NamedSharding(mesh, P("fsdp"))).lower(_f32(32, 64)).as_text()


PROGRAMS = {
    "rope_call": rope_call,
    "llama_scanned_grad": lambda: llama("scanned_grad"),
    "llama_block_fwd": lambda: llama("fwd"),
    "llama_block_grad": lambda: llama("grad"),
    "batchnorm_var_twice": batchnorm_var_twice,
    "chlo_ops": chlo_ops,
}


@functools.cache
def _text(name: str) -> str:
    return PROGRAMS[name]()


@functools.cache
def _until_propagated() -> str:
    """jaxlib's pipeline through its call-graph export and edge sinking: every value as
    propagation decided it, calls back as calls (without the reshards it inserts at calls and
    the constants' merger, which shardc's propagation-pipeline does not run)."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import passmanager

    with jmlir.make_ir_context():
        text = str(passmanager.PassManager.parse("builtin.module(sdy-propagation-pipeline)"))
    text = text.replace("sdy-save-module,", "")
    start = text.index("func.func(sdy-sink-data-flow-edges")
    text = text[: text.index(")", text.index("}", start)) + 1] + ")"
    for piece in ("sdy-insert-func-call-reshards,", "func.func(sdy-constant-or-scalar-merger),"):
        assert piece in text
        text = text.replace(piece, "")
    return text


def _ours(text: str, pipeline: str):
    load_all_passes()
    module = import_stablehlo(text, "jax.mlir")
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return module


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_sdy_propagation_pipeline_prints_what_jaxlib_prints(name: str) -> None:
    text = _text(name)
    theirs = run_shardy(text, "builtin.module(sdy-propagation-pipeline)")
    assert export_stablehlo(_ours(text, "sdy-propagation-pipeline")) == theirs


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_propagation_decides_every_value_as_shardy(name: str) -> None:
    text = _text(name)
    ours = _ours(text, "propagation-pipeline")
    theirs = import_stablehlo(run_shardy(text, _until_propagated()), "shardy.mlir")
    agreement = compare_modules(ours, theirs, name)
    assert not agreement.structural, agreement.structural
    assert agreement.equal == agreement.compared > 0, "\n".join(agreement.differences)
    mine, shardys = constant_trees(ours), constant_trees(theirs)
    assert mine and mine == shardys


def test_a_constant_helper_is_called_once_per_use() -> None:
    """Each use of the RoPE table reads its own call of its own copy of the helper."""
    module = _ours(_text("rope_call"), "sdy-propagation-pipeline")
    calls = [op for op in module.main.body if op.name == "call"]
    assert len(calls) == 4
    assert all(len(r.uses) == 1 for op in calls for r in op.results if r.uses)
    assert sorted(module.functions) == ["main", "rope_table", "rope_table_1", "rope_table_2"]


def test_chlo_ops_are_computed_where_they_stand() -> None:
    """No rule for propagation, but no fallback either: --strict accepts them, nothing warns,
    each is computed on its operand as sharded, and the program runs as the unsharded one."""
    from shardc.check import expectations, judge
    from shardc.commands.run import random_inputs
    from shardc.pipeline import CompileOptions, compile

    module = import_stablehlo(_text("chlo_ops"), "chlo_ops.mlir")
    result = compile(module, CompileOptions(strict=True))
    assert not result.warnings
    chlo = [op for op in result.module.main.body if op.name in ("square", "erf")]
    assert len(chlo) == 2
    for op in chlo:
        assert op.operands[0].mapping.dims == op.result.mapping.dims
        assert op.result.mapping.dims[0].axes  # sharded, not gathered first
    inputs = random_inputs(module, 0)
    expected, _ = expectations(module, inputs)
    assert all(judge(got, e).ok for got, e in zip(result.run(inputs), expected))
