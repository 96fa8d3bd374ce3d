#!/usr/bin/env python
# ruff: noqa: E501  (case descriptions are long one-liners, copied into README.md)
"""Regenerate the StableHLO+sdy fixture corpus from JAX.

For every case in ``CASES`` this writes, next to this script:

* ``<name>.mlir``            -- ``jax.jit(f, in_shardings=..., out_shardings=...).lower(*args).as_text()``
* ``<name>.propagated.mlir`` -- the same module after Shardy's ``sdy-propagation-pipeline``
                                (default options), run in-process with jaxlib's MLIR bindings.
* ``<name>.error.txt``       -- only when lowering or propagation failed (the run keeps going).

and under ``extras/``:

* ``<name>.rules.mlir``      -- default pipeline minus ``sdy-drop-sharding-rules`` (every op keeps
                                its ``#sdy.op_sharding_rule``), for every case that propagated.
* ``<name>.open.mlir``       -- default pipeline minus ``sdy-close-shardings`` and the explicit-reshard
                                insertion: propagated dims stay open (``{"dp", ?}``).
* ``<name>.origins.mlir``    -- pipeline with ``debug-sharding-origins=true`` for a few cases.
* ``mlp.debug_info.mlir``    -- ``as_text(debug_info=True)`` (``loc(...)`` forms; contains paths).
* ``priorities_handwritten*.mlir`` -- a hand-written module with user priorities (JAX cannot
                                express priorities), and its propagation.

Usage:  python tests/data/stablehlo/generate.py   (deterministic; needs jax[cpu])
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = Path(__file__).resolve().parent
EXTRAS = OUT / "extras"

AUTO2 = (AxisType.Auto,) * 2
AUTO3 = (AxisType.Auto,) * 3

MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=AUTO2)
MESH3 = jax.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=AUTO3)
# Non-default device order: device ids permuted, so sdy.mesh gets device_ids=[...].
_devs = sorted(jax.devices(), key=lambda d: d.id)
_perm = [0, 2, 4, 6, 1, 3, 5, 7]
MESH_PERM = jax.sharding.Mesh(
    np.array([_devs[i] for i in _perm]).reshape(2, 4), ("dp", "tp"), axis_types=AUTO2
)


def ns(spec, mesh=MESH):
    return NamedSharding(mesh, spec)


def f32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def i32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.int32)


def bf16(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.bfloat16)


CASES: list[tuple[str, str, callable]] = []


def case(name, doc):
    """Register a builder returning (fn, args, in_shardings, out_shardings)."""

    def deco(builder):
        CASES.append((name, doc, builder))
        return builder

    return deco


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@case("mlp", "x@w1 -> relu -> @w2; x dp-sharded, w1 cols / w2 rows on tp (Megatron), out given")
def _mlp():
    def f(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    args = (f32(16, 32), f32(32, 64), f32(64, 32))
    ins = (ns(P("dp", None)), ns(P(None, "tp")), ns(P("tp", None)))
    return f, args, ins, ns(P("dp", None))


@case("mlp_dp_only", "2-layer MLP, only the batch is sharded (dp); weights replicated P()")
def _mlp_dp_only():
    def f(x, w1, b1, w2):
        return jnp.tanh(x @ w1 + b1) @ w2

    args = (f32(16, 32), f32(32, 64), f32(64), f32(64, 32))
    ins = (ns(P("dp")), ns(P()), ns(P()), ns(P()))
    return f, args, ins, None


@case("megatron_mlp", "column-parallel w1 (+bias, gelu) then row-parallel w2 (+bias); x replicated, no out_shardings")
def _megatron():
    def f(x, w1, b1, w2, b2):
        h = jax.nn.gelu(jnp.dot(x, w1) + b1)
        return jnp.dot(h, w2) + b2

    args = (f32(8, 16, 32), f32(32, 64), f32(64), f32(64, 32), f32(32))
    ins = (ns(P()), ns(P(None, "tp")), ns(P("tp")), ns(P("tp", None)), ns(P()))
    return f, args, ins, None


def _attention(x, wq, wk, wv, wo):
    q = jnp.einsum("bsd,dhk->bshk", x, wq)
    k = jnp.einsum("bsd,dhk->bshk", x, wk)
    v = jnp.einsum("bsd,dhk->bshk", x, wv)
    s = jnp.einsum("bqhk,bthk->bhqt", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhqt,bthk->bqhk", p, v)
    return jnp.einsum("bqhk,hkd->bqd", o, wo)


@case("attention", "multi-head self-attention: QKV einsums, QK^T, softmax, AV, out proj; heads on tp, batch on dp")
def _attn():
    B, S, D, H, K = 4, 16, 32, 4, 8
    args = (f32(B, S, D), f32(D, H, K), f32(D, H, K), f32(D, H, K), f32(H, K, D))
    wspec = ns(P(None, "tp", None))
    ins = (ns(P("dp", None, None)), wspec, wspec, wspec, ns(P("tp", None, None)))
    return _attention, args, ins, ns(P("dp", None, None))


def _layer_norm(x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * g + b


@case("layer_norm", "layer norm over the last dim; x sharded [dp, tp, -], gamma/beta replicated")
def _ln():
    args = (f32(8, 16, 32), f32(32), f32(32))
    ins = (ns(P("dp", "tp", None)), ns(P()), ns(P()))
    return _layer_norm, args, ins, None


@case("softmax", "jax.nn.softmax on the last (tp-sharded) dim of a [dp, tp] matrix")
def _softmax():
    def f(x):
        return jax.nn.softmax(x, axis=-1)

    return f, (f32(16, 32),), (ns(P("dp", "tp")),), None


@case("embedding_lookup", "jnp.take(table, ids, axis=0) -> stablehlo.gather; table [-, tp], ids [dp, -] int32")
def _emb():
    def f(table, ids):
        return jnp.take(table, ids, axis=0)

    args = (f32(64, 32), i32(8, 16))
    ins = (ns(P(None, "tp")), ns(P("dp", None)))
    return f, args, ins, None


@case("embedding_logits_xent", "embedding, tied logits (h @ table.T), log_softmax, take_along_axis NLL, mean loss")
def _xent():
    def f(table, ids, labels):
        h = jnp.take(table, ids, axis=0)  # [B,S,D]
        logits = jnp.einsum("bsd,vd->bsv", h, table)
        logp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
        onehot = jax.nn.one_hot(labels, table.shape[0], dtype=logp.dtype)
        nll2 = -jnp.sum(onehot * logp, axis=-1)
        return jnp.mean(nll), jnp.mean(nll2)

    args = (f32(64, 32), i32(8, 16), i32(8, 16))
    ins = (ns(P("tp", None)), ns(P("dp", None)), ns(P("dp", None)))
    return f, args, ins, (ns(P()), ns(P()))


@case("transformer_block", "pre-LN block: x + attn(ln(x)); x + mlp(ln(x)); dp batch, tp heads/hidden")
def _block():
    B, S, D, H, K, F = 4, 16, 32, 4, 8, 64

    def f(x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2):
        x = x + _attention(_layer_norm(x, g1, b1), wq, wk, wv, wo)
        h = jax.nn.relu(jnp.einsum("bsd,df->bsf", _layer_norm(x, g2, b2), w1))
        return x + jnp.einsum("bsf,fd->bsd", h, w2)

    hw = ns(P(None, "tp", None))
    args = (f32(B, S, D), f32(D), f32(D), f32(D, H, K), f32(D, H, K), f32(D, H, K),
            f32(H, K, D), f32(D), f32(D), f32(D, F), f32(F, D))
    ins = (ns(P("dp", None, None)), ns(P()), ns(P()), hw, hw, hw, ns(P("tp", None, None)),
           ns(P()), ns(P()), ns(P(None, "tp")), ns(P("tp", None)))
    return f, args, ins, ns(P("dp", None, None))


@case("reshape_split_merge", "reshapes merging/splitting sharded dims (needs sub-axes), incl. a multi-axis dim ('dp','tp')")
def _reshape():
    def f(x, y):
        a = x.reshape(8, 64)            # merge [dp, tp, -] 8x16x4 -> 8x64
        a = a.reshape(2, 4, 8, 8)       # split 8->2x4 (dp) and 64->8x8
        b = y.reshape(4, 8, 16)         # split a ('dp','tp') dim 32 -> 4x8
        b = b.reshape(32, 16)
        return a * 2.0, b + 1.0

    args = (f32(8, 16, 4), f32(32, 16))
    ins = (ns(P("dp", "tp", None)), ns(P(("dp", "tp"), None)))
    return f, args, ins, None


@case("transpose_chain", "transposes (incl. .T and jnp.transpose perms) and a swapaxes of a sharded 3-D tensor")
def _transpose():
    def f(x):
        y = jnp.transpose(x, (2, 0, 1))
        y = jnp.swapaxes(y, 0, 2)
        return jnp.transpose(y, (1, 2, 0)) + 1.0, y.reshape(16, 32).T

    return f, (f32(8, 16, 4),), (ns(P("dp", "tp", None)),), None


@case("broadcast_reduce", "broadcast_in_dim (rank-expanding and scalar), sum/max/min reductions, keepdims")
def _bcast():
    def f(v, m):
        b = jnp.broadcast_to(v[None, :], (8, 32)) + m
        s0 = jnp.sum(b, axis=0)
        s1 = jnp.max(b, axis=1, keepdims=True)
        s2 = jnp.min(m)
        return s0, b - s1, s2, jnp.mean(b, axis=(0, 1))

    args = (f32(32), f32(8, 32))
    ins = (ns(P("tp")), ns(P("dp", "tp")))
    return f, args, ins, None


@case("concat_slice_pad", "concatenate, static slices/strides, jnp.pad (edge+interior via lax.pad), dynamic_slice, dynamic_update_slice, reverse")
def _concat():
    def f(x, y, i):
        c = jnp.concatenate([x, y], axis=1)           # 16x48
        s = c[2:10, ::2]                              # slice with stride
        p = jnp.pad(s, ((1, 1), (0, 4)))              # 10x28
        q = lax.pad(x, jnp.float32(0), ((0, 0, 0), (1, 2, 1)))
        d = lax.dynamic_slice(x, (i, 0), (4, 32))
        u = lax.dynamic_update_slice(x, d * 2.0, (i, 0))
        return p, q, jnp.flip(u, axis=0)

    args = (f32(16, 32), f32(16, 16), i32())
    ins = (ns(P("dp", "tp")), ns(P("dp", None)), ns(P()))
    return f, args, ins, None


@case("with_sharding_constraint", "lax.with_sharding_constraint mid-graph, no in/out shardings given")
def _wsc():
    def f(x, w):
        h = x @ w
        h = lax.with_sharding_constraint(h, ns(P("dp", "tp")))
        h = jnp.sin(h)
        h = lax.with_sharding_constraint(h, ns(P(None, None)))
        return h.sum(axis=1)

    return f, (f32(16, 32), f32(32, 64)), None, None


@case("unconstrained", "P.UNCONSTRAINED dims in with_sharding_constraint (open dims {?}); JAX rejects them in in/out_shardings")
def _unconstrained():
    def f(x, y):
        h = lax.with_sharding_constraint(x * 2.0, ns(P("dp", P.UNCONSTRAINED)))
        g = lax.with_sharding_constraint(y + 1.0, ns(P(P.UNCONSTRAINED, "tp")))
        return h @ g

    args = (f32(16, 32), f32(32, 64))
    return f, args, (ns(P()), ns(P(None, "tp"))), None


@case("mesh_3axis", "2x2x2 mesh ('x','y','z'): batch on x, multi-axis dim ('y','z'), 3-D tensor")
def _mesh3():
    def f(x, w):
        h = jnp.einsum("bsd,df->bsf", x, w)
        return jax.nn.relu(h).sum(axis=1)

    args = (f32(8, 16, 32), f32(32, 64))
    ins = (ns(P("x", None, None), MESH3), ns(P(None, ("y", "z")), MESH3))
    return f, args, ins, ns(P("x", "z"), MESH3)


@case("mesh_device_order", "non-default device order: NamedSharding(..., _logical_device_ids=(0,2,4,6,1,3,5,7)) (private JAX API) -> sdy.mesh with device_ids=[...]; a Mesh built from a permuted device array alone does not change the text")
def _mesh_perm():
    def f(x, w):
        return jnp.tanh(x @ w)

    ids = tuple(_perm)
    args = (f32(16, 32), f32(32, 64))
    ins = (NamedSharding(MESH_PERM, P("dp", None), _logical_device_ids=ids),
           NamedSharding(MESH_PERM, P(None, "tp"), _logical_device_ids=ids))
    return f, args, ins, None


@case("mesh_size_one_axis", "mesh (1, 8) ('pp', 'dp') with a spec naming the size-1 axis")
def _mesh_one():
    mesh = jax.make_mesh((1, 8), ("pp", "dp"), axis_types=AUTO2)

    def f(x):
        return jnp.cos(x) * 3.0

    return f, (f32(16, 32),), (ns(P(("pp", "dp"), None), mesh),), ns(P("dp", "pp"), mesh)


@case("shard_map", "jax.shard_map over both axes: local matmul + psum over tp, with auto ops outside")
def _shard_map():
    def local(x, w):
        return lax.psum(x @ w, "tp")

    sm = jax.shard_map(local, mesh=MESH, in_specs=(P("dp", "tp"), P("tp", None)),
                       out_specs=P("dp", None))

    def f(x, w):
        return jnp.exp(sm(x + 1.0, w)) * 2.0

    args = (f32(16, 32), f32(32, 64))
    ins = (ns(P("dp", "tp")), ns(P("tp", None)))
    return f, args, ins, None


@case("shard_map_partial", "jax.shard_map manual over 'tp' only (axis_names={'tp'}); 'dp' stays automatic")
def _shard_map_partial():
    def local(x, w):
        return lax.psum(x @ w, "tp")

    sm = jax.shard_map(local, mesh=MESH, in_specs=(P(None, "tp"), P("tp", None)),
                       out_specs=P(), axis_names={"tp"})

    def f(x, w):
        return sm(x, w) + 1.0

    args = (f32(16, 32), f32(32, 64))
    ins = (ns(P("dp", "tp")), ns(P("tp", None)))
    return f, args, ins, None


@case("scan_loop", "lax.scan over stacked layer weights (tp-sharded) -> stablehlo.while with sharded carry")
def _scan():
    def f(x, ws):
        def body(h, w):
            h = jnp.tanh(h @ w)
            return h, h.sum()

        h, sums = lax.scan(body, x, ws)
        return h, sums

    args = (f32(16, 32), f32(3, 32, 32))
    ins = (ns(P("dp", None)), ns(P(None, None, "tp")))
    return f, args, ins, None


@case("while_loop", "lax.fori_loop / while_loop with a data-dependent condition")
def _while():
    def f(x, n):
        y = lax.fori_loop(0, 4, lambda i, v: v * 0.5 + jnp.float32(i), x)

        def cond(c):
            return (c[0] < n) & (jnp.sum(c[1]) < 1e6)

        def body(c):
            return c[0] + 1, c[1] * 2.0

        _, z = lax.while_loop(cond, body, (jnp.int32(0), y))
        return z

    return f, (f32(16, 32), i32()), (ns(P("dp", "tp")), ns(P())), None


@case("func_call", "nested jax.jit functions -> private func.func + func.call (called twice, and nested)")
def _call():
    @jax.jit
    def inner(a, b):
        return jnp.maximum(a @ b, 0.0)

    @jax.jit
    def outer_helper(a):
        return jnp.log1p(jnp.abs(a))

    def f(x, w1, w2):
        h = inner(x, w1)
        h = outer_helper(h)
        return inner(h, w2)

    args = (f32(16, 32), f32(32, 64), f32(64, 32))
    ins = (ns(P("dp", None)), ns(P(None, "tp")), ns(P("tp", None)))
    return f, args, ins, None


@case("integer_ops", "int32 program: arithmetic, floor-div/rem, bitwise, shifts, compare/select, argmax, int matmul, convert")
def _ints():
    def f(a, b):
        c = a * 3 + b
        d = jnp.where(c > 7, c // 2, c % 5)
        e = (d & 0xFF) | (a ^ b)
        e = jnp.left_shift(e, 1) >> 1
        m = jnp.argmax(e, axis=1)
        mm = a @ b.T
        return e, m, mm.astype(jnp.float32), jnp.sum(e, axis=0).astype(jnp.int8)

    args = (i32(16, 32), i32(16, 32))
    ins = (ns(P("dp", "tp")), ns(P("dp", "tp")))
    return f, args, ins, None


@case("bf16", "bf16 matmul with f32 accumulation (preferred_element_type), converts, bf16 softmax")
def _bf16():
    def f(x, w):
        h = jnp.dot(x, w, preferred_element_type=jnp.float32)
        y = jax.nn.softmax(h.astype(jnp.bfloat16), axis=-1)
        return y, (x.astype(jnp.float32) * 1.5).astype(jnp.bfloat16)

    args = (bf16(16, 32), bf16(32, 64))
    ins = (ns(P("dp", None)), ns(P(None, "tp")))
    return f, args, ins, None


@case("misc_ops", "sort, cumsum (reduce_window), iota, clamp, argmin (variadic reduce), rsqrt, select, compare, erf")
def _misc():
    def f(x):
        s = jnp.sort(x, axis=1)
        c = jnp.cumsum(x, axis=0)
        io = jnp.arange(32, dtype=jnp.float32)[None, :] + jnp.zeros_like(x)
        cl = jnp.clip(x, -1.0, 1.0)
        am = jnp.argmin(x, axis=0)
        r = lax.rsqrt(jnp.abs(x) + 1.0)
        e = lax.erf(x)
        return s, c, io * cl, am, jnp.where(x > 0, r, e)

    return f, (f32(16, 32),), (ns(P("dp", "tp")),), None


@case("conv2d", "NHWC conv2d (lax.conv_general_dilated) with batch on dp and out-features on tp, + bias, avg-pool")
def _conv():
    def f(x, k, b):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y + b)
        return lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0

    args = (f32(8, 16, 16, 4), f32(3, 3, 4, 16), f32(16))
    ins = (ns(P("dp", None, None, None)), ns(P(None, None, None, "tp")), ns(P("tp")))
    return f, args, ins, None


@case("replicated_and_multiaxis", "fully replicated args (P()), a dim sharded on both axes ('dp','tp') and a ('tp','dp') order")
def _multi():
    def f(a, b, c):
        return a + b, jnp.sum(c * 2.0, axis=1)

    args = (f32(32, 16), f32(32, 16), f32(32, 16))
    ins = (ns(P(("dp", "tp"), None)), ns(P()), ns(P(("tp", "dp"), None)))
    return f, args, ins, (ns(P(("dp", "tp"), None)), ns(P()))


@case("donation_and_aliasing", "donate_argnums on a sharded arg -> tf.aliasing_output / result attrs")
def _donate():
    def f(x, y):
        return x + y, y * 2.0

    args = (f32(16, 32), f32(16, 32))
    ins = (ns(P("dp", "tp")), ns(P("dp", None)))
    return f, args, ins, None


@case("cond_switch", "lax.cond (-> stablehlo.case with 2 branches) and lax.switch (3 branches) on sharded operands")
def _cond():
    def f(x, i):
        y = lax.cond(jnp.sum(x) > 0, lambda v: v + 1.0, lambda v: v * 3.0, x)
        return lax.switch(i, [jnp.sin, jnp.cos, lambda v: v @ v.T @ v], y)

    return f, (f32(16, 16), i32()), (ns(P("dp", "tp")), ns(P())), None


@case("extra_syntax", "lax.composite, set_xla_metadata (mhlo.frontend_attributes), top_k (chlo), non-splat constants, cholesky (custom_call with JAX-given sdy.sharding_rule), optimization_barrier, clamp")
def _extra():
    from jax.experimental.xla_metadata import set_xla_metadata

    def f(x, m):
        with set_xla_metadata(my_attr="hello", n=3):
            y = jnp.sin(x)
        c = lax.composite(lambda a: a * 2.0, name="my.double")(y)
        vals, idx = lax.top_k(x, 3)
        k = jnp.array([[1.0, 2.0, 3.0, 4.0]] * 4, dtype=jnp.float32) + jnp.arange(4.0)[:, None]
        bits = jnp.array([True, False, True, True])
        ch = jnp.linalg.cholesky(jnp.eye(4) * 4.0 + m @ m.T)
        b1, b2 = lax.optimization_barrier((c, vals))
        return b1, b2, idx, k @ ch, jnp.where(bits, 1, 2), lax.clamp(-1.0, x, 1.0)

    args = (f32(16, 32), f32(4, 4))
    return f, args, (ns(P("dp", "tp")), ns(P())), None


DONATE = {"donation_and_aliasing": (0,)}
ORIGINS_CASES = ("mlp", "reshape_split_merge", "attention", "with_sharding_constraint")


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


DEFAULT_PIPELINE = "builtin.module(sdy-propagation-pipeline)"


def expanded_pipeline() -> str:
    """The textual expansion of sdy-propagation-pipeline in the installed jaxlib."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import passmanager

    with jmlir.make_ir_context():
        p = str(passmanager.PassManager.parse(DEFAULT_PIPELINE))
    # sdy-save-module (a dump hook, a no-op without a dump directory) prints in the expansion
    # but is not registered for parsing.
    return p.replace("sdy-save-module,", "").replace(",sdy-save-module", "")


