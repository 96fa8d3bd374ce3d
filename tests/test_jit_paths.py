"""Every `shardc.jit` misuse message names the leaf by its pytree path and full shape, JAX style
(`params['layers'][3]['attn']['kernel'] (float32[8,16])`), and where its sharding was given
(`in_shardings[0]['layers'][3]['attn']['kernel']`), on a 108-leaf parameter tree. Paths cost
nothing on a cache hit."""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AbstractMesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
import shardc.jitted  # noqa: E402

MESH = AbstractMesh((2, 4), ("dp", "tp"))
LAYERS = 15


def make_params(**shapes):
    """15 layers x 7 leaves + embed, final norm, head: 108 leaves."""
    def a(*shape):
        return np.ones(shape, np.float32)

    layers = [{"attn": {"kernel": a(8, 16), "bias": a(16)},
               "mlp": {"w1": a(8, 32), "b1": a(32), "w2": a(32, 8), "b2": a(8)},
               "norm": {"scale": a(8)}} for _ in range(LAYERS)]
    for name, shape in shapes.items():
        group = "attn" if name in ("kernel", "bias") else "mlp"
        layers[3][group][name] = a(*shape)
    return {"embed": a(32, 8), "layers": layers, "final_norm": a(8), "head": a(8, 32)}


def make_specs(**over):
    specs = {"embed": P(None, "tp"), "final_norm": None, "head": P(None, "tp"),
             "layers": [{"attn": {"kernel": P(None, "tp"), "bias": P("tp")},
                         "mlp": {"w1": P(None, "tp"), "b1": P("tp"), "w2": P("tp"), "b2": None},
                         "norm": {"scale": None}} for _ in range(LAYERS)]}
    for name, spec in over.items():
        group = "attn" if name in ("kernel", "bias") else "mlp"
        if spec == "missing":
            del specs["layers"][3][group][name]
        else:
            specs["layers"][3][group][name] = spec
    return specs


def step(params, x):
    total = x
    for leaf in jax.tree_util.tree_leaves(params):
        total = total + jnp.sum(leaf)
    return total


X = np.ones((16, 8), np.float32)


def test_the_tree_has_108_leaves():
    assert len(jax.tree_util.tree_leaves(make_params())) == 108
    assert len(jax.tree_util.tree_leaves(make_specs())) == 15 * 5 + 2  # None entries: no leaf


