"""compiler.jax_api: JAX functions in (from_jax), NamedShardings and meshes out.

For a suite of models (MLP, attention, layer norm, softmax, embedding + logits): lower with JAX,
import, propagate with shardc and with jaxlib's Shardy and compare every value's sharding, run
the imported program with the numpy reference interpreter against JAX's own output, and turn
the propagated argument/result shardings back into NamedShardings that JAX lowers to the same
`sdy.sharding`s.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from shardc.executors.reference import run_reference  # noqa: E402
from shardc.ir.diagnostics import ConversionError, ShardcError  # noqa: E402
from shardc.ir.mapping import DimSharding, NamedMapping  # noqa: E402
from shardc.ir.mesh import AxisRef, DeviceMesh  # noqa: E402
from shardc.jax_api import from_jax, mesh_to_jax, to_jax_shardings  # noqa: E402
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.shardy_compare import compare_modules, run_shardy  # noqa: E402

DATA = Path(__file__).parent / "data" / "stablehlo"

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)

MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    scores = jnp.einsum("bsd,btd->bst", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    return jnp.einsum("bst,btd->bsd", jax.nn.softmax(scores, axis=-1), v)


def layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * gamma + beta


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def embedding_logits(ids, table):
    h = jnp.take(table, ids, axis=0)
    return jax.nn.log_softmax(h @ table.T, axis=-1)


# name -> (function, argument shapes/dtypes, in_shardings as PartitionSpecs on MESH)
MODELS = {
    "mlp": (mlp, [(16, 32), (32, 64), (64, 32)], (P("dp", None), P(None, "tp"), P("tp", None))),
    "attention": (
        attention,
        [(4, 8, 16), (16, 16), (16, 16), (16, 16)],
        (P("dp", None, None), P(None, "tp"), P(None, "tp"), P(None, "tp")),
    ),
    "layer_norm": (layer_norm, [(16, 32), (32,), (32,)], (P("dp", "tp"), P(None), P(None))),
    "softmax": (softmax, [(16, 32)], (P("dp", "tp"),)),
    "embedding_logits": (
        embedding_logits,
        [((8, 16), np.int32), (64, 32)],
        (P("dp", None), P("tp", None)),
    ),
}


def _spec(shape) -> tuple[tuple[int, ...], np.dtype]:
    if isinstance(shape, tuple) and len(shape) == 2 and isinstance(shape[0], tuple):
        return shape[0], np.dtype(shape[1])
    return tuple(shape), np.dtype(np.float32)


def _inputs(name: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for shape in MODELS[name][1]:
        dims, dtype = _spec(shape)
        if dtype.kind == "i":
            out.append(rng.integers(0, 64, dims).astype(dtype))
        else:
            out.append(rng.standard_normal(dims).astype(dtype))
    return out


def _abstract(name: str) -> list:
    return [jax.ShapeDtypeStruct(*_spec(s)) for s in MODELS[name][1]]


def _propagate(module, pipeline: str = "propagation-pipeline"):
    load_all_passes()
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return module


@functools.cache
def _shardy_pipeline() -> str:
    """jaxlib's sdy-propagation-pipeline without closing and explicit reshards (as in
    tests/data/stablehlo/generate.py's `open` variant): calls come back as func.call, dims stay
    open as propagation left them."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import passmanager

    with jmlir.make_ir_context():
        p = str(passmanager.PassManager.parse("builtin.module(sdy-propagation-pipeline)"))
    p = p.replace("sdy-save-module,", "").replace(",sdy-save-module", "")
    for piece in ("sdy-close-shardings,",
                  "func.func(sdy-insert-explicit-reshards{enable-full-version=false}),"):
        assert piece in p, p
        p = p.replace(piece, "")
    return re.sub(r"canonicalize\{[^}]*\{sdy-collective\}[^}]*\},", "", p)


@pytest.mark.parametrize("name", list(MODELS))
def test_propagation_matches_shardy(name: str) -> None:
    f, _, specs = MODELS[name]
    module = from_jax(f, *_abstract(name), mesh=MESH, in_shardings=specs)
    assert [a.mapping.spec if a.mapping else None for a in module.main.args] == [
        tuple(s) + (None,) * (a.type.rank - len(s)) for s, a in zip(specs, module.main.args)
    ]
    theirs = import_stablehlo(run_shardy(export_stablehlo(module), _shardy_pipeline()), name)
    agreement = compare_modules(_propagate(module), theirs, name)
    assert not agreement.structural, agreement.structural
    assert agreement.compared > 0
    assert agreement.equal == agreement.compared, "\n".join(agreement.differences)


@pytest.mark.parametrize("name", list(MODELS))
def test_reference_run_matches_jax(name: str) -> None:
    f, _, specs = MODELS[name]
    inputs = _inputs(name)
    module = from_jax(f, *inputs, mesh=MESH, in_shardings=specs)
    ours = run_reference(module, inputs)
    theirs = jax.jit(f)(*inputs)
    theirs = theirs if isinstance(theirs, (tuple, list)) else [theirs]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(MODELS))