def variant_pipeline(kind: str) -> str:
    """Variants of the default pipeline, made by editing its expansion (the jaxlib build's
    sdy-propagation-pipeline takes no options).

    rules   -- without the final sdy-drop-sharding-rules: ops keep sdy.sharding_rule.
    open    -- without sdy-close-shardings and without sdy-insert-explicit-reshards (+ its
               canonicalize): propagated dims stay open ({"a", ?}) as propagation left them.
    origins -- debug-sharding-origins=true in propagation, constraints and edge sinking.
    """
    p = expanded_pipeline()

    def cut(s: str, piece: str) -> str:
        if piece not in s:
            raise RuntimeError(f"pipeline piece not found: {piece!r} in {s}")
        return s.replace(piece, "")

    if kind == "rules":
        return cut(p, ",func.func(sdy-drop-sharding-rules)")
    if kind == "open":
        p = cut(p, "sdy-close-shardings,")
        p = cut(p, "func.func(sdy-insert-explicit-reshards{enable-full-version=false}),")
        return re.sub(r"canonicalize\{[^}]*\{sdy-collective\}[^}]*\},", "", p)
    if kind == "origins":
        # also matches sink-debug-sharding-origins=false
        if "debug-sharding-origins=false" not in p:
            raise RuntimeError("debug-sharding-origins not in pipeline")
        return p.replace("debug-sharding-origins=false", "debug-sharding-origins=true")
    raise ValueError(kind)


