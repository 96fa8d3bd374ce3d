"""shardc.jit: JAX functions compiled by shardc and run on 8 (simulated) devices, checked
against jax.jit; the stages (lower/compile), the cache, pytrees and static arguments, the
shardings handed back to jax.jit, misuse errors, and the global-array executor under it
(uneven dims, unreduced arguments and results, permuted device order)."""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AbstractMesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.executors.jax_arrays import JaxArrayProgram  # noqa: E402
from tests.spmd.test_spmd_exec import DEVICE_IDS, UNEVEN_COLLECTIVES, UNREDUCED_MAX  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)

MLP_SHARDINGS = (P("dp"), P(None, "tp"), P("tp"))
MLP_TEXT = """mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>,
           %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = dot_general %0, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %1
}
"""


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"))  # JAX's default: Explicit axes


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(s).astype(np.float32)
                 for s in [(16, 64), (64, 256), (256, 64)])


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol * 10)


# ----- running --------------------------------------------------------------------------------


def test_mlp_equals_jax_jit_with_the_decided_sharding(mesh, data):
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS)
    y = f(*data)
    close(y, jax.jit(mlp)(*data))
    assert isinstance(y, jax.Array)
    assert y.sharding == NamedSharding(mesh, P("dp", None))  # the user's mesh, shardc's spec
    assert [c["kind"] for c in f.lower(*data).report["collectives"]] == ["all_reduce"]


def test_same_signature_reuses_the_program(mesh, data):
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS)
    f(*data)
    f(*data)
    placed = jax.device_put(data[0], NamedSharding(mesh, P("dp")))  # the same sharding
    f(placed, *data[1:])
    assert f.cache_size() == 1
    f(data[0][:8], *data[1:])  # a new shape: a new program
    assert f.cache_size() == 2


def test_a_committed_array_elsewhere_is_moved(mesh, data):
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS)
    w1 = jax.device_put(data[1], NamedSharding(mesh, P("tp")))  # not P(None, "tp")
    close(f(data[0], w1, data[2]), jax.jit(mlp)(*data))


def test_unspecified_arguments_take_shardcs_decision(mesh, data):
    f = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), None, None))
    lowered = f.lower(*data)
    assert lowered.in_shardings[0].spec == P("dp", None)
    assert all(isinstance(s, NamedSharding) for s in lowered.in_shardings)
    close(f(*data), jax.jit(mlp)(*data))
    # A committed argument's own sharding is its annotation.
    w1 = jax.device_put(data[1], NamedSharding(mesh, P(None, "tp")))
    assert f.lower(data[0], w1, data[2]).in_shardings[1].spec == P(None, "tp")


def test_pytrees_kwargs_and_prefix_shardings(mesh):
    def model(params, x, *, scale):
        h = jnp.tanh(x @ params["w"] + params["b"])
        return {"y": h * scale, "mean": h.mean(axis=0)}

    rng = np.random.default_rng(1)
    params = {"w": rng.standard_normal((32, 64), dtype=np.float32),
              "b": rng.standard_normal((64,), dtype=np.float32)}
    x = rng.standard_normal((16, 32), dtype=np.float32)
    scale = np.float32(0.5)
    f = shardc.jit(model, mesh=mesh, in_shardings=({"w": P(None, "tp"), "b": P("tp")}, P("dp")),
                   out_shardings={"y": P("dp", "tp"), "mean": P()})
    out = f(params, x, scale=scale)
    want = jax.jit(model)(params, x, scale=scale)
    assert set(out) == {"y", "mean"}
    close(out["y"], want["y"])
    close(out["mean"], want["mean"])
    assert out["y"].sharding.spec == P("dp", "tp")
    lowered = f.lower(params, x, scale=scale)
    assert lowered.in_shardings[0]["w"].spec == P(None, "tp")
    assert lowered.out_shardings["mean"].is_equivalent_to(NamedSharding(mesh, P()), 1)


