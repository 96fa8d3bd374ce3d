"""insert-reshards: the factor choice, and the invariant the SPMD pass relies on."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.commands.text_io import split_input
from shardc.ir.builder import Builder
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.parser import parse_module
from shardc.ir.verifier import verify_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.propagation.factor_axes import choose_factor_axes
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.passes.reshard.reshards.invariant import check_locally_computable

load_all_passes()
FILECHECK = Path(__file__).parent.parent / "filecheck" / "reshard"


def run(module, pipeline: str) -> PassContext:
    return PassManager(parse_pipeline(pipeline)).run(module, PassContext())


def chunks(name: str) -> list[str]:
    return [c.text for c in split_input((FILECHECK / name).read_text(), True)]


# ----- the factor choice (pure) ---------------------------------------------------------------

MESH = DeviceMesh.create("m", {"x": 4, "y": 2})
DOT = parse_rule("([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}")


def spec(*entries) -> NamedMapping:
    return NamedMapping.from_spec(entries, MESH)


def axes(*names: str) -> tuple[AxisRef, ...]:
    return tuple(AxisRef(n) for n in names)


def test_compatible_shardings_are_kept() -> None:
    got = choose_factor_axes(
        DOT, [spec("x", "y"), spec("y", None)], [spec("x", None)], [256, 512, 128], MESH
    )
    assert got == [axes("x"), (), axes("y")]  # i, j, k


def test_larger_sources_win() -> None:
    # Shardy's dot_incompatible_same_non_contracting_dims_out_empty: k="y" has the largest
    # sources (both operands), then j="x" (rhs, 512) beats i="x" (lhs, 256).
    got = choose_factor_axes(
        DOT, [spec("x", "y"), spec("y", "x")], [spec(None, None)], [256, 512, 128], MESH
    )
    assert got == [(), axes("x"), axes("y")]


def test_need_replication_and_permutation_stay_unsharded() -> None:
    rule = parse_rule("([i, j])->([i, j]) {i=8, j=8} need_replication={i} permutation={j}")
    got = choose_factor_axes(rule, [spec("x", "y")], [spec("x", "y")], [64, 64], MESH)
    assert got == [(), ()]


def test_no_axis_serves_two_factors() -> None:
    # add(a: [{"x"}, {}], b: [{}, {"x"}]) -> [{"x"}, {"x"}] is impossible; one factor keeps "x".
    rule = parse_rule("([i, j], [i, j])->([i, j]) {i=8, j=8}")
    got = choose_factor_axes(
        rule, [spec("x", None), spec(None, "x")], [spec("x", None)], [64, 64, 64], MESH
    )
    assert got == [axes("x"), ()]


# ----- the pass on hand-written programs ------------------------------------------------------


@pytest.mark.parametrize("name", ["insert_reshards.mlir", "lower_collectives.mlir"])
def test_filecheck_inputs_become_locally_computable(name: str) -> None:
    for text in chunks(name):
        module = parse_module(text)
        run(module, "insert-reshards")
        assert check_locally_computable(module) == []


def test_check_finds_violations() -> None:
    module = parse_module(
        'mesh @m = <["x"=4, "y"=2]>\n'
        'func @main(%a: tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>, '
        '%b: tensor<32x16xf32, <@m, [{}, {"x"}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>> {\n'
        "  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} "
        ': tensor<8x16xf32, <@m, [{"x"}, {}]>>\n'
        '  %1 = sharding_constraint %0 : tensor<8x16xf32, <@m, [{"x"}, {}]>>\n'
        "  return %1\n}\n"
    )
    problems = check_locally_computable(module)
    assert any("factor" in p and "dot_general" in p for p in problems)
    assert any("unreduced" in p for p in problems)  # k is sharded but the result is reduced
    assert any("sharding_constraint" in p and "left" in p for p in problems)
    run(module, "insert-reshards")
    assert check_locally_computable(module) == []


@pytest.mark.parametrize(
    ("x", "out", "problem"),
    [
        ('[{"x"}, {"y"}]', '[{"x"}, {}]', "last dim sharded"),
        ('[{"x"}, {}]', '[{"y"}, {}]', "rows sharded differently"),
        ('[{"x", "y"}, {}]', '[{"x", "y"}, {}]', None),
    ],
)
def test_top_k_runs_per_device_on_whole_rows(x: str, out: str, problem: str | None) -> None:
    module = parse_module(
        'mesh @m = <["x"=4, "y"=2]>\n'
        f"func @main(%a: tensor<8x32xf32, <@m, {x}>>) -> tensor<8x2xf32, <@m, {out}>> {{\n"
        f"  %0, %1 = top_k %a {{k = 2}} : tensor<8x2xf32, <@m, {out}>>, "
        f"tensor<8x2xi32, <@m, {out}>>\n"
        "  return %0\n}\n"
    )
    problems = check_locally_computable(module)
    if problem is None:
        assert problems == []
        return
    assert any("top_k" in p and problem in p for p in problems), problems
    run(module, "insert-reshards")
    assert check_locally_computable(module) == []


def test_unreduced_operands_are_reduced_before_use() -> None:
    module = parse_module(
        'mesh @m = <["x"=4]>\n'
        'func @main(%u: tensor<8xf32, <@m, [{}], unreduced={"x"}>>) -> tensor<8xf32, <@m, [{}]>> {\n'
        "  %0 = tanh %u : tensor<8xf32, <@m, [{}]>>\n  return %0\n}\n"
    )
    assert check_locally_computable(module)
    run(module, "insert-reshards,lower-collectives")
    assert check_locally_computable(module) == []
    assert [op.name for op in module.main.body] == ["all_reduce", "tanh", "return"]


def test_declared_unreduced_result_that_cannot_be_made_is_an_error() -> None:
    module = parse_module(
        'mesh @m = <["x"=4]>\n'
        'func @main(%a: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32, <@m, [{}], unreduced={"x"}>> {\n'
        "  return %a\n}\n"
    )
    with pytest.raises(PassError, match="cannot create partial values") as e:
        run(module, "insert-reshards")
    assert e.value.loc is not None and e.value.loc.line == 3


def test_partial_version_is_refused() -> None:
    with pytest.raises(PassError, match="full version"):
        run(
            parse_module('mesh @m = <["x"=2]>\nfunc @main() {\n  return\n}\n'),
            "insert-reshards{enable-full-version=false}",
        )


# ----- property: arbitrary decided shardings become locally computable ------------------------


def random_mapping(rng: random.Random, mesh: DeviceMesh, rank: int) -> NamedMapping:
    """Each mesh axis goes to a random dim (or nowhere); dims list their axes in random order."""
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    for name in mesh.axis_names:
        where = rng.randrange(rank + 1) if rank else rank
        if where < rank:
            dims[where].append(AxisRef(name))
    for d in dims:
        rng.shuffle(d)
    return NamedMapping(mesh, tuple(DimSharding(tuple(d), True) for d in dims))


def random_program(rng: random.Random):
    """An MLP-like block whose every value has an arbitrary (valid) sharding: what an
    unlucky propagation could have decided."""
    b = Builder()
    sizes = rng.choice([{"x": 2, "y": 2}, {"x": 4, "y": 2}, {"x": 2, "y": 3}])
    handle = b.mesh("m", sizes)
    mesh = handle.mesh
    m, k, n = rng.choice([4, 6, 8]), rng.choice([4, 8, 10]), rng.choice([4, 8, 12])

    def shard(v):
        v.set_mapping(random_mapping(rng, mesh, v.type.rank))
        return v

    with b.function("main") as f:
        x = f.arg((m, k), "f32", random_mapping(rng, mesh, 2), "x")
        w = f.arg((k, n), "f32", random_mapping(rng, mesh, 2), "w")
        c = f.arg((m, n), "f32", random_mapping(rng, mesh, 2), "c")
        h = shard(b.matmul(x, w))
        t = shard(b.tanh(h))
        s = shard(b.add(t, c))
        tr = shard(b.transpose(s, (1, 0)))
        r = shard(b.reduce(s, (1,)))
        d = shard(b.matmul(tr, s))
        f.returns(d, r, mappings=[random_mapping(rng, mesh, 2), random_mapping(rng, mesh, 1)])
    for v in (b.module.main.return_op.operands[1].defining_op.operand(1),):
        v.set_mapping(NamedMapping.fully_replicated(mesh, 0))  # the reduce's init scalar
    verify_module(b.module)
    return b.module


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_any_sharding_becomes_locally_computable(rng: random.Random) -> None:
    module = random_program(rng)
    run(module, "insert-reshards")
    assert check_locally_computable(module) == []
    again = run(module, "insert-reshards")  # idempotent: nothing left to fix
    assert again.data["insert_reshards"]["reshards"] == 0
    ctx = run(module, "lower-collectives,canonicalize")
    assert check_locally_computable(module) == []
    assert not ctx.warnings or all("cannot be written" in w.message for w in ctx.warnings)
    kept = [op for op in module.walk() if op.name == "reshard"]
    assert len(kept) == len(ctx.warnings)