def propagate(text: str, pipeline: str = DEFAULT_PIPELINE) -> str:
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir, passmanager

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        pm = passmanager.PassManager.parse(pipeline)
        pm.run(module.operation)
        return str(module)


def lower(builder):
    fn, args, ins, outs = builder()
    kw = {}
    if ins is not None:
        kw["in_shardings"] = ins
    if outs is not None:
        kw["out_shardings"] = outs
    return fn, args, kw


def write(path: Path, text: str) -> None:
    if not text.endswith("\n"):
        text += "\n"
    path.write_text(text)


PRIORITIES_HANDWRITTEN = """\
module @priorities attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}p1, {?}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}p0, {"tp"}p2]>}) -> tensor<16x64xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {"tp", ?}p1]> : tensor<16x64xf32>
    %2 = stablehlo.tanh %1 : tensor<16x64xf32>
    return %2 : tensor<16x64xf32>
  }
}
"""


def main() -> int:
    EXTRAS.mkdir(exist_ok=True)
    for stale in list(OUT.glob("*.mlir")) + list(OUT.glob("*.error.txt")) + list(EXTRAS.glob("*")):
        stale.unlink()

    results = []
    for name, _doc, builder in CASES:
        status = "ok"
        try:
            fn, args, kw = lower(builder)
            jitted = jax.jit(fn, donate_argnums=DONATE.get(name, ()), **kw)
            text = jitted.lower(*args).as_text()
            write(OUT / f"{name}.mlir", text)
        except Exception:  # noqa: BLE001
            status = "lower-failed"
            write(OUT / f"{name}.error.txt", f"lowering failed\n\n{traceback.format_exc()}")
            results.append((name, status))
            continue
        try:
            write(OUT / f"{name}.propagated.mlir", propagate(text))
        except Exception:  # noqa: BLE001
            status = "propagate-failed"
            write(OUT / f"{name}.error.txt", f"propagation failed\n\n{traceback.format_exc()}")
            results.append((name, status))
            continue
        try:
            write(EXTRAS / f"{name}.rules.mlir", propagate(text, variant_pipeline("rules")))
            write(EXTRAS / f"{name}.open.mlir", propagate(text, variant_pipeline("open")))
            if name in ORIGINS_CASES:
                write(EXTRAS / f"{name}.origins.mlir",
                      propagate(text, variant_pipeline("origins")))
        except Exception:  # noqa: BLE001
            status = "ok (extras failed)"
            write(EXTRAS / f"{name}.error.txt", traceback.format_exc())
        results.append((name, status))

    # debug_info example (contains absolute paths of this script: not byte-stable across checkouts)
    fn, args, kw = lower(dict((n, b) for n, _, b in CASES)["mlp"])
    write(EXTRAS / "mlp.debug_info.mlir", jax.jit(fn, **kw).lower(*args).as_text(debug_info=True))

    write(EXTRAS / "priorities_handwritten.mlir", PRIORITIES_HANDWRITTEN)
    try:
        write(EXTRAS / "priorities_handwritten.propagated.mlir", propagate(PRIORITIES_HANDWRITTEN))
        write(EXTRAS / "priorities_handwritten.open.mlir",
              propagate(PRIORITIES_HANDWRITTEN, variant_pipeline("open")))
    except Exception:  # noqa: BLE001
        write(EXTRAS / "priorities_handwritten.error.txt", traceback.format_exc())

    width = max(len(n) for n, _ in results)
    import jaxlib

    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}")
    for n, s in results:
        print(f"  {n:<{width}}  {s}")
    return 0 if all(s.startswith("ok") for _, s in results) else 1


if __name__ == "__main__":
    sys.exit(main())