def test_static_arguments(mesh):
    def power(x, n):
        for _ in range(n):
            x = x * x
        return x

    f = shardc.jit(power, mesh=mesh, in_shardings=P("dp"), static_argnums=1)
    x = np.linspace(0.5, 1.0, 32, dtype=np.float32).reshape(8, 4)
    close(f(x, 2), x ** 4)
    close(f(x, 3), x ** 8)
    assert f.cache_size() == 2
    with pytest.raises(shardc.ShardcError, match="hashable"):
        f(x, [1, 2])


def test_numpy_backend_on_an_abstract_mesh(data):
    mesh = AbstractMesh((2, 4), ("dp", "tp"))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS, backend="numpy")
    y = f(*data)
    assert isinstance(y, np.ndarray)
    close(y, jax.jit(mlp)(*data))
    assert f.lower(*data).out_shardings.spec == P("dp", None)


def test_compile_options_pass_through(mesh, data):
    options = shardc.CompileOptions(strategy="basic")
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS, options=options)
    close(f(*data), jax.jit(mlp)(*data))


@pytest.mark.parametrize("verify_each, per_pass, at_end", [(None, 0, 2), (True, 1, 0)])
def test_jit_verifies_the_ir_once_unless_asked_after_every_pass(mesh, data, monkeypatch,
                                                                verify_each, per_pass, at_end):
    """`shardc.jit` verifies the pipeline's two results (global and per-device) once;
    `verify_each=True` verifies after every pass instead (compile's and the command's default)."""
    import shardc.passes.manager as manager
    import shardc.pipeline as pipeline

    counts = {"pass": 0, "end": 0}

    def counting(key, verify):
        def wrapped(module, *what):
            counts[key] += 1
            return verify(module, *what)
        return wrapped

    # (PassManager's checks look up manager.verify_after; pipeline.py's its own import of it)
    monkeypatch.setattr(manager, "verify_after", counting("pass", manager.verify_after))
    monkeypatch.setattr(pipeline, "verify_after", counting("end", pipeline.verify_after))
    options = shardc.CompileOptions(verify_each=verify_each)
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS, options=options)
    close(f(*data), jax.jit(mlp)(*data))
    passes = len(shardc.CompileOptions().full_pipeline().split(","))
    assert counts["end"] == at_end
    assert counts["pass"] >= per_pass * passes
    assert (counts["pass"] == 0) == (per_pass == 0)
    assert shardc.pipeline.CompileOptions().verifies_each  # compile's default: every pass


def test_decorator_form(mesh, data):
    @shardc.jit(mesh=mesh, in_shardings=MLP_SHARDINGS)
    def g(x, w1, w2):
        return mlp(x, w1, w2)

    close(g(*data), jax.jit(mlp)(*data))
    assert g.__name__ == "g"


# ----- stages -----------------------------------------------------------------------------------


def test_lowered_and_compiled(mesh, data, tmp_path):
    lowered = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS).lower(*data)
    text = lowered.as_text()
    assert re.search(r"all_reduce %\w+ \{reduction_axes = \[\"tp\"\]\}", text), text
    assert "spmd.all_reduce" in lowered.as_text("spmd")
    assert "sdy.sharding" in lowered.as_text("sdy")
    assert "all_reduce" in lowered.cost_text()
    page = tmp_path / "mlp.html"
    explanation = lowered.explain(html=page)
    assert "dot_general" in explanation and page.read_text().startswith("<!DOCTYPE html>")
    compiled = lowered.compile()
    assert set(compiled.timings) >= {"jax_lower_import", "shardc_compile", "xla_compile"}
    close(compiled(*data), jax.jit(mlp)(*data))
    with pytest.raises(shardc.ShardcError, match="compiled for"):
        compiled(data[0][:8], *data[1:])


def test_shardings_hand_back_to_jax_jit(mesh, data):
    lowered = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), None, None)).lower(*data)
    g = jax.jit(mlp, in_shardings=lowered.in_shardings, out_shardings=lowered.out_shardings)
    y = g(*data)
    assert y.sharding == lowered.out_shardings
    close(y, jax.jit(mlp)(*data))


