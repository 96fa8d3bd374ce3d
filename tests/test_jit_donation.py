"""`donate_argnums`/`donate_argnames` as in `jax.jit` (XLA aliases donated inputs to outputs,
the donated arrays are deleted, a moved donated argument leaves no copy behind, static and
donated arguments may not overlap, the numpy backend warns), and training loops that compile
once (a loop over unannotated arguments passes the program's committed results back)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax.sharding import AbstractMesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"))


def step(params, opt, x):
    loss = lambda p: jax.numpy.mean(jax.numpy.tanh(x @ p["w"]) ** 2)  # noqa: E731
    g = jax.grad(loss)(params)
    opt = jax.tree_util.tree_map(lambda m, gi: 0.9 * m + gi, opt, g)
    return jax.tree_util.tree_map(lambda p, m: p - 0.1 * m, params, opt), opt


rng = np.random.default_rng(0)
W = rng.standard_normal((64, 256)).astype(np.float32) * 0.1
X = rng.standard_normal((16, 64)).astype(np.float32)


def placed(mesh, value, spec):
    return jax.device_put(value, NamedSharding(mesh, spec))


def test_a_donated_loop_aliases_deletes_and_compiles_once(mesh):
    f = shardc.jit(step, mesh=mesh, in_shardings=(P(None, "tp"), P(None, "tp"), P("dp")),
                   donate_argnums=(0, 1))
    params = {"w": placed(mesh, W, P(None, "tp"))}
    opt = {"w": placed(mesh, np.zeros_like(W), P(None, "tp"))}
    # XLA writes the new parameters and optimizer state into the donated buffers.
    hlo = f.lower(params, opt, X).compile().executable.as_text()
    aliases = re.search(r"input_output_alias=\{ (.*?) \}", hlo).group(1)
    assert "{0}: (0, {}, may-alias)" in aliases and "{1}: (1, {}, may-alias)" in aliases
    want = ({"w": W}, {"w": np.zeros_like(W)})
    x = placed(mesh, X, P("dp"))
    first = (params, opt)
    for _ in range(5):
        params, opt = f(params, opt, x)
        want = jax.jit(step)(*want, X)
    assert first[0]["w"].is_deleted() and first[1]["w"].is_deleted()
    assert not x.is_deleted()  # not donated
    np.testing.assert_allclose(np.asarray(params["w"]), np.asarray(want[0]["w"]), rtol=1e-5,
                               atol=1e-6)
    assert f.cache_size() == 1


def test_donate_argnames_and_keywords(mesh):
    # By name; and by number for an argument passed by keyword (jax.jit infers the name).
    for kwargs in ({"donate_argnames": "opt"}, {"donate_argnums": 1}):
        f = shardc.jit(step, mesh=mesh, **kwargs)
        params = {"w": placed(mesh, W, P(None, "tp"))}
        opt = {"w": placed(mesh, np.zeros_like(W), P(None, "tp"))}
        f(params, opt=opt, x=X)
        assert opt["w"].is_deleted() and not params["w"].is_deleted(), kwargs


def test_a_moved_donated_argument_leaves_no_copy(mesh):
    f = shardc.jit(step, mesh=mesh, in_shardings=(P(None, "tp"), P(None, "tp"), None),
                   donate_argnums=0)
    params = {"w": placed(mesh, W, P("dp"))}  # not where the program wants it: moved
    opt = {"w": placed(mesh, np.zeros_like(W), P(None, "tp"))}
    new, _ = f(params, opt, X)
    assert params["w"].is_deleted() and not opt["w"].is_deleted()
    want = jax.jit(step)({"w": W}, {"w": np.zeros_like(W)}, X)[0]
    np.testing.assert_allclose(np.asarray(new["w"]), np.asarray(want["w"]), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    ({"donate_argnums": 2, "static_argnums": 2}, "arguments [2] are in both static_argnums and "
     "donate_argnums"),
    ({"donate_argnames": "x", "static_argnames": "x"}, "arguments ['x'] are in both "
     "static_argnames and donate_argnames"),
    ({"donate_argnums": 2, "static_argnames": "x"}, "arguments ['x'] are in both "
     "static_argnames and donate_argnames"),
    ({"donate_argnums": 3}, "donate_argnums [3] out of range: it takes 3 positional arguments"),
    ({"donate_argnames": "momentum"}, "donate_argnames ['momentum'] are not parameters of it"),
])
def test_donation_misuse(mesh, kwargs, message):
    with pytest.raises(shardc.ShardcError, match=re.escape(message)):
        shardc.jit(step, mesh=mesh, **kwargs)


def test_the_numpy_backend_warns_and_runs():
    with pytest.warns(shardc.ShardcWarning, match="donation has no effect on the numpy backend"):
        f = shardc.jit(step, mesh=AbstractMesh((2, 4), ("dp", "tp")), backend="numpy",
                       donate_argnums=(0, 1))
    params, opt = {"w": W}, {"w": np.zeros_like(W)}
    new, _ = f(params, opt, X)
    want = jax.jit(step)(params, opt, X)[0]
    np.testing.assert_allclose(new["w"], np.asarray(want["w"]), rtol=1e-5, atol=1e-6)


def test_an_unannotated_loop_compiles_once(mesh):
    # The first call's arguments are numpy arrays; the next calls pass its committed results,
    # in the shardings the program decided: the same program, as jax.jit compiles once.
    f = shardc.jit(step, mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "donated buffers were not usable" either
        state = ({"w": W}, {"w": np.zeros_like(W)})
        for _ in range(5):
            state = f(*state, X)
    assert f.cache_size() == 1
    assert isinstance(state[0]["w"], jax.Array) and state[0]["w"].committed
    # and with the batch sharded over dp: propagation then shards the weights' gradient path
    g = shardc.jit(step, mesh=mesh, in_shardings=(None, None, P("dp")))
    state = ({"w": W}, {"w": np.zeros_like(W)})
    for _ in range(5):
        state = g(*state, X)
    assert g.cache_size() == 1


def test_the_persistent_cache_keeps_donated_and_kept_programs_apart(mesh, tmp_path):
    # The same program text with and without donation: two XLA executables (the aliases are
    # part of one), so a cached donating program never deletes a caller's arrays unasked.
    options = shardc.CompileOptions(cache_dir=str(tmp_path))
    texts = []
    for donate in ((0, 1), ()):
        f = shardc.jit(step, mesh=mesh, options=options, donate_argnums=donate,
                       in_shardings=(P(None, "tp"), P(None, "tp"), P("dp")))
        params = {"w": placed(mesh, W, P(None, "tp"))}
        f(params, {"w": placed(mesh, np.zeros_like(W), P(None, "tp"))}, X)
        assert params["w"].is_deleted() == bool(donate)
        (compiled,) = f.programs()
        texts.append(compiled.executable.as_text())
    assert "input_output_alias" in texts[0] and "input_output_alias" not in texts[1]