CASES = {
    "wrong axis": (
        {"kernel": P(None, "xx")}, {}, "jit",
        "step: in_shardings[0]['layers'][3]['attn']['kernel']: sharding P(None, 'xx') names "
        "axes ['xx'] that the mesh does not have (axes: ['dp', 'tp'])"),
    "axis twice": (
        {"w1": P("tp", "tp")}, {}, "jit",
        "step: in_shardings[0]['layers'][3]['mlp']['w1']: sharding P('tp', 'tp') names axes "
        "['tp'] more than once; a mesh axis shards at most one dim"),
    "too many dims": (
        {"bias": P("tp", None)}, {}, "call",
        "step: in_shardings[0]['layers'][3]['attn']['bias'] is P('tp', None), which names 2 "
        "dims, but params['layers'][3]['attn']['bias'] (float32[16]) has rank 1"),
    "dim not divided": (
        {}, {"kernel": (8, 18)}, "call",
        "step: in_shardings[0]['layers'][3]['attn']['kernel'] is P(None, 'tp'), but dim 1 of "
        "params['layers'][3]['attn']['kernel'] (float32[8,18]) has size 18, which does not "
        "split evenly over ('tp',) (4 devices), as JAX requires of an argument"),
    "missing key": (
        {"b1": "missing"}, {}, "call",
        "step: in_shardings[0] does not match the structure of params: "
        "params['layers'][3]['mlp']['b1'] (float32[32]) has no entry in in_shardings[0]"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_misuse_names_the_path_and_shape(case):
    spec_over, shape_over, when, message = CASES[case]
    in_shardings = (make_specs(**spec_over), P("dp"))
    with pytest.raises(shardc.ShardcError) as info:
        f = shardc.jit(step, mesh=MESH, backend="numpy", in_shardings=in_shardings)
        assert when == "call", "raised when jit() was called"
        f.lower(make_params(**shape_over), X)
    assert info.value.message == message


def test_a_prefix_entry_names_itself_and_the_leaf():
    # One sharding for all of `params` (a prefix): the leaf it does not fit is named.
    f = shardc.jit(step, mesh=MESH, backend="numpy", in_shardings=(P(None, "tp"), None))
    with pytest.raises(shardc.ShardcError) as info:
        f.lower(make_params(), X)
    assert info.value.message == (
        "step: in_shardings[0] is P(None, 'tp'), which names 2 dims, but "
        "params['final_norm'] (float32[8]) has rank 1")
    f = shardc.jit(step, mesh=MESH, backend="numpy",
                   in_shardings=({"embed": None, "final_norm": None, "head": None,
                                  "layers": P("dp")}, None))
    with pytest.raises(shardc.ShardcError, match=re.escape(
            "step: in_shardings[0]['layers'] is P('dp',), but dim 0 of "
            "params['layers'][3]['attn']['bias'] (float32[5]) has size 5")):
        f.lower(make_params(bias=(5,)), X)


def test_structure_mismatches_are_all_listed():
    specs = make_specs(b1="missing")
    specs["layers"][5]["extra"] = P("dp")
    del specs["layers"][14]
    f = shardc.jit(step, mesh=MESH, backend="numpy", in_shardings=(specs, None))
    with pytest.raises(shardc.ShardcError) as info:
        f.lower(make_params(), X)
    parts = info.value.message.split(": ", 2)[2].split("; ")
    assert parts[0] == "in_shardings[0]['layers'][5]['extra'] (P('dp',)) names nothing in params"
    assert parts[1] == "params['layers'][3]['mlp']['b1'] (float32[32]) has no entry in " \
                       "in_shardings[0]"
    # the 7 leaves of the dropped layer 14, listed up to 6 in all, then counted
    assert "params['layers'][14]['attn']['bias'] (float32[16]) has no entry in " \
           "in_shardings[0]" in parts
    assert parts[-1] == "and 3 more"


def test_non_array_leaves_and_keywords_and_varargs_are_named():
    def f(params, *xs, opt):
        return xs[0]

    jitted = shardc.jit(f, mesh=MESH, backend="numpy")
    with pytest.raises(shardc.ShardcError) as info:
        jitted({"w": X}, X, X, opt={"mu": X, "name": "adam"})
    assert info.value.message == ("f: opt['name'] is a str, not an array; pass arrays, or "
                                  "mark the argument static (static_argnums / static_argnames)")
    with pytest.raises(shardc.ShardcError) as info:
        jitted({"w": X}, X, [X, "relu"], opt={})
    assert info.value.message.startswith("f: xs[1][1] is a str, not an array")
    # in_shardings for a *args entry: named by the varargs name
    with pytest.raises(shardc.ShardcError, match=re.escape("f: in_shardings[2]: sharding")):
        shardc.jit(f, mesh=MESH, backend="numpy", in_shardings=(None, None, P("xx")))
    h = shardc.jit(f, mesh=MESH, backend="numpy", in_shardings=(None, None, P(None, None, "dp")))
    with pytest.raises(shardc.ShardcError, match=re.escape("but xs[1] (float32[16,8]) has rank 2")):
        h.lower({"w": X}, X, X, opt={})


def test_a_compiled_call_with_a_wrong_shape_names_the_leaf():
    compiled = shardc.jit(step, mesh=MESH, backend="numpy").lower(make_params(), X).compile()
    with pytest.raises(shardc.ShardcError) as info:
        compiled(make_params(b2=(9,)), X)
    assert info.value.message == ("step: params['layers'][3]['mlp']['b2'] is float32[9], but it "
                                  "was compiled for float32[8]")
    with pytest.raises(shardc.ShardcError) as info:
        compiled(make_params(), X.astype(np.int32))
    assert info.value.message == "step: x is int32[16,8], but it was compiled for float32[16,8]"


def test_a_cache_hit_computes_no_paths(monkeypatch):
    f = shardc.jit(step, mesh=MESH, backend="numpy", in_shardings=(make_specs(), P("dp")))
    params = make_params()
    first = f(params, X)

    def no_paths(*args, **kwargs):
        raise AssertionError("paths computed on a cache hit")

    monkeypatch.setattr(shardc.jitted, "leaf_paths", no_paths)
    np.testing.assert_array_equal(f(params, X), first)