# ----- misuse ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, call, message", [
    ({"in_shardings": MLP_SHARDINGS}, "data", "needs a mesh"),
    ({"mesh": "dp=2", "in_shardings": MLP_SHARDINGS}, None, "must be a jax.sharding.Mesh"),
    ({"mesh": "MESH", "backend": "torch"}, None, "unknown backend"),
    ({"mesh": AbstractMesh((2, 4), ("dp", "tp"))}, None, "no devices"),
    ({"mesh": "MESH", "in_shardings": (P("dp"), P(None, "tp"))}, "data", "2 entries"),
    ({"mesh": "MESH", "in_shardings": (P("xx"), None, None)}, "data", "does not have"),
    ({"mesh": "MESH", "in_shardings": (P(None, None, "dp"), None, None)}, "data", "rank 2"),
    ({"mesh": "MESH", "in_shardings": (P("tp"), None, None)}, "odd", "does not split evenly"),
    ({"mesh": "MESH"}, "string", "not an array"),
    ({"mesh": "MESH", "in_shardings": (P("dp", "dp"), None, None)}, None, "more than once"),
    ({"mesh": "MESH", "out_shardings": P("zz")}, None, "does not have"),
    ({"mesh": "MESH", "static_argnums": 5}, None, "out of range"),
    ({"mesh": "MESH", "static_argnames": "zz"}, None, "not parameters"),
    ({"mesh": "MESH", "memory_budget": 4096}, None, "pass auto_shard=True"),
    ({"mesh": "MESH", "auto_shard": True, "memory_budget": "4KiB"}, None, "number of bytes"),
    ({"mesh": "MESH", "auto_shard_effort": 100}, None, "auto_shard=True"),
    ({"mesh": "MESH", "auto_shard": True, "auto_shard_effort": 0}, None, "solver ticks"),
])
def test_misuse_is_a_shardc_error(mesh, data, kwargs, call, message):
    kwargs = {k: mesh if v == "MESH" else v for k, v in kwargs.items()}
    with pytest.raises(shardc.ShardcError, match=message):
        f = shardc.jit(mlp, **kwargs)
        if call == "data":
            f(*data)
        elif call == "odd":
            f(np.ones((6, 64), np.float32), *data[1:])
        elif call == "string":
            f("x", *data[1:])


def test_named_sharding_on_another_mesh(mesh):
    other = jax.make_mesh((4, 2), ("dp", "tp"))
    with pytest.raises(shardc.ShardcError, match="not on the mesh given"):
        shardc.jit(mlp, mesh=mesh, in_shardings=(NamedSharding(other, P("dp")), None, None))


def test_the_users_own_error_is_unchanged(mesh, data):
    def broken(x, w1, w2):
        return x @ w2  # 64 vs 256: JAX's own shape error

    with pytest.raises(TypeError):
        shardc.jit(broken, mesh=mesh)(*data)


def test_no_sharding_at_all_runs_replicated_on_the_mesh(mesh, data):
    # JAX prints no mesh when nothing names one: the program still runs on the jit's mesh
    # (it once ran on one device, which jax.jit then refused to mix with the mesh's).
    f = shardc.jit(mlp, mesh=mesh)
    y = f(*data)
    close(y, jax.jit(mlp)(*data))
    assert y.sharding == NamedSharding(mesh, P(None, None))
    assert float(shardc.jit(lambda x: 3.0, mesh=mesh)(data[0])) == 3.0
    assert np.asarray(shardc.jit(lambda: jnp.ones(4), mesh=mesh)()).tolist() == [1.0] * 4


def test_traced_under_the_mesh_and_callable_under_a_users_mesh(mesh, data):
    # `with_sharding_constraint` with a bare PartitionSpec needs a context mesh: shardc.jit
    # traces under its own; and a call under the user's `jax.set_mesh` runs as well.
    def constrained(x):
        return jax.lax.with_sharding_constraint(x * 2, P(None, "tp"))

    f = shardc.jit(constrained, mesh=mesh, in_shardings=P("dp"))
    with jax.set_mesh(mesh):
        y = f(data[0])
    assert y.sharding.spec == P(None, "tp")
    close(y, data[0] * 2)
    with jax.set_mesh(mesh):
        close(shardc.run(shardc.compile(shardc.parse(MLP_TEXT)), [data[0], data[1], data[2]],
                         backend="jax")[0], data[0] @ data[1] @ data[2])


