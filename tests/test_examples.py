"""The model zoo and the shipped examples: they parse, print back byte for byte, propagate
without warnings to a sharding on every value, compute sensible numbers, and stay generated."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from shardc.cli import main as shardc
from shardc.executors.numpy_exec import run_spmd
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.models.catalogue import MODELS
from shardc.passes.analysis.cost import collective_report
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
CASES = [(name, preset) for name, spec in MODELS.items() for preset in spec.presets]

load_all_passes()


def load_example(name: str):
    """The script examples/NAME.py as a module (its functions, without running it)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass's annotations are resolved through its module
    spec.loader.exec_module(module)
    return module


def _generate_module():
    return load_example("generate")


def _run(module, pipeline: str) -> PassContext:
    return PassManager(parse_pipeline(pipeline)).run(module, PassContext())


def _inputs(module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        if a.type.dtype == "i32":
            out.append(rng.integers(0, 64, a.type.shape).astype(np.int32))
        else:
            out.append((0.3 * rng.standard_normal(a.type.shape)).astype(np.float32))
    return out


# ----- the shipped files ------------------------------------------------------------------------


def test_every_model_and_preset_has_an_example():
    names = {p.name for p in EXAMPLES}
    assert {f"{m}_{p}.mlir" for m, p in CASES} <= names
    assert "mlp.mlir" in names


def test_examples_are_generated_and_current():
    texts = _generate_module().example_texts()
    for file_name, text in texts.items():
        assert (ROOT / "examples" / file_name).read_text(encoding="utf-8") == text, file_name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_round_trips(path: Path, capsys):
    text = path.read_text(encoding="utf-8")
    assert print_module(parse_module(text, path.name)) == text
    assert shardc(["opt", str(path)]) == 0
    out = capsys.readouterr()
    assert out.out == text
    assert out.err == ""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_propagates_without_warnings(path: Path):
    module = parse_module(path.read_text(encoding="utf-8"), path.name)
    ctx = _run(module, "propagation-pipeline")
    assert [w.render() for w in ctx.warnings] == []
    from shardc.stablehlo.inlining import region_only_functions

    scalar_bodies = {n for n in region_only_functions(module)
                     if all(not a.type.shape for a in module.functions[n].args)}
    for func in module.functions.values():
        # a sort comparator or reduce body takes scalars nothing propagates into
        if func.name not in scalar_bodies:
            assert all(v.mapping is not None for v in func.args)
    # A value no axis reaches keeps no sharding, as in Shardy (a mask's iotas, scalars);
    # close-shardings replicates those.
    _run(module, "close-shardings")
    for func in module.functions.values():
        for op in func.body:
            for r in op.results:
                assert r.mapping is not None and r.mapping.is_fully_resolved, op.name


# ----- the models -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "preset"), CASES)
def test_model_matches_reference_on_the_mesh(name: str, preset: str):
    """The compiled per-device program equals the unsharded program, and both are finite."""
    module = MODELS[name].build(preset)
    inputs = _inputs(module)
    expected = run_reference(parse_module(print_module(module)), inputs)
    assert all(np.isfinite(e).all() for e in expected)
    _run(module, "propagation-pipeline,insert-reshards,lower-collectives,canonicalize")
    _run(module, "spmd")
    got = run_spmd(module, inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_parallel_presets_communicate_as_practitioners_expect():
    def kinds(name: str, preset: str) -> dict[str, int]:
        module = MODELS[name].build(preset)
        _run(module, "propagation-pipeline,insert-reshards,lower-collectives")
        return {k: v["count"] for k, v in collective_report(module)["by_kind"].items()}

    assert kinds("mlp", "dp") == {}
    assert kinds("mlp", "dp_tp") == {"all_reduce": 1}  # Megatron: one all_reduce per MLP
    assert kinds("transformer", "tp") == {"all_reduce": 2}  # after attention and after MLP
    assert kinds("transformer", "dp") == {}
    assert kinds("moe", "ep").get("all_to_all", 0) == 2  # dispatch and combine


@pytest.mark.parametrize("name", ["mlp", "transformer", "mixer"])
def test_data_parallel_batch_sharding_reaches_the_output(name: str):
    module = MODELS[name].build("dp", layers=2)
    _run(module, "propagation-pipeline")
    (out,) = [op for op in module.main.body if op.name == "return"][0].operands
    assert out.mapping is not None and out.mapping.spec[0] == "dp"


def test_layers_stack_blocks():
    one = MODELS["transformer"].build("dp_tp")
    three = MODELS["transformer"].build("dp_tp", layers=3)
    assert len(three.main.args) == 1 + 3 * (len(one.main.args) - 1)
    assert len(list(three.main.body)) > 2 * len(list(one.main.body))


def test_preset_mesh_can_be_overridden():
    module = MODELS["mlp"].build("dp_tp", mesh={"dp": 4, "tp": 2})
    assert module.meshes["mesh"].shape == {"dp": 4, "tp": 2}


def test_bad_model_requests_are_user_errors():
    spec = MODELS["mlp"]
    with pytest.raises(ShardcError, match="no preset 'zz'"):
        spec.build("zz")
    with pytest.raises(ShardcError, match="no parameter 'depth'"):
        spec.build("dp", depth=3)
    with pytest.raises(ShardcError, match="mesh axes 'tp'"):
        spec.build("tp", mesh={"dp": 8})


def test_registry_describes_every_model():
    assert set(MODELS) == {"mlp", "transformer", "embedding", "moe", "mixer", "gpt"}
    for spec in MODELS.values():
        assert spec.description and spec.presets
        assert all(p.description and p.mesh for p in spec.presets.values())
        assert spec.parameters()
    assert set(MODELS["transformer"].presets) == {"dp", "tp", "dp_tp", "fsdp"}
    assert set(MODELS["mlp"].presets) == {"dp", "tp", "dp_tp", "fsdp"}


def test_embedding_loss_is_log_vocab_for_a_zero_table():
    module = MODELS["embedding"].build("dp", vocab=100)
    tokens, labels, table = _inputs(module)
    (loss,) = run_reference(module, [tokens, labels, np.zeros_like(table)])
    assert loss.shape == ()
    assert float(loss) == pytest.approx(math.log(100), rel=1e-5)


def test_embedding_loss_matches_numpy():
    module = MODELS["embedding"].build("tp", tied=False)
    tokens, labels, table, out_table = _inputs(module)
    (loss,) = run_reference(module, [tokens, labels, table, out_table])
    logits = table[tokens] @ out_table.T
    lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    assert float(loss) == pytest.approx(float((lse - picked).mean()), rel=1e-4)


def _moe_numpy(x, wr, w1, w2, capacity: int) -> np.ndarray:
    """Top-1 Switch routing, token by token: tokens past an expert's capacity pass through."""
    logits = x @ wr
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = x.copy()
    for g in range(x.shape[0]):
        used = np.zeros(wr.shape[1], dtype=int)
        for s in range(x.shape[1]):
            e = int(np.argmax(logits[g, s]))
            used[e] += 1
            if used[e] <= capacity:
                h = np.maximum(x[g, s] @ w1[e], 0.0)
                out[g, s] += probs[g, s, e] * (h @ w2[e])
    return out


@pytest.mark.parametrize("capacity", [2, 16])
def test_moe_routes_top1_with_capacity(capacity: int):
    module = MODELS["moe"].build("ep", capacity=capacity)
    inputs = _inputs(module, seed=3)
    (got,) = run_reference(module, inputs)
    np.testing.assert_allclose(got, _moe_numpy(*inputs, capacity), rtol=1e-4, atol=1e-5)


def test_transformer_matches_numpy():
    module = MODELS["transformer"].build(
        "dp", batch=2, seq=4, d_model=8, heads=2, d_head=4, d_ff=16
    )
    x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2 = _inputs(module, seed=5)

    def ln(v, g, b):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

    h = ln(x, g1, b1)
    q, k, v = (np.einsum("bsd,dhe->bshe", h, w) for w in (wq, wk, wv))
    s = np.einsum("bqhe,bkhe->bhqk", q, k) / 2.0
    s = np.where(np.tril(np.ones((4, 4), bool)), s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    y = x + np.einsum("bhqk,bkhe,hed->bqd", p, v, wo)
    y = y + np.maximum(ln(y, g2, b2) @ w1, 0) @ w2
    (got,) = run_reference(module, [x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2])
    np.testing.assert_allclose(got, y, rtol=1e-4, atol=1e-5)
