"""0-d arguments (a learning rate, optax's step `count`) through `shardc.jit`: JAX lowers them on
its axis-less `@empty_mesh`, which is no mesh to run on. With no sharding at all, with
`auto_shard`, and with another argument sharded, on both backends, the program runs on the jit's
mesh and computes what `jax.jit` computes; `shardc compile --auto-shard` on such JAX text shards
it too."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax.sharding import AbstractMesh, AxisType  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.cli import main  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)


def scaled(x, w, c):
    return (x @ w) * c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 64)).astype(np.float32)
    return x, w, np.float32(0.5)


def mesh_for(backend: str):
    if backend == "numpy":
        return AbstractMesh((2, 4), ("dp", "tp"))
    return jax.make_mesh((2, 4), ("dp", "tp"))


CASES = {
    "no shardings": {},
    "auto_shard": {"auto_shard": True},
    "x on dp, auto_shard": {"in_shardings": (P("dp"), None, None), "auto_shard": True},
    "x on dp": {"in_shardings": (P("dp"), None, None)},
}


@pytest.mark.parametrize("backend", ["jax", "numpy"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_scalar_argument_runs_on_the_jits_mesh(data, backend, case):
    kwargs = CASES[case]
    mesh = mesh_for(backend)
    f = shardc.jit(scaled, mesh=mesh, backend=backend, **kwargs)
    y = f(*data)
    np.testing.assert_allclose(np.asarray(y), np.asarray(jax.jit(scaled)(*data)),
                               rtol=1e-5, atol=1e-5)
    lowered = f.lower(*data)
    # The program's mesh is the jit's (JAX's @empty_mesh stays, for the scalar, beside it).
    assert lowered.report["mesh"] == {"dp": 2, "tp": 4}
    assert lowered.spmd.main.attributes["mesh"].name != "empty_mesh"
    if backend == "jax":
        assert y.sharding.mesh.shape == {"dp": 2, "tp": 4}
        assert lowered.compile().executable is not None
    if kwargs.get("auto_shard"):
        # auto-shard had the whole mesh to choose from: the weight is sharded, not left
        # replicated as when it took @empty_mesh for the module's only mesh.
        w_sharding = lowered.module.main.args[1].mapping
        assert w_sharding.mesh.axes and any(d.axes for d in w_sharding.dims), w_sharding
    if kwargs.get("in_shardings"):
        assert lowered.module.main.args[0].mapping.dims[0].axes[0].name == "dp"


def test_optax_style_count_and_learning_rate(data):
    # An update with a step count (int32 scalar) and a learning rate (a Python float).
    def step(w, g, count, lr):
        return w - lr * g / (1.0 + count.astype(np.float32)), count + 1

    mesh = mesh_for("jax")
    f = shardc.jit(step, mesh=mesh, in_shardings=(P(None, "tp"), P(None, "tp"), None, None))
    w, g = data[1], data[1] * 0.1
    count = np.int32(3)
    got_w, got_count = f(w, g, count, 0.5)
    want_w, want_count = jax.jit(step)(w, g, count, 0.5)
    np.testing.assert_allclose(np.asarray(got_w), np.asarray(want_w), rtol=1e-6)
    assert int(got_count) == int(want_count) == 4 and got_count.dtype == np.int32
    assert got_w.sharding.spec == P(None, "tp")


def jax_text(tmp_path, in_shardings) -> str:
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)
    x, w = np.ones((16, 32), np.float32), np.ones((32, 64), np.float32)
    with jax.set_mesh(mesh):
        text = jax.jit(scaled, in_shardings=in_shardings).lower(x, w, np.float32(2)).as_text()
    assert "sdy.mesh @empty_mesh = <[]>" in text  # the case this file is about
    path = tmp_path / "scaled.mlir"
    path.write_text(text)
    return str(path)


def test_cli_auto_shard_on_jax_text_with_a_scalar(tmp_path, capsys, monkeypatch):
    # x on dp: the module declares @mesh and @empty_mesh; auto-shard shards over @mesh.
    path = jax_text(tmp_path, (P("dp"), None, None))
    assert main(["compile", path, "--auto-shard", "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    values = {v["name"]: v["sharding"] for v in report["values"]}
    assert values["%arg0"] == '<@mesh, [{"dp"}, {}]>'
    assert values["%arg1"] == '<@mesh, [{}, {"tp"}]>'
    # No sharding at all: only @empty_mesh, so auto-shard needs --mesh, which then adds one.
    path = jax_text(tmp_path, None)
    assert main(["compile", path, "--auto-shard"]) == 1
    err = capsys.readouterr().err
    assert "scaled.mlir:3:3: error: in pass 'auto-shard': auto-shard needs exactly one mesh " \
           "with axes and the module declares no mesh with axes" in err
    assert main(["compile", path, "--auto-shard", "--mesh", "dp=2,tp=4", "--report",
                 "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["meshes"] == {"empty_mesh": {}, "mesh": {"dp": 2, "tp": 4}}
    assert any("tp" in v["sharding"] for v in report["values"])