def test_compiler_warnings_reach_the_caller(mesh, data):
    # top_k has no sharding rule: it computes on replicated operands, which the user must hear.
    f = shardc.jit(lambda x: jax.lax.top_k(x, 3)[0], mesh=mesh, in_shardings=P("dp", "tp"))
    with pytest.warns(shardc.ShardcWarning, match="'top_k' has no sharding rule"):
        close(f(data[0]), jax.lax.top_k(data[0], 3)[0])


# ----- the global-array executor ------------------------------------------------------------------


@pytest.mark.parametrize("text", [UNEVEN_COLLECTIVES, UNREDUCED_MAX, DEVICE_IDS],
                         ids=["uneven", "unreduced", "device_ids"])
def test_global_array_program_equals_the_host_executor(text):
    result = shardc.compile(shardc.parse(text))
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(a.type.shape).astype(np.float32)
              for a in result.module.main.args]
    program = JaxArrayProgram(result.spmd)
    outs = program(*inputs)
    want = result.run(inputs, backend="numpy")
    for out, w, sharding in zip(outs, want, program.out_shardings):
        assert out.sharding == sharding and out.shape == w.shape
        close(out, w, 1e-5)


def test_uneven_dims_are_replicated_at_the_boundary():
    program = JaxArrayProgram(shardc.compile(shardc.parse(UNEVEN_COLLECTIVES)).spmd)
    assert program.in_shardings[0].spec == P(None, None)  # 10 rows do not split over 4
    assert program.out_shardings[1].spec == P(None, None)  # 6 columns neither


def test_accelerators_run_the_program_when_present(data):
    gpus = [d for d in jax.devices() if d.platform != "cpu"]
    if not gpus:
        pytest.skip("no accelerator: jax.devices() are CPUs")
    n = max(k for k in (1, 2, 4, 8) if k <= len(gpus))  # divides the MLP's dims
    mesh = jax.make_mesh((1, n), ("dp", "tp"), devices=gpus[:n])
    f = shardc.jit(mlp, mesh=mesh, in_shardings=MLP_SHARDINGS)
    y = f(*data)
    assert {d.platform for d in y.sharding.device_set} == {gpus[0].platform}
    close(y, jax.jit(mlp)(*data))


def test_auto_shard_chooses_what_nobody_gave(mesh, data):
    # No sharding given: auto-shard decides, within 36 KiB per device (Megatron on "tp").
    f = shardc.jit(mlp, mesh=mesh, auto_shard=True, memory_budget=36 * 1024)
    close(f(*data), jax.jit(mlp)(*data))
    report = f.lower(*data).report
    assert report["auto_shard"]["fits_budget"] and report["total_comm_bytes"] == 2048
    g = shardc.jit(mlp, mesh=mesh, auto_shard=True, memory_budget=36 * 1024,
                   auto_shard_effort=50)
    assert g.lower(*data).report["auto_shard"]["effort"] == 50


def test_auto_shard_chooses_for_committed_arrays(mesh, data):
    # Arrays made under a mesh are committed, replicated on it: with auto_shard that is where
    # they are, not an annotation (it once pinned them, and 36 KiB had no plan). The plan is
    # the one numpy arguments get, the call moves them, and both are served by one program.
    placed = [jax.device_put(a, NamedSharding(mesh, P())) for a in data]
    f = shardc.jit(mlp, mesh=mesh, auto_shard=True, memory_budget=36 * 1024)
    lowered = f.lower(*placed)
    assert lowered.in_shardings[1].spec == P(None, "tp")
    assert lowered.in_shardings[2].spec == P("tp", None)
    assert lowered.report["auto_shard"]["fits_budget"]
    close(f(*placed), jax.jit(mlp)(*data))
    close(f(*data), jax.jit(mlp)(*data))
    assert f.cache_size() == 1
    # in_shardings still pin: w1 given replicated stays so
    g = shardc.jit(mlp, mesh=mesh, in_shardings=(None, P(), None), auto_shard=True)
    assert g.lower(*placed).in_shardings[1].spec == P(None, None)


