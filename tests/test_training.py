"""Training steps: every zoo model's step under every preset compiles and runs like the unsharded
program; the JAX-lowered GPT steps in examples/jax/ import, compile and run on both executors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from shardc.cli import main as shardc
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.types import is_float, numpy_dtype
from shardc.models.catalogue import MODELS
from shardc.pipeline import compile

ROOT = Path(__file__).resolve().parent.parent
JAX_EXAMPLES = sorted((ROOT / "examples" / "jax").glob("gpt_train_*.mlir"))
CASES = [
    (name, preset, optimizer)
    for name, spec in MODELS.items()
    for i, preset in enumerate(spec.presets)
    for optimizer in (("sgd", "adam") if i == 0 else ("sgd",))
]


def _inputs(module, scale: float = 0.5) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for a in module.main.args:
        dt = numpy_dtype(a.type.dtype)
        if is_float(a.type.dtype):
            out.append((scale * rng.standard_normal(a.type.shape)).astype(dt))
        else:
            out.append(rng.integers(0, 8, a.type.shape).astype(dt))
    return out


def _close(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        scale = max(float(np.max(np.abs(w))), 1.0)
        np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_zoo_training_steps_compile_and_run(case: tuple[str, str, str]) -> None:
    name, preset, optimizer = case
    module = MODELS[name].build(preset, train=optimizer)
    inputs = _inputs(module)
    _close(compile(module).run(inputs), run_reference(module, inputs))


def test_a_training_step_returns_the_loss_and_updated_parameters_sharded_as_given() -> None:
    module = MODELS["gpt"].build("dp_tp", train="adam")
    func = module.main
    names = [a.name_hint for a in func.args]
    assert names[:4] == ["tokens", "labels", "table", "pos"]
    assert names[-1] == "count" and "m_table" in names and "r_table" in names
    params = [a for a in func.args if a.name_hint not in ("tokens", "labels", "count")]
    assert len(func.result_types) == 1 + len(params)
    assert func.result_types[0].shape == ()
    for a, t in zip(params, func.result_types[1:]):
        assert t.mapping == a.mapping
    # the embedding's gradient is a scatter-add; with the vocab on tp it stays on tp
    compiled = compile(module).module
    scatters = [op for op in compiled.main.body if op.name == "scatter"]
    assert scatters and all(str(s.result.mapping).startswith('<@mesh, [{"tp"}') for s in scatters)


def test_the_cli_builds_training_steps(capsys) -> None:
    assert shardc(["compile", "--model", "mlp", "--preset", "dp", "--train", "sgd",
                   "--report", "json"]) == 0
    assert '"all_reduce"' in capsys.readouterr().out
    assert shardc(["run", "--model", "embedding", "--preset", "tp", "--train", "adam",
                   "--check"]) == 0


def test_an_unknown_optimizer_is_an_error() -> None:
    with pytest.raises(ShardcError, match="unknown optimizer 'lamb'"):
        MODELS["mlp"].build("dp", train="lamb")


def test_every_jax_gpt_sharding_is_shipped() -> None:
    assert [p.name for p in JAX_EXAMPLES] == [
        f"gpt_train_{s}.mlir" for s in ("dp", "dp_tp", "fsdp", "tp")
    ]


# Bytes per device XLA's partitioner moves for the same `jax.jit` step (docs/benchmarks.md,
# "Quality: training steps"; benchmarks/quality.py --train sgd measures it).
XLA_BYTES = {"dp": 526_852, "tp": 460_800, "dp_tp": 364_036, "fsdp": 1_136_644}


@pytest.mark.parametrize("path", JAX_EXAMPLES, ids=lambda p: p.stem)
def test_jax_gpt_training_steps_run_like_the_reference(path: Path) -> None:
    """`shardc run examples/jax/gpt_train_*.mlir --check` on numpy and on JAX, moving no more
    bytes per device than XLA."""
    pytest.importorskip("jax")
    from shardc.stablehlo import import_stablehlo

    module = import_stablehlo(path.read_text(), str(path))
    inputs = _inputs(module, scale=1.0)
    want = run_reference(module, inputs)
    result = compile(module)
    assert result.report["total_comm_bytes"] <= XLA_BYTES[path.stem.removeprefix("gpt_train_")]
    _close(result.run(inputs, backend="numpy"), want)
    _close(result.run(inputs, backend="jax"), want)


def test_jax_gpt_examples_are_current() -> None:
    """Regenerating examples/jax/ with the JAX they were made with changes nothing."""
    jax = pytest.importorskip("jax")
    first = JAX_EXAMPLES[0].read_text().splitlines()[0]
    if f"jax {jax.__version__};" not in first:
        pytest.skip(f"made with another JAX ({first}); this is {jax.__version__}")
    spec = importlib.util.spec_from_file_location("gpt_jax", ROOT / "examples" / "gpt_jax.py")
    assert spec is not None and spec.loader is not None
    gpt_jax = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt_jax)
    assert gpt_jax.main(["--check"]) == 0
