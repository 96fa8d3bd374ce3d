"""shardc.jit's per-device program compiled by XLA as N replicas of its body, without the SPMD
partitioner (compiler/executors/xla_replicas.py), printed by shardc (replica_text.py) or from
JAX's trace: which programs take which route, that they compute what jax.jit and the numpy
executor compute (every collective, combined ones, `axis_index`, a mesh in another device
order, donation, arguments in any placement, the zoo's training steps; a user's shard_map
bodies are tests/test_jit_shard_map.py's), and that the others are compiled partitioned."""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.executors import jax_arrays  # noqa: E402
from shardc.executors.jax_arrays import JaxArrayProgram  # noqa: E402
from shardc.models.catalogue import MODELS  # noqa: E402
from tests.spmd.test_spmd_exec import DEVICE_IDS, UNEVEN_COLLECTIVES  # noqa: E402
from tests.test_training import _inputs  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)

AUTO = (jax.sharding.AxisType.Auto,) * 2
rng = np.random.default_rng(5)
X = rng.standard_normal((16, 32)).astype(np.float32)
W1 = rng.standard_normal((32, 64)).astype(np.float32) * 0.2
W2 = rng.standard_normal((64, 32)).astype(np.float32) * 0.2


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"), axis_types=AUTO)


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def _program(f: shardc.jit) -> JaxArrayProgram:
    (compiled,) = f.programs()
    return compiled.program()


def test_a_tensor_parallel_step_runs_as_replicas_and_equals_jax_jit(mesh):
    specs = (P("dp"), P(None, "tp"), P("tp"))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=specs)
    got = f(X, W1, W2)
    want = jax.jit(mlp, in_shardings=tuple(NamedSharding(mesh, s) for s in specs))(X, W1, W2)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert _program(f).route == "text"
    hlo = f.programs()[0].executable.as_text()
    # XLA's module: 8 replicas of one partition, the row-parallel product's sum an all-reduce
    # over the replicas of each "tp" group, and no partition ids left.
    assert re.search(r"replica_count=8\b", hlo) and "num_partitions=8" not in hlo
    assert re.search(r"all-reduce.*replica_groups=\{\{0,1,2,3\},\{4,5,6,7\}\}", hlo)
    assert "partition-id" not in hlo


def test_a_mesh_in_another_device_order(mesh):
    # Replica i runs on the i-th device of the mesh: the collectives' groups follow the mesh's
    # order, not the devices' ids.
    order = [5, 2, 7, 0, 3, 6, 1, 4]
    shuffled = Mesh(np.array(jax.devices())[order].reshape(2, 4), ("dp", "tp"), axis_types=AUTO)
    specs = (P("dp"), P(None, "tp"), P("tp"))

    def ring(x, w1, w2):  # a reduction over "tp" and a permutation round it
        y = mlp(x, w1, w2)
        return y, jax.shard_map(
            lambda a: jax.lax.ppermute(a, "tp", [(j, (j + 1) % 4) for j in range(4)])
            + jax.lax.axis_index("tp").astype(a.dtype),
            mesh=shuffled, in_specs=P("dp", "tp"), out_specs=P("dp", "tp"), check_vma=False)(y)

    f = shardc.jit(ring, mesh=shuffled, in_shardings=specs)
    got = f(X, W1, W2)
    want = jax.jit(ring, in_shardings=tuple(NamedSharding(shuffled, s) for s in specs))(
        X, W1, W2)
    assert _program(f).route == "trace"  # (the shard_map body's own ppermute)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        assert g.sharding.mesh.devices.tolist() == shuffled.devices.tolist()


def test_arguments_in_any_placement_are_placed_first(mesh):
    specs = (P("dp"), P(None, "tp"), P("tp"))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=specs)
    want = np.asarray(mlp(X, W1, W2))
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), want, rtol=1e-5, atol=1e-6)  # numpy
    elsewhere = jax.device_put(W1, NamedSharding(mesh, P("tp", None)))  # committed, other spec
    uncommitted = jnp.asarray(W2)  # on the default device
    for _ in range(2):  # the second call through the cache of placements
        got = f(jnp.asarray(X), elsewhere, uncommitted)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    assert _program(f).replicas


def test_donated_arguments_are_given_up(mesh):
    def step(w, x):
        return w - 0.1 * jax.grad(lambda v: jnp.sum(jnp.tanh(x @ v) ** 2))(w)

    f = shardc.jit(step, mesh=mesh, in_shardings=(P(None, "tp"), P("dp")), donate_argnums=0)
    w = jax.device_put(W1, NamedSharding(mesh, P(None, "tp")))
    new = f(w, X)
    assert _program(f).replicas and w.is_deleted()
    np.testing.assert_allclose(np.asarray(new), np.asarray(step(W1, X)), rtol=1e-5, atol=1e-6)
    assert "input_output_alias" in f.programs()[0].executable.as_text()


