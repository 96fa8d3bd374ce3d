"""Every collective is explained down to what the user wrote or a named rule, at the user's
source line when the program came from JAX (compiler/explain/collectives.py); source lines
survive the default pipeline and the export; errors about an op name its Python line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from shardc import formats
from shardc.explain.collectives import explain_collectives
from shardc.ir.diagnostics import ShardcError
from shardc.models.catalogue import MODELS
from shardc.passes.analysis.cost import COLLECTIVES
from shardc.pipeline import CompileOptions, compile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir")) + sorted(
    (ROOT / "examples" / "jax").glob("*.mlir")
)


def _explained(module):
    result = compile(module)
    found = explain_collectives(result.module, result.context.data.get("origins"))
    ops = [op for f in result.module.functions.values() for op in f.body if op.name in COLLECTIVES]
    assert len(found) == len(ops)
    for e in found:
        assert e.ends_at_user_or_rule(), (e.value, [c[-1].kind for c in e.chains])
        assert e.needs, e.value
    return found


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_zoo_collective_is_explained(model) -> None:
    spec = MODELS[model]
    for preset in spec.presets:
        for train in (None, "sgd"):
            _explained(spec.build(preset, train=train))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_collective_is_explained(path) -> None:
    text = path.read_text()
    _explained(formats.parse(text, str(path), formats.detect(text)))


def test_an_explanation_follows_the_factor_to_the_annotation() -> None:
    """mlp fsdp: x's batch (p0) and w1's rows (p1) both want "dp" at the first matmul; the
    explanation says which factor took it and ends at both arguments' annotations."""
    (first, *_) = _explained(MODELS["mlp"].build("fsdp"))
    assert first.kind == "all_to_all" and first.consumer == "dot_general"
    ends = [c[-1] for c in first.chains]
    assert {d.kind for d in ends} == {"in_sharding"}
    texts = [d.text for c in first.chains for d in c]
    assert any("uses \"dp\" for its factor k instead" in t for t in texts)
    assert any('[{"dp"}p1, {}]' in t for t in texts)  # the written priority


@pytest.mark.parametrize("sharding", ["dp", "tp", "dp_tp", "fsdp"])
def test_a_jax_gpt_training_step_is_explained_at_its_source_lines(sharding) -> None:
    pytest.importorskip("jax")
    from shardc.jax_api import from_jax
    from tests.test_examples import load_example

    gpt = load_example("gpt_jax")  # the GPT of examples/jax/, lowered with its source lines
    args, shardings = gpt.step_arguments(sharding)
    module = from_jax(gpt.train_step, *args, in_shardings=shardings)
    found = _explained(module)
    assert found
    for e in found:
        assert e.loc.startswith(str(ROOT / "examples" / "gpt_jax.py")), (e.value, e.loc)
        assert e.consumer_loc.startswith(str(ROOT / "examples")), (e.value, e.consumer_loc)
        ops = [d for c in e.chains for d in c if d.op and d.op != "return"]
        assert all(d.loc for d in ops), [(d.text) for d in ops if not d.loc]
    # a chain that ends at an argument names it by JAX's pytree path
    args = [d.text for e in found for c in e.chains for d in c if d.kind == "in_sharding"]
    assert args and all(re.match(r"argument \d+ (params|tokens|labels)\W", t) for t in args), args


def _jax_mlp():
    jax = pytest.importorskip("jax")
    import numpy as np
    from jax.sharding import PartitionSpec as P

    from shardc.jax_api import from_jax

    mesh = jax.make_mesh((2, 4), ("dp", "tp"))

    def mlp(x, w1, w2):
        h = jax.numpy.tanh(x @ w1)
        return h @ w2

    x = np.ones((16, 32), np.float32)
    w1, w2 = np.ones((32, 64), np.float32), np.ones((64, 32), np.float32)
    return from_jax(mlp, x, w1, w2, mesh=mesh,
                    in_shardings=(P("dp", None), P(None, "tp"), P(None, "tp")))


def test_source_lines_survive_the_default_pipeline_and_the_export() -> None:
    from shardc.stablehlo import export_stablehlo

    result = compile(_jax_mlp())
    here = os.path.abspath(__file__)
    collectives = 0
    for module in (result.module, result.spmd):
        for op in module.main.body:
            assert op.loc_written and op.loc is not None, op.name
            if op.name in COLLECTIVES:
                collectives += 1
                assert op.loc.file == here  # the line of the matmul that needs it
    assert collectives
    text = export_stablehlo(result.module, debug_info=True)
    body = text.split("func.func public @main", 1)[1].split("\n  }", 1)[0]
    ops = [line for line in body.splitlines()[1:] if "=" in line or "return" in line]
    assert ops and all(f'loc("{here}"' in line or "loc(" in line for line in ops)
    assert any(f'"{here}"' in line for line in ops if "sdy.all_gather" in line
               or "sdy.all_reduce" in line or "sdy.all_to_all" in line)


def test_an_error_about_an_op_names_its_python_line() -> None:
    jax = pytest.importorskip("jax")
    import numpy as np
    from jax.sharding import PartitionSpec as P

    from shardc.jax_api import from_jax

    mesh = jax.make_mesh((8,), ("dp",))

    def f(x):
        return jax.lax.top_k(jax.numpy.tanh(x), 2)[0]

    module = from_jax(f, np.ones((16, 8), np.float32), mesh=mesh, in_shardings=(P("dp", None),))
    with pytest.raises(ShardcError) as err:
        compile(module, CompileOptions(strict=True))
    assert err.value.render().startswith(f"{os.path.abspath(__file__)}:")
    assert "'top_k' has no sharding rule" in err.value.render()


def test_a_step_where_propagation_met_a_conflict_says_so() -> None:
    from shardc.explain.collectives_report import collectives_report

    # as propagated: compile's default gathers this step's weights first (FSDP's plan,
    # docs/spmd.md), and then propagation meets no conflict
    report = collectives_report(MODELS["gpt"].build("fsdp"),
                                CompileOptions(gather_weights="never"), lint=False)
    assert not report.base.audit.clean
    texts = [d.text for e in report.explanations for c in e.chains for d in c]
    assert any("conflicted there, and the propagation strategy chose" in t for t in texts)
