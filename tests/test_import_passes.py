"""Shardy's import passes `sdy-sharding-group-import` and `sdy-manual-axes-cleanup`, and the export
steps of `sdy-propagation-pipeline` they go with, against jaxlib's own passes run in process:
random programs, printed text compared byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")

from shardc.cli import main  # noqa: E402
from shardc.ir.diagnostics import ShardcError  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.shardy_compare import run_shardy  # noqa: E402


def ours(text: str, pipeline: str) -> str:
    from shardc.api import opt

    module = import_stablehlo(text, "case.mlir")
    opt(module, pipeline)
    return export_stablehlo(module)


def theirs(text: str, pipeline: str) -> str:
    return run_shardy(text, f"builtin.module({pipeline})")


def same(text: str, pipeline: str) -> None:
    assert ours(text, pipeline).rstrip("\n") == theirs(text, pipeline).rstrip("\n"), text


# ----- sharding groups -------------------------------------------------------------------------


@st.composite
def group_programs(draw) -> str:
    n = draw(st.integers(1, 5))
    ops = draw(
        st.lists(
            st.tuples(st.integers(0, n + 1), st.sampled_from([0, 1, 2, 5, 9, 17, 300])),
            min_size=1,
            max_size=9,
        )
    )
    args = ", ".join(f"%arg{i}: tensor<4x8xf32>" for i in range(n))
    body = "".join(f"  %{k} = stablehlo.negate %arg{k % n} : tensor<4x8xf32>\n" for k in range(2))
    values = [f"%arg{i}" for i in range(n)] + ["%0", "%1"]
    for v, g in ops:
        body += f"  sdy.sharding_group {values[v]} group_id = {g} : tensor<4x8xf32>\n"
    return (
        f"func.func @main({args}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {{\n{body}"
        "  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>\n}\n"
    )


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(group_programs())
def test_sharding_group_import_matches_shardy(text: str) -> None:
    same(text, "sdy-sharding-group-import")


def test_sharding_group_members_must_share_a_shape(tmp_path, capsys) -> None:
    path = tmp_path / "g.mlir"
    path.write_text(
        "func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<8xf32>) {\n"
        "  sdy.sharding_group %arg0 group_id = 3 : tensor<4xf32>\n"
        "  sdy.sharding_group %arg1 group_id = 3 : tensor<8xf32>\n"
        "  return\n}\n"
    )
    assert main(["opt", str(path), "-p", "sdy-sharding-group-import"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3:3: error:" in err
    assert "must have the same shape for groupId: 3" in err


def test_sharding_group_cannot_cross_a_manual_computation() -> None:
    text = """
sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>] out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%arg1: tensor<4xf32>) {
    %1 = stablehlo.negate %arg1 : tensor<4xf32>
    sdy.sharding_group %1 group_id = 4 : tensor<4xf32>
    sdy.return %1 : tensor<4xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  sdy.sharding_group %arg0 group_id = 4 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
    from shardc.api import opt

    module = import_stablehlo(text, "x.mlir")
    with pytest.raises(ShardcError, match="cannot cross ManualComputationOp boundaries") as e:
        opt(module, "sdy-sharding-group-import")
    assert "x.mlir:9:3" in str(e.value)


# ----- manual axes ------------------------------------------------------------------------------

AXES = [("x", 2), ("y", 4), ("z", 2), ("w", 8)]


@st.composite
def manual_programs(draw) -> str:
    axes = draw(st.lists(st.sampled_from(AXES), min_size=2, max_size=3, unique=True))
    mesh = ", ".join(f'"{a}"={n}' for a, n in axes)
    manual = draw(st.lists(st.sampled_from([a for a, _ in axes]), min_size=1, unique=True))
    free = [(a, n) for a, n in axes if a not in manual]

    def sharding() -> tuple[str, int]:
        """A sharding of a 64-element vector: manual axes (or a major part of one) first."""
        dim: list[str] = []
        shards = 1
        for a in draw(st.lists(st.sampled_from(manual), unique=True, max_size=2)):
            n = dict(axes)[a]
            if n > 2 and draw(st.booleans()):
                dim.append(f'"{a}":(1)2')
                shards *= 2
            else:
                dim.append(f'"{a}"')
                shards *= n
        if free and draw(st.booleans()):
            dim.append(f'"{free[0][0]}"')
        rep = [f'"{a}"' for a, _ in free[1:2] if draw(st.booleans())]
        closed = "" if draw(st.booleans()) else ", ?"
        if not dim:
            closed = "" if closed == "" else "?"
        body = ", ".join(dim) + closed if dim else closed
        text = f"<@mesh, [{{{body}}}]" + (f", replicated={{{', '.join(rep)}}}>" if rep else ">")
        return text, 64 // shards

    (ins, local_in), (outs, local_out) = sharding(), sharding()
    order = ", ".join(f'"{a}"' for a in manual)
    body = (
        f"    sdy.return %arg1 : tensor<{local_in}xf32>\n"
        if local_in == local_out
        else f"    %1 = stablehlo.slice %arg1 [0:{local_out}] : (tensor<{local_in}xf32>) -> "
        f"tensor<{local_out}xf32>\n    sdy.return %1 : tensor<{local_out}xf32>\n"
    )
    if local_out > local_in:
        body = (
            "    %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            f"    %1 = stablehlo.pad %arg1, %c, low = [0], high = [{local_out - local_in}], "
            f"interior = [0] : (tensor<{local_in}xf32>, tensor<f32>) -> tensor<{local_out}xf32>\n"
            f"    sdy.return %1 : tensor<{local_out}xf32>\n"
        )
    return (
        f"sdy.mesh @mesh = <[{mesh}]>\n"
        "func.func @main(%arg0: tensor<64xf32>) -> tensor<64xf32> {\n"
        f"  %0 = sdy.manual_computation(%arg0) in_shardings=[{ins}] out_shardings=[{outs}] "
        f"manual_axes={{{order}}} (%arg1: tensor<{local_in}xf32>) {{\n{body}"
        "  } : (tensor<64xf32>) -> tensor<64xf32>\n  return %0 : tensor<64xf32>\n}\n"
    )


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(manual_programs())
def test_manual_axes_cleanup_matches_shardy(text: str) -> None:
    try:
        expected = theirs(text, "sdy-manual-axes-cleanup")
    except Exception:  # noqa: BLE001 (a program Shardy's verifier rejects says nothing)
        return
    assert ours(text, "sdy-manual-axes-cleanup").rstrip("\n") == expected.rstrip("\n"), text


# ----- the pipeline's export steps --------------------------------------------------------------


def test_pipeline_drops_sharding_groups_and_spells_meshes_as_jaxlib() -> None:
    text = """
sdy.mesh @mesh = <["a"=2, "b"=2], device_ids=[3, 2, 1, 0]>
sdy.mesh @empty = <[]>
sdy.mesh @one = <[], device_ids=[1]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %s: tensor<f32> {sdy.sharding = #sdy.sharding<@empty, []>}, %t: tensor<f32> {sdy.sharding = #sdy.sharding<@one, []>}) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = stablehlo.add %arg1, %arg1 : tensor<8x8xf32>
  %1 = stablehlo.add %arg2, %arg2 : tensor<8x8xf32>
  sdy.sharding_group %arg0 group_id = 7 : tensor<8x8xf32>
  sdy.sharding_group %0 group_id = 7 : tensor<8x8xf32>
  sdy.sharding_group %0 group_id = 3 : tensor<8x8xf32>
  sdy.sharding_group %1 group_id = 3 : tensor<8x8xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""
    same(text, "sdy-propagation-pipeline")


# ----- call graphs ------------------------------------------------------------------------------


@st.composite
def call_graphs(draw) -> str:
    """`@main` and private functions `@f1`.. `@f3`; a function calls only later ones (acyclic),
    some calls with a sharding, some callees called from several places."""
    n = draw(st.integers(1, 3))
    funcs = []
    for k in range(n + 1):
        lines, last = [], "%arg0"
        for j in range(draw(st.integers(1, 3))):
            callee = draw(st.one_of(st.none(), st.integers(k + 1, n))) if k < n else None
            if callee is None:
                op = draw(st.sampled_from(["abs", "negate", "sine"]))
                lines.append(f"  %{j} = stablehlo.{op} {last} : tensor<8xf32>")
            else:
                attr = draw(
                    st.sampled_from(
                        ["", ' {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>}']
                    )
                )
                lines.append(
                    f"  %{j} = call @f{callee}({last}){attr} : (tensor<8xf32>) -> tensor<8xf32>"
                )
            last = f"%{j}"
        name, vis = ("main", "") if k == 0 else (f"f{k}", "private ")
        arg = (
            ' {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}'
            if k == 0 and draw(st.booleans())
            else ""
        )
        funcs.append(
            f"func.func {vis}@{name}(%arg0: tensor<8xf32>{arg}) -> tensor<8xf32> {{\n"
            + "\n".join(lines)
            + f"\n  return {last} : tensor<8xf32>\n}}\n"
        )
    return 'sdy.mesh @mesh = <["x"=2]>\n' + "".join(funcs)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(call_graphs())
def test_call_graph_import_matches_shardy(text: str) -> None:
    same(text, "sdy-import-func-calls")
    same(text, "sdy-flatten-call-graph,sdy-import-func-calls")


# ----- constant splitting -----------------------------------------------------------------------


@st.composite
def constant_programs(draw) -> str:
    """Constants, iotas and scalar broadcasts, element-wise chains of them, used several times by
    ops that are not constant (and by sharding groups)."""
    lines = [
        "  %s = stablehlo.constant dense<2.000000e+00> : tensor<f32>",
        "  %c0 = stablehlo.constant dense<1.000000e+00> : tensor<8x4xf32>",
    ]
    consts, values = ["%c0"], ["%arg0"]
    for k in range(1, draw(st.integers(3, 8))):
        kind = draw(st.sampled_from(["const", "iota", "bcast", "cexpr", "use", "group"]))
        if kind == "const":
            lines.append(f"  %c{k} = stablehlo.constant dense<3.000000e+00> : tensor<8x4xf32>")
            consts.append(f"%c{k}")
        elif kind == "iota":
            lines.append(f"  %c{k} = stablehlo.iota dim = 1 : tensor<8x4xf32>")
            consts.append(f"%c{k}")
        elif kind == "bcast":
            lines.append(
                f"  %c{k} = stablehlo.broadcast_in_dim %s, dims = [] : "
                "(tensor<f32>) -> tensor<8x4xf32>"
            )
            consts.append(f"%c{k}")
        elif kind == "cexpr":
            a = draw(st.sampled_from(consts))
            lines.append(f"  %c{k} = stablehlo.negate {a} : tensor<8x4xf32>")
            consts.append(f"%c{k}")
        elif kind == "group":
            lines.append(
                f"  sdy.sharding_group {draw(st.sampled_from(consts))} group_id = 0 "
                ": tensor<8x4xf32>"
            )
        else:
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(consts))
            lines.append(f"  %v{k} = stablehlo.add {a}, {b} : tensor<8x4xf32>")
            values.append(f"%v{k}")
    uses = [
        f"  %u{i} = stablehlo.multiply {values[-1]}, {c} : tensor<8x4xf32>"
        for i, c in enumerate(draw(st.lists(st.sampled_from(consts), min_size=2, max_size=3)))
    ]
    results = [f"%u{i}" for i in range(len(uses))]
    types = ", ".join(["tensor<8x4xf32>"] * len(results))
    return (
        f"func.func @main(%arg0: tensor<8x4xf32>) -> ({types}) {{\n"
        + "\n".join(lines + uses)
        + f"\n  return {', '.join(results)} : {types}\n}}\n"
    )


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(constant_programs())
def test_constant_splitter_matches_shardy(text: str) -> None:
    same(text, "sdy-constant-or-scalar-splitter")


# Helpers a constant sub-computation may call: @table and @nested compute a constant from
# nothing, @shift maps a constant to a constant, @mixed holds a reduction (not constant) and
# @loop a while (its region is part of it, so it is not constant either).
_HELPERS = """
func.func private @table() -> tensor<8x4xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<8x4xf32>
  %1 = stablehlo.cosine %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
func.func private @nested() -> tensor<8x4xf32> {
  %0 = call @table() : () -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
func.func private @shift(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<8x4xf32>
  %0 = stablehlo.add %arg0, %cst : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func private @mixed(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<8xf32>) -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
func.func private @loop(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c) : tensor<8x4xf32>, tensor<i32>
    cond {
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %1 = stablehlo.compare  LT, %iterArg_0, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %iterArg_0, %c_1 : tensor<i32>
    %2 = stablehlo.sine %iterArg : tensor<8x4xf32>
    stablehlo.return %2, %1 : tensor<8x4xf32>, tensor<i32>
  }
  return %0#0 : tensor<8x4xf32>
}
"""  # noqa: E501


@st.composite
def constant_call_programs(draw) -> str:
    """Calls of the helpers above with constant operands (or not), used by several ops that are
    not constant, by each other and by sharding groups."""
    t = "tensor<8x4xf32>"
    lines = [f"  %c0 = stablehlo.constant dense<2.000000e+00> : {t}"]
    consts, values = ["%c0"], ["%arg0"]
    for k in range(1, draw(st.integers(3, 9))):
        kind = draw(st.sampled_from(["table", "nested", "shift", "mixed", "loop", "use", "group"]))
        if kind in ("table", "nested"):
            lines.append(f"  %c{k} = call @{kind}() : () -> {t}")
            consts.append(f"%c{k}")
        elif kind == "group":
            lines.append(f"  sdy.sharding_group {draw(st.sampled_from(consts))} group_id = 0 : {t}")
        elif kind == "use":
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(consts))
            lines.append(f"  %v{k} = stablehlo.add {a}, {b} : {t}")
            values.append(f"%v{k}")
        else:  # a helper of one operand: a constant, or a value that is not
            x = draw(st.sampled_from(consts + values))
            lines.append(f"  %c{k} = call @{kind}({x}) : ({t}) -> {t}")
            (consts if x in consts else values).append(f"%c{k}")
    uses = [f"  %u{i} = stablehlo.multiply {values[-1]}, {c} : {t}"
            for i, c in enumerate(draw(st.lists(st.sampled_from(consts), min_size=2, max_size=3)))]
    results = ", ".join(f"%u{i}" for i in range(len(uses)))
    types = ", ".join([t] * len(uses))
    return (f"func.func @main(%arg0: {t}) -> ({types}) {{\n" + "\n".join(lines + uses)
            + f"\n  return {results} : {types}\n}}\n" + _HELPERS)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(constant_call_programs())
def test_constant_calls_are_split_as_shardy_splits_them(text: str) -> None:
    """jaxlib's module-level splitter (Shardy 2bb09b41): a call of a constant function with
    constant operands is copied per user, callee and all (`@table_0`, ...)."""
    same(text, "sdy-constant-or-scalar-splitter")
    same(text, "sdy-constant-or-scalar-splitter,symbol-dce,sdy-flatten-call-graph")


def test_import_pipeline_matches_shardy() -> None:
    text = """
sdy.mesh @mesh = <["c"=2, "a"=2, "one"=1]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c", "one"}]>}) -> tensor<8xf32> {
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
  %0 = stablehlo.add %arg0, %cst : tensor<8xf32>
  %1 = stablehlo.multiply %0, %cst : tensor<8xf32>
  %2 = sdy.manual_computation(%1) in_shardings=[<@mesh, [{"c", ?}]>] out_shardings=[<@mesh, [{"c", ?}]>] manual_axes={"a", "c"} (%arg1: tensor<4xf32>) {
    %3 = stablehlo.negate %arg1 : tensor<4xf32>
    sdy.return %3 : tensor<4xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  %4 = call @f(%2) : (tensor<8xf32>) -> tensor<8xf32>
  %5 = stablehlo.optimization_barrier %4 : tensor<8xf32>
  return %5 : tensor<8xf32>
}
func.func private @f(%arg0: tensor<8xf32>) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}) {
  %0 = stablehlo.abs %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @unused(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
"""
    same(text, "sdy-import-pipeline")


# ----- inline meshes ---------------------------------------------------------------------------

_MESH_TEXTS = ['<["x"=2, "y"=4]>', '<["x"=2, "y"=2]>', "<[]>", "<[], device_ids=[3]>",
               "<[], device_ids=[7]>", '<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>']


def _sharding_on(mesh_text: str, ref: str) -> str:
    dims = "" if "device_ids=[" in mesh_text and '"' not in mesh_text else (
        '{"x"}, {}' if '"x"' in mesh_text else "{}, {}")
    return f"<{ref}, [{dims}]>"


@st.composite
def inline_mesh_programs(draw) -> str:
    named = draw(st.lists(st.sampled_from(_MESH_TEXTS[:2] + _MESH_TEXTS[5:]), max_size=3))
    names = ["mesh", "mesh_0", "copy"][: len(named)]
    decls = "".join(f"sdy.mesh @{n} = {t}\n" for n, t in zip(names, named))
    refs = [(t, f"@{n}") for n, t in zip(names, named)] + [
        (t, f"mesh{t}") for t in _MESH_TEXTS]
    picks = draw(st.lists(st.sampled_from(refs), min_size=1, max_size=5))
    body, prev = "", "%arg0"
    for k, (t, ref) in enumerate(picks):
        sh = _sharding_on(t, ref)
        body += (f"  %{k} = stablehlo.add {prev}, {prev} {{sdy.sharding = "
                 f"#sdy.sharding_per_value<[{sh}]>}} : tensor<8x8xf32>\n")
        prev = f"%{k}"
    return (f"{decls}func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {{\n{body}"
            f"  return {prev} : tensor<8x8xf32>\n}}\n")


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(inline_mesh_programs())
def test_lift_inlined_meshes_is_jaxlibs(text: str) -> None:
    """Inline meshes get jaxlib's names (`@mesh`, `@mesh_0`, `@empty_mesh`, `@maximal_mesh_3`),
    equal named meshes merge into the first, in jaxlib's order."""
    same(text, "sdy-lift-inlined-meshes")