def test_loops_and_their_bodies_are_printed_too(mesh):
    # A scan and a while loop: their bodies are the regions of the per-device program's
    # `while` ops (outlined functions printed inline), the collectives inside them included.
    def f(x, ws):
        h, s = jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), jnp.sum(h)), x, ws)
        _, h = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5), (0, h))
        return h, s

    ws = rng.standard_normal((3, 32, 32)).astype(np.float32) * 0.2
    jitted = shardc.jit(f, mesh=mesh, in_shardings=(P("dp"), P(None, None, "tp")))
    for got, want in zip(jitted(X, ws), f(X, ws), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert _program(jitted).route == "text"
    assert len(jitted.programs()[0].spmd.functions) > 1


@pytest.mark.parametrize(("text", "route"), [(UNEVEN_COLLECTIVES, "partitioned"),
                                             (DEVICE_IDS, "text")], ids=["uneven", "device_ids"])
def test_programs_of_shardcs_ir_equal_the_numpy_executor(text, route):
    # Uneven dims are padded outside the manual computation (the boundary is global): that
    # program is compiled as jax.jit compiles it. The device-ids program (a mesh of devices
    # [3, 1, 0, 2], a collective_permute, gathers over both axes) runs as replicas.
    result = shardc.compile(shardc.parse(text))
    inputs = [rng.standard_normal(a.type.shape).astype(np.float32)
              for a in result.module.main.args]
    program = JaxArrayProgram(result.spmd)
    executable = program.compile()
    assert program.route == route
    outs = executable(*program.place(inputs))
    for out, want in zip(outs, result.run(inputs, backend="numpy")):
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_host_callbacks_compile_partitioned(mesh):
    seen = []

    def f(x):
        jax.debug.callback(lambda v: seen.append(v.shape), x)
        return x * 2

    jitted = shardc.jit(f, mesh=mesh, in_shardings=P("dp"))
    np.testing.assert_allclose(np.asarray(jitted(X)), X * 2)
    assert not _program(jitted).replicas and seen


ZOO = [(name, preset) for name, spec in MODELS.items() for preset in spec.presets]


@pytest.mark.parametrize(("name", "preset"), ZOO, ids=["-".join(c) for c in ZOO])
def test_zoo_training_steps_printed_by_shardc_equal_the_trace_and_numpy(name, preset,
                                                                        monkeypatch):
    # Every zoo model and preset as an SGD step: combined all-reduces, all-gathers and
    # reduce-scatters (packed as the trace packs them), all_slice, all_to_all, axis_index.
    result = shardc.compile(MODELS[name].build(preset, train="sgd"))
    inputs = _inputs(result.module)
    printed = JaxArrayProgram(result.spmd)
    got = printed.compile()(*printed.place(inputs))
    assert printed.route == "text"
    monkeypatch.setattr(jax_arrays, "replica_text", lambda program: None)
    traced = JaxArrayProgram(result.spmd)
    want = traced.compile()(*traced.place(inputs))
    assert traced.route == "trace"
    for g, w, n in zip(got, want, result.run(inputs, backend="numpy"), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)
        scale = max(float(np.max(np.abs(n))), 1.0) if n.size else 1.0
        np.testing.assert_allclose(np.asarray(g), n, rtol=0, atol=1e-5 * scale)


def test_the_text_holds_every_collective_in_replica_form(mesh):
    from shardc.executors.replica_text import replica_text

    result = shardc.compile(MODELS["transformer"].build("fsdp", train="sgd"))
    text = replica_text(JaxArrayProgram(result.spmd))
    assert "mhlo.num_replicas = 8" in text and "sdy." not in text
    assert "channel_handle" not in text and "use_global_device_ids" not in text
    # one combined all-gather of the weights, packed into rows [8, total]
    assert re.search(r'"stablehlo.all_gather"\(%\w+\) <\{all_gather_dim = 0 : i64, '
                     r"replica_groups = dense<\[\[0, 1, 2, 3, 4, 5, 6, 7\]\]>", text)


@pytest.mark.parametrize("broken", ["unreadable", "rejected", "other signature"])
def test_a_printing_mlir_or_xla_refuses_falls_back_to_the_trace(mesh, broken, monkeypatch):
    # A defect in shardc's printing costs the trace's time, not the call: text MLIR cannot
    # read, a module XLA will not compile, or one that does not take the program's arguments
    # (an executable called with others crashes).
    from jax._src import compiler

    text = ('module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 8 : '
            'i32} {\n  func.func public @main() {\n    return\n  }\n}\n')
    monkeypatch.setattr(jax_arrays, "replica_text",
                        lambda program: "module {" if broken == "unreadable" else text)
    if broken == "rejected":
        xla, calls = compiler.backend_compile_and_load, []

        def refuse_the_first(*args):
            calls.append(1)
            if len(calls) == 1:
                raise jax.errors.JaxRuntimeError("INTERNAL: refused")
            return xla(*args)

        monkeypatch.setattr(compiler, "backend_compile_and_load", refuse_the_first)
    specs = (P("dp"), P(None, "tp"), P("tp"))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=specs)
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), np.asarray(mlp(X, W1, W2)),
                               rtol=1e-5, atol=1e-6)
    assert _program(f).route == "trace"
