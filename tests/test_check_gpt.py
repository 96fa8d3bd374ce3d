"""`shardc run --check` on a deep training step, in both directions: a JAX-lowered 6-layer GPT
(examples/gpt_jax.py's model, f32, dp=2 x tp=4) passes at default settings on numpy and JAX,
also where a fixed f32 tolerance against the unsharded run cries wolf; and deliberately broken
lowerings of the same program (a dropped all_reduce, an all_reduce over the wrong axis, a shard
read for the wrong device) fail."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jax")

from shardc.check import CheckOptions, expectations, judge  # noqa: E402
from shardc.cli import main  # noqa: E402
from shardc.commands.run import random_inputs  # noqa: E402
from shardc.ir.mesh import AxisRef  # noqa: E402
from shardc.passes.analysis.collectives.groups import device_groups  # noqa: E402
from shardc.pipeline import compile  # noqa: E402
from shardc.stablehlo import import_stablehlo  # noqa: E402
from tests.test_examples import load_example  # noqa: E402

LAYERS = 6


@pytest.fixture(scope="module")
def gpt6(tmp_path_factory) -> dict[str, Path]:
    """The 6-layer SGD step and its gradients (loss and grads), as JAX lowers them."""
    gpt = load_example("gpt_jax")
    out = tmp_path_factory.mktemp("gpt6")
    files = {}
    for name, step in (("train", gpt.train_step), ("grads", gpt.grads_step)):
        files[name] = out / f"gpt6_{name}_dp_tp.mlir"
        files[name].write_text(gpt.lowered_text("dp_tp", layers=LAYERS, step=step))
    return files


def _run(spmd, inputs, backend: str):
    if backend == "numpy":
        from shardc.executors.numpy_exec import NumpyExecutor

        return NumpyExecutor(spmd).run(inputs)
    from shardc.executors.jax_exec import JaxExecutor

    return JaxExecutor(spmd).run(inputs)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_correct_deep_training_step_passes_at_default_settings(gpt6, capsys, backend) -> None:
    code = main(["run", str(gpt6["train"]), "--check", "--backend", backend])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert code == 0, err
    assert len(lines) == 1 + 3 + 10 * LAYERS and all(line.endswith(" ok") for line in lines)
    assert "not checked" not in out + err


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_the_bound_passes_what_a_fixed_tolerance_fails(gpt6, backend) -> None:
    """The gradients at input deviation 3: the unsharded f32 program itself misses the f64
    values by up to ~5e-4 of their scale, so demanding 1e-5 of the sharded run fails it (the
    old default), while the bound from the unsharded run's own error passes every output."""
    module = import_stablehlo(gpt6["grads"].read_text(), str(gpt6["grads"]))
    inputs = random_inputs(module, 0, 3.0)
    outputs = compile(module).run(inputs, backend=backend)
    derived, notes = expectations(module, inputs, backend=backend)
    fixed, _ = expectations(module, inputs, options=CheckOptions(rtol=1e-5))
    assert not notes
    assert all(judge(got, e).ok for got, e in zip(outputs, derived))
    assert sum(not judge(got, e).ok for got, e in zip(outputs, fixed)) >= 1
    worst = max(judge(got, e).error / e.bound for got, e in zip(outputs, derived))
    assert worst < 0.5  # a margin, not a coin toss


def _add_reduces(spmd) -> list:
    return [op for op in spmd.main.body
            if op.name == "spmd.all_reduce" and op.attributes["kind"].word == "add"]


def _set_axis(op, name: str, mesh) -> None:
    op.attributes["axes"] = (AxisRef(name, 1, None),)
    op.attributes["groups"] = tuple(tuple(g) for g in device_groups(mesh, op.attributes["axes"]))


def _broken(spmd, how: str):
    """A copy of the per-device program with one deliberate mistake."""
    spmd = spmd.clone()
    (mesh,) = spmd.meshes.values()
    if how == "wrong shard":  # a device reads the shard of its peer along the other axis
        op = next(o for f in spmd.functions.values() for o in f.body
                  if o.name == "spmd.axis_index")
        other = "dp" if op.attributes["axes"][0].name == "tp" else "tp"
        _set_axis(op, other, mesh)
        return spmd
    reduces = _add_reduces(spmd)
    op = reduces[len(reduces) // 2]
    if how == "dropped all_reduce":  # (a combined all_reduce: all of its operands)
        for result, operand in zip(op.results, op.operands, strict=True):
            result.replace_all_uses_with(operand)
        op.erase()
    else:  # "wrong axis": the partial sums of the other axis are added
        _set_axis(op, "dp" if op.attributes["axes"][0].name == "tp" else "tp", mesh)
    return spmd


@pytest.fixture(scope="module")
def grads_case(gpt6):
    """The gradient step compiled once, and what its outputs must be on each backend (checked
    once: the correct program passes), computed on first use."""
    module = import_stablehlo(gpt6["grads"].read_text(), str(gpt6["grads"]))
    inputs = random_inputs(module, 0, 1.0)
    result = compile(module)
    cache: dict[str, list] = {}

    def expected(backend: str) -> list:
        if backend not in cache:
            cache[backend], _ = expectations(module, inputs, backend=backend)
            outputs = _run(result.spmd, inputs, backend)
            assert all(judge(got, e).ok for got, e in zip(outputs, cache[backend]))
        return cache[backend]

    return result, inputs, expected


@pytest.mark.parametrize("how", ["dropped all_reduce", "wrong axis", "wrong shard"])
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_broken_lowering_fails(grads_case, backend, how) -> None:
    result, inputs, expected = grads_case
    want = expected(backend)
    broken = _run(_broken(result.spmd, how), inputs, backend)
    failed = [i for i, (got, e) in enumerate(zip(broken, want)) if not judge(got, e).ok]
    assert failed, f"{how}: no output flagged"
