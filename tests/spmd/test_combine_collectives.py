"""combine-collectives and inline-calls: combined programs run like the uncombined ones and like
the unsharded program, on both executors; the report counts what the per-device program
issues; the pass keeps every value defined before its use and never combines dependent ops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.cli import main as shardc
from shardc.executors.numpy_exec import NumpyExecutor
from shardc.executors.reference import run_reference
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError, VerifyError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.ir.types import is_float, numpy_dtype
from shardc.models.catalogue import MODELS
from shardc.passes.manager import PassManager, parse_pipeline
from shardc.pipeline import CompileOptions, compile

ROOT = Path(__file__).resolve().parent.parent.parent
GPT = ROOT / "examples" / "jax"
COMBINABLE = ("spmd.all_reduce", "spmd.all_gather", "spmd.reduce_scatter")


def _inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        dt = numpy_dtype(a.type.dtype)
        if is_float(a.type.dtype):
            out.append((0.5 * rng.standard_normal(a.type.shape)).astype(dt))
        else:
            out.append(rng.integers(0, 8, a.type.shape).astype(dt))
    return out


def _collectives(module: Module) -> list:
    return [op for f in module.functions.values() for op in f.body if op.name in COMBINABLE]


def _close(got, want, rtol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        scale = max(float(np.max(np.abs(w))), 1.0) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale)


def _import(path: Path) -> Module:
    from shardc.stablehlo import import_stablehlo

    return import_stablehlo(path.read_text(), str(path))


# ----- whole programs -------------------------------------------------------------------------

# The JAX GPT steps (examples/gpt_jax.py): collectives the per-device program issues, combined,
# against XLA's compiled HLO for the same function under jax.jit (benchmarks/quality.py --train):
# 1, 13, 14 and 29. On fsdp shardc gathers the weights (passes/propagation/gather_weights.py):
# every weight but the embedding table gathered, 9 collectives.
GPT_ISSUED = {"dp": 1, "tp": 13, "dp_tp": 14, "fsdp": 9}


@pytest.mark.parametrize("name", sorted(GPT_ISSUED))
def test_jax_gpt_steps_issue_no_more_collectives_than_xla(name: str) -> None:
    module = _import(GPT / f"gpt_train_{name}.mlir")
    combined = compile(module)
    separate = compile(module, CompileOptions(combine_threshold=0))
    assert combined.report["issued"]["count"] == GPT_ISSUED[name]
    assert separate.report["issued"]["count"] > GPT_ISSUED[name]
    # Combining moves the same bytes, and the report's two views agree.
    for result in (combined, separate):
        assert result.report["issued"]["bytes"] == result.report["total_comm_bytes"]
        assert result.report["issued"]["ring_bytes"] == result.report["total_ring_bytes"]
    inputs = _inputs(module)
    want = run_reference(module, inputs)
    _close(combined.run(inputs, backend="numpy"), want)
    _close(combined.run(inputs, backend="jax"), want)


@pytest.mark.parametrize(
    "case", [("mlp", "dp", "adam"), ("transformer", "dp_tp", "sgd"), ("gpt", "fsdp", "sgd")],
    ids="-".join)
def test_combined_training_steps_run_like_the_unsharded_program(case) -> None:
    module = MODELS[case[0]].build(case[1], train=case[2])
    result = compile(module)
    assert result.report["issued"]["combined"] >= 1
    inputs = _inputs(module)
    want = run_reference(module, inputs)
    _close(result.run(inputs, backend="numpy"), want)
    _close(result.run(inputs, backend="jax"), want)


def test_compiling_twice_gives_the_same_program() -> None:
    module = _import(GPT / "gpt_train_dp_tp.mlir")
    assert print_module(compile(module).spmd) == print_module(compile(module).spmd)


def test_threshold_zero_is_the_uncombined_program() -> None:
    module = MODELS["mlp"].build("dp", train="sgd")
    off = compile(module, CompileOptions(combine_threshold=0))
    assert all(op.num_operands == 1 for op in _collectives(off.spmd))
    assert off.report["issued"]["combine_threshold"] == 0
    assert off.report["issued"]["combined"] == 0
    on = compile(module)
    assert len(_collectives(on.spmd)) < len(_collectives(off.spmd))
    with pytest.raises(ShardcError, match="combine_threshold must be 0"):
        compile(module, CompileOptions(combine_threshold=-1))


def test_the_command_takes_a_threshold(capsys) -> None:
    path = str(GPT / "gpt_train_dp.mlir")
    assert shardc(["compile", path, "--report", "text", "--combine-threshold", "0"]) == 0
    assert "issued by the per-device program: 25 collectives, " in capsys.readouterr().out
    assert shardc(["compile", path, "--report", "text", "--combine-threshold", "1MiB"]) == 0
    assert "issued by the per-device program: 1 collectives, 1 of them combined" in (
        capsys.readouterr().out)
    with pytest.raises(SystemExit) as e:
        shardc(["compile", path, "--combine-threshold", "lots"])
    assert e.value.code == 2


# ----- the JAX executor runs one collective per combined op -----------------------------------

COMBINED_JAX = """
mesh @m = <["y"=2, "x"=4]>
func @main(%a: tensor<4x6xf32>, %b: tensor<8x3xf32>) -> (tensor<8x6xf32>, tensor<8x12xf32>, tensor<4x12xf32>, tensor<8x12xf32>, tensor<4x6xf32>, tensor<8x3xf32>) attributes {mesh = @m, in_shapes = [[4, 6], [8, 3]], in_shardings = [<@m, [{}, {}]>, <@m, [{}, {}]>], out_shapes = [[8, 6], [8, 12], [4, 12], [8, 12], [4, 6], [8, 3]], out_shardings = [<@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>]} {
  %g0, %g1 = spmd.all_gather %a, %b {axes = ["y"], dim = 0, groups = [[0, 4], [1, 5], [2, 6], [3, 7]]} : tensor<8x6xf32>, tensor<16x3xf32>
  %h0, %h1 = spmd.all_gather %a, %b {axes = ["x"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<4x24xf32>, tensor<8x12xf32>
  %r0, %r1 = spmd.reduce_scatter %h0, %h1 {axes = ["x"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<4x6xf32>, tensor<8x3xf32>
  %s0, %s1 = spmd.reduce_scatter %g0, %g1 {axes = ["y"], dim = 0, groups = [[0, 4], [1, 5], [2, 6], [3, 7]]} : tensor<4x6xf32>, tensor<8x3xf32>
  %m0, %m1 = spmd.all_reduce %r0, %s1 {axes = ["y", "x"], kind = maximum, groups = [[0, 1, 2, 3, 4, 5, 6, 7]]} : tensor<4x6xf32>, tensor<8x3xf32>
  %t = add %s0, %m0 : tensor<4x6xf32>
  %u = add %r1, %m1 : tensor<8x3xf32>
  %c = constant {value = dense<0.0>} : tensor<f32>
  %p = pad %g0, %c {edge_padding_low = [0, 0], edge_padding_high = [0, 0]} : tensor<8x6xf32>
  %q = slice %h1 {start_indices = [0, 0], limit_indices = [8, 12]} : tensor<8x12xf32>
  %v = slice %h0 {start_indices = [0, 0], limit_indices = [4, 12]} : tensor<4x12xf32>
  return %p, %q, %v, %h1, %t, %u
}
"""


def _blocks(module: Module, seed: int = 1) -> list[dict[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{d: rng.standard_normal(a.type.shape).astype(np.float32) for d in range(8)}
            for a in module.main.args]


def test_jax_runs_a_combined_collective_as_one_and_like_numpy() -> None:
    jax = pytest.importorskip("jax")
    from shardc.executors.jax_arrays import JaxArrayProgram

    module = parse_module(COMBINED_JAX)
    blocks = _blocks(module)
    numpy_out = NumpyExecutor(module).run_blocks(blocks)
    general = NumpyExecutor(module, general_groups=True).run_blocks(blocks)
    program = JaxArrayProgram(module, devices=jax.devices()[:8])
    # Device d's block of each argument, stacked in mesh order (replicated in_shardings: the JAX
    # program sees one block per device through shard_map over a leading device dim).
    ex = program.executor
    fn = jax.jit(jax.shard_map(
        lambda *xs: tuple(o[None] for o in ex.call(ex.func, [x[0] for x in xs])),
        mesh=ex.mesh, in_specs=tuple(jax.sharding.PartitionSpec(ex.names) for _ in blocks),
        out_specs=tuple(jax.sharding.PartitionSpec(ex.names) for _ in numpy_out)))
    ids = module.meshes["m"].all_device_ids()
    args = [np.stack([b[d] for d in ids]) for b in blocks]
    jax_out = [np.asarray(o) for o in fn(*args)]
    for i, out in enumerate(numpy_out):
        for p, d in enumerate(ids):
            np.testing.assert_allclose(out[d], general[i][d], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(jax_out[i][p], out[d], rtol=1e-5, atol=1e-5)
    hlo = fn.lower(*args).compile().as_text()
    ops = [line for line in hlo.splitlines() if " = " in line]
    assert sum(" all-gather(" in line or "all-gather-start(" in line for line in ops) == 2
    assert sum(" reduce-scatter(" in line for line in ops) == 2
    assert sum(" all-reduce(" in line or "all-reduce-start(" in line for line in ops) == 1


# ----- the report: per-dim steps and what is issued -------------------------------------------

TWO_DIMS = """
mesh @m = <["x"=4, "y"=2]>
func @main(%a: tensor<64x64xf32, <@m, [{}, {}], unreduced={"x", "y"}>>) -> tensor<64x64xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = reduce_scatter %a {scatter_axes = [["x"], ["y"]]} : tensor<64x64xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}
"""


def test_a_reduce_scatter_onto_two_dims_is_reported_as_the_two_it_runs_as() -> None:
    result = compile(parse_module(TWO_DIMS))
    (entry,) = result.report["collectives"]
    steps = [(s["kind"], s["axes"], s["local_shape"], s["bytes_per_device"])
             for s in entry["steps"]]
    assert steps == [("reduce_scatter", ["x"], [64, 64], 16384),
                     ("reduce_scatter", ["y"], [16, 64], 4096)]
    assert entry["bytes_per_device"] == 16384 + 4096
    assert entry["ring_bytes_per_device"] == sum(s["ring_bytes_per_device"]
                                                 for s in entry["steps"])
    issued = result.report["issued"]
    assert issued["count"] == 2
    assert [c["bytes_per_device"] for c in issued["collectives"]] == [16384, 4096]
    assert issued["bytes"] == result.report["total_comm_bytes"]
    text = shardc_report_text(result)
    assert "runs as 2 collectives: reduce_scatter 16.0 KiB + reduce_scatter 4.0 KiB" in text


def shardc_report_text(result) -> str:
    from shardc.report import report_text

    return report_text(result.report)


# ----- the pass on random per-device programs ----------------------------------------------------

OPS = ("negate", "tanh", "add", "all_reduce", "all_reduce_y", "all_reduce_max", "gather",
       "scatter", "effect")


def _program(steps: list[tuple[str, int, int]]) -> str:
    """A per-device program on ["y"=2, "x"=2] over 4x4 blocks: each step applies an op to earlier
    values (picked by index, modulo what exists with a fitting shape)."""
    shapes = {"%a": (4, 4), "%b": (4, 4)}
    names = ["%a", "%b"]
    lines = []
    groups_x = "[[0, 1], [2, 3]]"
    groups_y = "[[0, 2], [1, 3]]"
    for n, (kind, i, j) in enumerate(steps):
        square = [v for v in names if shapes[v] == (4, 4)]
        x, y = square[i % len(square)], square[j % len(square)]
        out = f"%v{n}"
        t = "tensor<4x4xf32>"
        if kind in ("negate", "tanh"):
            lines.append(f"{out} = {kind} {x} : {t}")
        elif kind == "add":
            lines.append(f"{out} = add {x}, {y} : {t}")
        elif kind.startswith("all_reduce"):
            axes, groups = ('["y"]', groups_y) if kind == "all_reduce_y" else ('["x"]', groups_x)
            red = "maximum" if kind == "all_reduce_max" else "add"
            lines.append(f"{out} = spmd.all_reduce {x} {{axes = {axes}, kind = {red}, "
                         f"groups = {groups}}} : {t}")
        elif kind == "gather":  # gathered, then cut back to a 4x4 block to keep shapes square
            lines.append(f"{out}g = spmd.all_gather {x} {{axes = [\"x\"], dim = 0, "
                         f"groups = {groups_x}}} : tensor<8x4xf32>")
            lines.append(f"{out} = slice {out}g {{start_indices = [2, 0], "
                         f"limit_indices = [6, 4]}} : {t}")
        elif kind == "scatter":
            lines.append(f"{out}s = spmd.reduce_scatter {x} {{axes = [\"x\"], dim = 0, "
                         f"groups = {groups_x}}} : tensor<2x4xf32>")
            lines.append(f"{out} = concatenate {out}s, {out}s {{dimension = 0}} : {t}")
        else:
            lines.append(f'custom_call {x} {{call_target_name = "effect"}}')
            continue
        shapes[out] = (4, 4)
        names.append(out)
    results = names[-3:]
    types = ", ".join("tensor<4x4xf32>" for _ in results)
    shardings = ", ".join("<@m, [{}, {}]>" for _ in results)
    shapes_text = ", ".join("[4, 4]" for _ in results)
    body = "\n  ".join(lines)
    return (
        'mesh @m = <["y"=2, "x"=2]>\n'
        f"func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> ({types}) attributes "
        "{mesh = @m, in_shapes = [[4, 4], [4, 4]], in_shardings = [<@m, [{}, {}]>, "
        f"<@m, [{{}}, {{}}]>], out_shapes = [{shapes_text}], out_shardings = [{shardings}]}} {{\n"
        f"  {body}\n  return {', '.join(results)}\n}}\n"
    )


def _depends(module: Module) -> None:
    """Every operand is defined before its op, and no operand of a combined op is computed from
    another of its results."""
    func = module.main
    defined = {id(a) for a in func.args}
    ancestors: dict[int, set[int]] = {}
    for op in func.body:
        for v in op.operands:
            assert id(v) in defined, f"'{op.name}' uses a value defined after it"
        mine = set().union(*(ancestors.get(id(v), set()) for v in op.operands))
        if op.num_operands > 1 and op.name in COMBINABLE:
            assert not mine & {id(r) for r in op.results}
        for r in op.results:
            defined.add(id(r))
            ancestors[id(r)] = mine | {id(r)}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 20), st.integers(0, 20)),
                min_size=1, max_size=14),
       st.sampled_from([1, 64, 100, 10**9]))
def test_combining_keeps_the_program_and_its_results(steps, threshold) -> None:
    text = _program(steps)
    plain = parse_module(text)
    combined = parse_module(text)
    PassManager(parse_pipeline(f"combine-collectives{{threshold={threshold}}}")).run(combined)
    _depends(combined)
    again = parse_module(text)
    PassManager(parse_pipeline(f"combine-collectives{{threshold={threshold}}}")).run(again)
    assert print_module(again) == print_module(combined)  # deterministic
    for op in _collectives(combined):
        if op.num_operands > 1:
            assert sum(4 * int(np.prod(r.type.shape)) for r in op.results) <= threshold
    if any(kind == "effect" for kind, _, _ in steps):
        # The custom_call has no kernel: it stays where it was, after what it reads.
        calls = [op.operand(0) for op in combined.main.body if op.name == "custom_call"]
        assert len(calls) == sum(kind == "effect" for kind, _, _ in steps)
        return
    rng = np.random.default_rng(0)
    blocks = [{d: rng.standard_normal((4, 4)).astype(np.float32) for d in range(4)}
              for _ in range(2)]
    want = NumpyExecutor(plain).run_blocks(blocks)
    got = NumpyExecutor(combined).run_blocks(blocks)
    for w, g in zip(want, got):
        for d in range(4):
            np.testing.assert_array_equal(g[d], w[d])


def test_a_combined_collective_does_not_belong_in_a_manual_body() -> None:
    text = """
mesh @m = <["x"=2]>
func @main(%a: tensor<4xf32, <@m, [{}]>>) -> tensor<4xf32, <@m, [{}]>> {
  %0 = manual_computation %a {body = @body, in_shardings = [<@m, [{}]>], out_shardings = [<@m, [{}]>], manual_axes = ["x"]} : tensor<4xf32, <@m, [{}]>>
  return %0
}
func private @body(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0, %1 = spmd.all_reduce %x, %x {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>, tensor<4xf32>
  return %0
}
"""
    with pytest.raises(VerifyError, match="combines several operands in the body of a manual"):
        parse_module(text, "body.mlir")