def test_to_jax_shardings_round_trip(name: str) -> None:
    """Propagated and closed shardings -> NamedShardings -> jit lowers to the same text."""
    f, _, specs = MODELS[name]
    args = _abstract(name)
    module = _propagate(from_jax(f, *args, mesh=MESH, in_shardings=specs),
                        "propagation-pipeline,close-shardings")
    ins, outs = to_jax_shardings(module, MESH)
    assert all(isinstance(s, NamedSharding) for s in ins + outs)
    again = from_jax(f, *args, in_shardings=ins,
                     out_shardings=outs[0] if len(outs) == 1 else outs)
    assert [a.mapping for a in again.main.args] == [a.mapping for a in module.main.args]
    assert [t.mapping for t in again.main.result_types] == [
        t.mapping for t in module.main.result_types
    ]


def test_partition_specs_on_an_abstract_mesh() -> None:
    module = from_jax(mlp, *_abstract("mlp"), mesh=MESH.abstract_mesh,
                      in_shardings=MODELS["mlp"][2])
    assert str(module.main.args[1].mapping) == '<@mesh, [{}, {"tp"}]>'
    assert module.meshes["mesh"].axes == (("dp", 2), ("tp", 4))


def test_unannotated_arguments_map_to_none() -> None:
    module = from_jax(softmax, *_abstract("softmax"))
    assert to_jax_shardings(module, MESH) == ((None,), (None,))


def test_open_empty_dims_map_to_unconstrained() -> None:
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})
    module = from_jax(softmax, *_abstract("softmax"), mesh=MESH, in_shardings=(P("dp"),))
    arg = module.main.args[0]
    arg.set_mapping(NamedMapping(mesh, (DimSharding.closed([AxisRef("dp")]), DimSharding.open())))
    (sharding,), _ = to_jax_shardings(module, MESH)
    assert sharding.spec == P("dp", P.UNCONSTRAINED)


@pytest.mark.parametrize(
    "dims, message",
    [
        ((DimSharding((AxisRef("tp", 1, 2),)), DimSharding()), "sub-axis"),
        ((DimSharding((AxisRef("dp"),), True, 0), DimSharding()), "priority p0"),
        ((DimSharding.open([AxisRef("dp")]), DimSharding()), "close-shardings"),
    ],
)
def test_inexpressible_shardings_are_conversion_errors(dims, message: str) -> None:
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})
    module = from_jax(softmax, *_abstract("softmax"))
    module.main.args[0].set_mapping(NamedMapping(mesh, dims))
    module.meshes.setdefault("mesh", mesh)
    with pytest.raises(ConversionError, match=message):
        to_jax_shardings(module, MESH)


def test_mesh_mismatch_is_a_conversion_error() -> None:
    module = from_jax(softmax, *_abstract("softmax"), mesh=MESH, in_shardings=(P("dp"),))
    other = jax.make_mesh((4, 2), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(ConversionError, match="mesh_to_jax"):
        to_jax_shardings(module, other)
    with pytest.raises(ConversionError, match="no function @nope"):
        to_jax_shardings(module, MESH, function="nope")


def test_mesh_to_jax_keeps_device_order() -> None:
    text = (DATA / "mesh_device_order.mlir").read_text()
    module = import_stablehlo(text, "mesh_device_order.mlir")
    device_mesh = module.meshes["mesh"]
    assert device_mesh.device_ids == (0, 2, 4, 6, 1, 3, 5, 7)
    mesh = mesh_to_jax(device_mesh)
    assert mesh.axis_names == ("dp", "tp")
    assert [d.id for d in mesh.devices.flat] == list(device_mesh.device_ids)
    ins, outs = to_jax_shardings(module, mesh)
    assert ins[0].mesh is mesh and ins[0].spec == P("dp", None)
    assert outs == (None,)
    with pytest.raises(ConversionError, match="orders its devices"):
        to_jax_shardings(module, MESH)


def test_permuted_jax_mesh_lowers_to_an_iota_sdy_mesh() -> None:
    """JAX keeps a Mesh's device order out of the text, so the round trip accepts it."""
    mesh = mesh_to_jax(DeviceMesh.create("mesh", {"dp": 2, "tp": 4}, [0, 2, 4, 6, 1, 3, 5, 7]))
    module = from_jax(mlp, *_abstract("mlp"), mesh=mesh, in_shardings=MODELS["mlp"][2])
    assert module.meshes["mesh"].device_ids is None
    ins, _ = to_jax_shardings(module, mesh)
    assert ins[1] == NamedSharding(mesh, P(None, "tp"))


def test_mesh_to_jax_needs_enough_devices() -> None:
    big = DeviceMesh.create("big", {"x": 64})
    with pytest.raises(ConversionError, match="needs 64 devices"):
        mesh_to_jax(big)


def test_partition_spec_without_mesh_is_an_error() -> None:
    with pytest.raises(ShardcError, match="no mesh was given"):
        from_jax(softmax, *_abstract("softmax"), in_shardings=(P("dp"),))


@pytest.mark.parametrize("spec", [P("dp", "dp"), P("zz")], ids=["twice", "unknown"])
def test_partition_spec_the_mesh_cannot_take_is_an_error(spec) -> None:
    with pytest.raises(ShardcError, match="is not a sharding on this mesh"):
        from_jax(softmax, *_abstract("softmax"), mesh=MESH, in_shardings=(spec,))


def test_missing_jax_gives_the_install_command(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ShardcError, match=r"pip install 'shardc\[jax\]'"):
        from_jax(softmax, np.zeros((2, 2), np.float32))