# ----- training steps whose gradients JAX outlines --------------------------------------------


def embedding_adam_step(table, mu, count, ids, dy):
    """An embedding's gradient (`jnp.take`'s transpose: a scatter-add of the batch's rows, in a
    private function JAX outlines) and an Adam-style update with a step count (a scalar JAX
    puts on its axis-less `@empty_mesh`, so the module has two meshes)."""
    grad = jax.grad(lambda t: jnp.sum(jnp.take(t, ids, axis=0) * dy))(table)
    count = count + 1
    mu = 0.9 * mu + 0.1 * grad
    return table - 0.01 * mu / (1 - 0.9 ** count.astype(jnp.float32)), mu, count


@pytest.mark.parametrize("backend", ["jax", "numpy"])
def test_embedding_gradient_left_to_propagation_equals_jax_jit(backend):
    # The table and the optimizer state unannotated, the batch on "dp": each device's
    # scatter-add holds a partial sum of the gradient, reduced before the callee returns (it
    # once returned unreduced, and every device updated the table with its half-batch's sum).
    auto = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((16, 8)).astype(np.float32), np.zeros((16, 8), np.float32),
            np.int32(0), rng.integers(0, 4, (4, 6)).astype(np.int32),
            rng.standard_normal((4, 6, 8)).astype(np.float32))
    want = jax.jit(embedding_adam_step)(*args)
    f = shardc.jit(embedding_adam_step, mesh=auto, in_shardings=(None, None, None, P("dp"),
                                                                   P("dp")), backend=backend)
    for got, w in zip(f(*args), want, strict=True):
        close(got, w, tol=1e-6)


def test_the_flax_nnx_training_step_equals_jax_jit():
    # benchmarks/jit.py's Flax NNX step (optax.adamw, parameters left to propagation), where the
    # embedding's gradient, Adam state and parameter were wrong by nearly their own size.
    pytest.importorskip("flax", reason="the Flax NNX step needs flax: pip install flax optax")
    pytest.importorskip("optax", reason="the Flax NNX step needs optax: pip install flax optax")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "jit_programs.py"
    spec = importlib.util.spec_from_file_location("jit_programs", path)
    assert spec is not None and spec.loader is not None
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    step, args, specs = programs.nnx()
    auto = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    named = jax.tree_util.tree_map(lambda s: NamedSharding(auto, s), specs,
                                   is_leaf=lambda s: isinstance(s, P))
    want = jax.tree_util.tree_leaves(jax.jit(step, in_shardings=named)(*args))
    got = jax.tree_util.tree_leaves(shardc.jit(step, mesh=auto, in_shardings=specs)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        close(g, w, tol=1e-6)


@pytest.mark.parametrize("fn", [jnp.square, jax.lax.erf_inv, jax.lax.erf, jnp.tanh],
                         ids=["square", "erf_inv", "erf", "tanh"])
def test_chlo_ops_take_the_sharding_xla_gives_them(fn):
    """JAX prints these as chlo ops, which jaxlib's Shardy pass has no rule for; XLA legalizes
    them first (square and erf_inv become element-wise ops, erf stays without a rule), so
    jax.jit shards square's and erf_inv's result like its operand and replicates erf's.
    shardc.jit must decide the same (passes/propagation/legalize_chlo.py)."""
    auto = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    x = np.linspace(-0.9, 0.9, 64 * 4, dtype=np.float32).reshape(64, 4)
    sharding = NamedSharding(auto, P("x"))
    want = jax.jit(fn, in_shardings=sharding).lower(x).compile().output_shardings
    f = shardc.jit(fn, mesh=auto, in_shardings=sharding)
    got = f(x)
    close(got, jax.jit(fn)(x))
    assert got.sharding.is_equivalent_to(want, 2), (got.sharding, want)
    expected = P() if fn is jax.lax.erf else P("x")
    assert want.is_equivalent_to(NamedSharding(auto, expected), 2)
