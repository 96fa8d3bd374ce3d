"""`manual_computation` (jax.shard_map) on the native IR: verifier, propagation against Shardy's
stored decisions, and the sharded program on every executor against the unsharded math."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import PassError, VerifyError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.pipeline import compile

DATA = Path(__file__).parent / "data" / "stablehlo"
MESH = 'mesh @mesh = <["dp"=2, "tp"=4]>\n\n'
GROUPS_TP = "[[0, 1, 2, 3], [4, 5, 6, 7]]"

# tests/data/stablehlo/shard_map.mlir, hand-converted (the body outlined, psum = spmd.all_reduce).
SHARD_MAP = MESH + f"""\
func @main(%x: tensor<16x32xf32, <@mesh, [{{"dp"}}, {{"tp"}}]>>, %w: tensor<32x64xf32, <@mesh, [{{"tp"}}, {{}}]>>) -> tensor<16x64xf32> {{
  %cst = constant {{value = dense<1.0>}} : tensor<f32>
  %0 = broadcast_in_dim %cst {{broadcast_dimensions = []}} : tensor<16x32xf32>
  %1 = add %x, %0 : tensor<16x32xf32>
  %2 = manual_computation %1, %w {{body = @main_manual, in_shardings = [<@mesh, [{{"dp"}}, {{"tp"}}]>, <@mesh, [{{"tp"}}, {{}}]>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{{"dp"}}, {{}}]>]}} : tensor<16x64xf32>
  %3 = exponential %2 : tensor<16x64xf32>
  %cst_0 = constant {{value = dense<2.0>}} : tensor<f32>
  %4 = broadcast_in_dim %cst_0 {{broadcast_dimensions = []}} : tensor<16x64xf32>
  %5 = multiply %3, %4 : tensor<16x64xf32>
  return %5
}}

func private @main_manual(%a: tensor<8x8xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {{
  %0 = dot_general %a, %b {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<8x64xf32>
  %1 = spmd.all_reduce %0 {{axes = ["tp"], kind = add, groups = {GROUPS_TP}}} : tensor<8x64xf32>
  return %1
}}
"""

# tests/data/stablehlo/shard_map_partial.mlir: manual over "tp" only.
SHARD_MAP_PARTIAL = MESH + f"""\
func @main(%x: tensor<16x32xf32, <@mesh, [{{"dp"}}, {{"tp"}}]>>, %w: tensor<32x64xf32, <@mesh, [{{"tp"}}, {{}}]>>) -> tensor<16x64xf32> {{
  %0 = manual_computation %x, %w {{body = @main_manual, in_shardings = [<@mesh, [{{?}}, {{"tp", ?}}]>, <@mesh, [{{"tp", ?}}, {{?}}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{{?}}, {{?}}]>]}} : tensor<16x64xf32>
  %cst = constant {{value = dense<1.0>}} : tensor<f32>
  %1 = broadcast_in_dim %cst {{broadcast_dimensions = []}} : tensor<16x64xf32>
  %2 = add %0, %1 : tensor<16x64xf32>
  return %2
}}

func private @main_manual(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>) -> tensor<16x64xf32> {{
  %0 = dot_general %a, %b {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x64xf32>
  %1 = sharding_constraint %0 : tensor<16x64xf32, <@mesh, [{{?}}, {{?}}]>>
  %2 = spmd.all_reduce %1 {{axes = ["tp"], kind = add, groups = {GROUPS_TP}}} : tensor<16x64xf32>
  return %2
}}
"""

# Manual over "tp" with a free-axis reshard inside the body (an all_gather over "dp" there).
PARTIAL_RESHARD = MESH + f"""\
func @main(%x: tensor<16x32xf32, <@mesh, [{{"dp"}}, {{"tp"}}]>>, %w: tensor<32x64xf32, <@mesh, [{{"tp"}}, {{}}]>>) -> tensor<16x64xf32> {{
  %0 = manual_computation %x, %w {{body = @body, in_shardings = [<@mesh, [{{?}}, {{"tp", ?}}]>, <@mesh, [{{"tp", ?}}, {{?}}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{{?}}, {{?}}]>]}} : tensor<16x64xf32>
  %1 = tanh %0 : tensor<16x64xf32>
  return %1
}}

func private @body(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>) -> tensor<16x64xf32> {{
  %0 = dot_general %a, %b {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : tensor<16x64xf32>
  %1 = sharding_constraint %0 : tensor<16x64xf32, <@mesh, [{{}}, {{"dp"}}]>>
  %2 = spmd.all_reduce %1 {{axes = ["tp"], kind = add, groups = {GROUPS_TP}}} : tensor<16x64xf32>
  return %2
}}
"""

# All-gather, axis_index and a ring collective_permute; two results; an argument returned as is.
COLLECTIVES = """\
mesh @m = <["x"=4, "y"=2]>

func @main(%x: tensor<16x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %0, %1, %2 = manual_computation %x {body = @body, in_shardings = [<@m, [{"x"}, {}]>], manual_axes = ["x"], out_shardings = [<@m, [{}, {}]>, <@m, [{"x"}, {}]>, <@m, [{}, {"x"}]>]} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return %0, %1, %2
}

func private @body(%a: tensor<4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>, tensor<16x2xf32>) {
  %i = spmd.axis_index {axes = ["x"]} : tensor<i32>
  %f = convert %i : tensor<f32>
  %b = broadcast_in_dim %f {broadcast_dimensions = []} : tensor<4x8xf32>
  %c = add %a, %b : tensor<4x8xf32>
  %g = spmd.all_gather %c {axes = ["x"], dim = 0, groups = [[0, 2, 4, 6], [1, 3, 5, 7]]} : tensor<16x8xf32>
  %p = spmd.collective_permute %a {pairs = [[0, 2], [2, 4], [4, 6], [6, 0], [1, 3], [3, 5], [5, 7], [7, 1]]} : tensor<4x8xf32>
  %t = spmd.all_to_all %g {axes = ["x"], split_dim = 1, concat_dim = 0, groups = [[0, 2, 4, 6], [1, 3, 5, 7]]} : tensor<64x2xf32>
  %s = slice %t {start_indices = [0, 0], limit_indices = [16, 2]} : tensor<16x2xf32>
  return %g, %p, %s
}
"""


# A body that returns its argument (twice): the results are other global tensors than the operand.
IDENTITY = """\
mesh @m = <["x"=4, "y"=2]>

func @main(%x: tensor<16x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<4x32xf32>, tensor<16x8xf32>) {
  %0, %1 = manual_computation %x {body = @body, in_shardings = [<@m, [{"x"}, {}]>], manual_axes = ["x"], out_shardings = [<@m, [{}, {"x"}]>, <@m, [{"x"}, {}]>]} : tensor<4x32xf32>, tensor<16x8xf32>
  return %0, %1
}

func private @body(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  return %a, %a
}
"""


def _rng_inputs(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]


def _shard_map_math(x, w):
    return [np.exp((x + 1.0) @ w) * 2.0]


def _collectives_math(x):
    gathered = x + np.repeat(np.arange(4, dtype=np.float32), 4)[:, None]
    rolled = np.roll(x.reshape(4, 4, 8), 1, axis=0).reshape(16, 8)
    # all_to_all(split dim 1, concat dim 0): device i holds columns 2i..2i+1 of all 64 rows of
    # gathered stacked four times... every device's first 16 rows are gathered[:, 2i:2i+2].
    columns = np.concatenate([gathered[:, 2 * i : 2 * i + 2] for i in range(4)], axis=1)
    return [gathered, rolled, columns]


PROGRAMS = {
    "shard_map": (SHARD_MAP, ((16, 32), (32, 64)), _shard_map_math),
    "shard_map_partial": (SHARD_MAP_PARTIAL, ((16, 32), (32, 64)), lambda x, w: [x @ w + 1.0]),
    "partial_reshard": (PARTIAL_RESHARD, ((16, 32), (32, 64)), lambda x, w: [np.tanh(x @ w)]),
    "collectives": (COLLECTIVES, ((16, 8),), _collectives_math),
    "identity": (
        IDENTITY,
        ((16, 8),),
        lambda x: [np.concatenate([x[4 * i : 4 * i + 4] for i in range(4)], axis=1), x],
    ),
}


def _run(text: str, pipeline: str) -> str:
    load_all_passes()
    module = parse_module(text)
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return print_module(module)


# ----- parse, print, verify ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_round_trip(name: str) -> None:
    text = PROGRAMS[name][0]
    assert print_module(parse_module(text)) == text


def _body_error(body: str, *, op: str | None = None, args: str = "%a: tensor<8x8xf32>") -> str:
    op = op or (
        '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>], '
        'manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {"tp"}]>]} '
        ": tensor<16x32xf32>"
    )
    return MESH + (
        f"func @main(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {{\n  {op}\n  return %0\n}}\n\n"
        f"func private @body({args}) -> tensor<8x8xf32> {{\n{body}\n}}\n"
    )


ERRORS = {
    "body_missing": (
        MESH + 'func @main(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {\n  %0 = manual_computation '
        '%x {body = @nope, in_shardings = [<@mesh, [{}, {}]>], manual_axes = [], out_shardings = '
        '[<@mesh, [{}, {}]>]} : tensor<16x32xf32>\n  return %0\n}\n',
        "body @nope is not defined in this module",
    ),
    "global_body_type": (
        _body_error("  return %a", args="%a: tensor<16x32xf32>"),
        "body @body argument 0 has type tensor<16x32xf32>, but operand 0 (tensor<16x32xf32>) split "
        'by the manual axes of <@mesh, [{"dp"}, {"tp"}]> is tensor<8x8xf32>',
    ),
    "manual_after_free": (
        _body_error(
            "  return %a",
            op='%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp", "tp"}, '
            '{}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{"dp", "tp"}, {}]>]} : '
            "tensor<16x32xf32>",
        ),
        'manual axis "tp" comes after free axis "dp" in dim 0; manual axes must be the major-most',
    ),
    "unknown_manual_axis": (
        _body_error("  return %a", op=(
            '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>],'
            ' manual_axes = ["pp"], out_shardings = [<@mesh, [{"dp"}, {"tp"}]>]} '
            ": tensor<16x32xf32>")),
        'manual axis "pp" is not an axis of @mesh',
    ),
    "uneven_manual": (
        MESH + 'func @main(%x: tensor<10x8xf32>) -> tensor<10x8xf32> {\n  %0 = manual_computation '
        '%x {body = @body, in_shardings = [<@mesh, [{"tp"}, {}]>], manual_axes = ["tp"], '
        'out_shardings = [<@mesh, [{"tp"}, {}]>]} : tensor<10x8xf32>\n  return %0\n}\n',
        "dim 0 of size 10 does not split evenly over its manual axes",
    ),
    "manual_dim_priority": (
        _body_error("  return %a", op=(
            '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}p1, {"tp"}'
            ']>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {"tp"}]>]} '
            ": tensor<16x32xf32>")),
        "dim 0 has manual axes, so it cannot carry a priority",
    ),
    "sharding_count": (
        _body_error("  return %a", op=(
            '%0 = manual_computation %x {body = @body, in_shardings = [], manual_axes = ["dp", '
            '"tp"], out_shardings = [<@mesh, [{"dp"}, {"tp"}]>]} : tensor<16x32xf32>')),
        "has 1 operands but 0 in_shardings",
    ),
    "unreduced": (
        _body_error("  return %a", op=(
            '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}, {}], '
            'unreduced={"tp"}>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, '
            '{"tp"}]>]} : tensor<16x32xf32>')),
        "manual axes cannot be unreduced",
    ),
    "manual_axis_inside": (
        _body_error('  %0 = negate %a : tensor<8x8xf32, <@mesh, [{"tp"}, {}]>>\n  return %0'),
        '%0 is sharded on manual axis "tp"',
    ),
    "free_axis_collective": (
        _body_error(
            '  %0 = spmd.all_reduce %a {axes = ["dp"], kind = add, groups = [[0, 4], [1, 5], '
            "[2, 6], [3, 7]]} : tensor<8x8xf32>\n  return %0",
            op='%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{}, {"tp"}]>], '
            'manual_axes = ["tp"], out_shardings = [<@mesh, [{}, {"tp"}]>]} : tensor<16x32xf32>',
            args="%a: tensor<16x8xf32>",
        ).replace("-> tensor<8x8xf32>", "-> tensor<16x8xf32>").replace("8x8", "16x8"),
        'communicates over "dp", which is not a manual axis',
    ),
    "mixed_groups": (
        _body_error(
            '  %0 = spmd.all_reduce %a {axes = ["tp"], kind = add, groups = [[0, 1, 2, 7], '
            "[4, 5, 6, 3]]} : tensor<16x8xf32>\n  return %0",
            op='%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{}, {"tp"}]>], '
            'manual_axes = ["tp"], out_shardings = [<@mesh, [{}, {"tp"}]>]} : tensor<16x32xf32>',
            args="%a: tensor<16x8xf32>",
        ).replace("-> tensor<8x8xf32>", "-> tensor<16x8xf32>"),
        "joins devices that differ along free axes",
    ),
    "result_sharding": (
        _body_error("  return %a", op=(
            '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>],'
            ' manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {"tp"}]>]} '
            ': tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>')),
        'result 0 has sharding <@mesh, [{"dp"}, {}]>, but out_shardings[0] is',
    ),
    "body_public": (
        _body_error("  return %a").replace("func private @body", "func @body"),
        "body @body must be a private function",
    ),
    "spmd_op_outside": (
        MESH + 'func @main(%x: tensor<8xf32>) -> tensor<8xf32> {\n  %0 = spmd.all_reduce %x {axes '
        f'= ["tp"], kind = add, groups = {GROUPS_TP}}} : tensor<8xf32>\n  return %0\n}}\n',
        "'spmd.all_reduce' op is a per-device collective, but @main is neither the body of a "
        "manual_computation nor an SPMD program",
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_verifier_errors_are_located(name: str) -> None:
    text, message = ERRORS[name]
    with pytest.raises(VerifyError) as exc:
        parse_module(text, "t.mlir")
    assert message in exc.value.message, exc.value.message
    assert exc.value.loc is not None and exc.value.loc.file == "t.mlir" and exc.value.loc.line > 0


def test_a_free_axis_may_be_unreduced() -> None:
    """As in Shardy: an in/out sharding unreduced on a free axis verifies (the body's values stay
    unreduced on it); unreduced on a manual axis is the error above."""
    text = _body_error("  return %a", args="%a: tensor<8x32xf32>", op=(
        '%0 = manual_computation %x {body = @body, in_shardings = [<@mesh, [{"dp"}, {}], '
        'unreduced={"tp"}>], manual_axes = ["dp"], out_shardings = [<@mesh, [{"dp"}, {}], '
        'unreduced={"tp"}>]} : tensor<16x32xf32>')).replace("-> tensor<8x8xf32>",
                                                           "-> tensor<8x32xf32>")
    module = parse_module(text, "t.mlir")
    (op,) = [o for o in module.main.body if o.name == "manual_computation"]
    assert str(op.attributes["in_shardings"][0].unreduced[0]) == '"tp"'


def test_spmd_ops_parse_in_spmd_programs() -> None:
    """A function the spmd pass made (it records `in_shapes`) may use spmd.* ops anywhere."""
    text = MESH + (
        "func @main(%x: tensor<8xf32>) -> tensor<8xf32> attributes {mesh = @mesh, in_shapes = "
        '[[8]], in_shardings = [<@mesh, [{}]>], out_shapes = [[8]], out_shardings = [<@mesh, '
        f'[{{}}]>]}} {{\n  %0 = spmd.all_reduce %x {{axes = ["tp"], kind = add, groups = '
        f"{GROUPS_TP}}} : tensor<8xf32>\n  return %0\n}}\n"
    )
    assert print_module(parse_module(text)) == text


# ----- propagation: the same decisions as Shardy ---------------------------------------------


def _shardy_values(path: Path) -> dict[str, str]:
    """Sharding text per SSA value of Shardy's output (`%3`), plus `in`/`out` of the
    manual_computation and `result` of @main."""
    text = path.read_text()
    out: dict[str, str] = {}
    for m in re.finditer(r"(%\d+) = [^\n]*?sdy\.sharding_per_value<\[(<[^\n]*?>)\]>", text):
        out[m.group(1)] = m.group(2)
    for m in re.finditer(r"(%\d+) = sdy\.reshard %\d+ (<[^\n]*?>) :", text):
        out[m.group(1)] = m.group(2)
    reduce = r'(%\d+) = "stablehlo\.all_reduce".*?\}\) \{sdy\.sharding = [^<]*<\[(<[^\n]*?>)\]>'
    for m in re.finditer(reduce, text, re.S):  # its reducer region spans lines
        out[m.group(1)] = m.group(2)
    mc = re.search(r"in_shardings=\[(.*?)\] out_shardings=\[(.*?)\] manual_axes", text)
    assert mc is not None
    out["in"], out["out"] = mc.group(1), mc.group(2)
    result = re.search(r"-> \(tensor<[^>]*> \{[^}]*sdy\.sharding = #sdy\.sharding(<[^\n]*?>)\}\)", text)
    assert result is not None
    out["result"] = result.group(1)
    return out


def _ours(text: str) -> dict[str, str]:
    load_all_passes()
    module = parse_module(text)
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    values: dict[str, str] = {}
    for func in module.functions.values():
        for op in func.body:
            for r in op.results:
                if r.name_hint is not None:
                    values[f"@{func.name} %{r.name_hint}"] = str(r.mapping)
            if op.name == "manual_computation":
                values["in"] = ", ".join(str(m) for m in op.attributes["in_shardings"])
                values["out"] = ", ".join(str(m) for m in op.attributes["out_shardings"])
    values["result"] = str(module.main.result_types[0].mapping)
    return values


# (shardc value, Shardy value) pairs: every value Shardy annotates, outside and inside the body,
# but broadcast constants (both tools split constant sub-computations per user; see
# tests/shardy_compare.py).
AGREEMENT = {
    "shard_map": {
        "@main %1": "%2", "@main %2": "out", "@main %3": "%4", "@main %5": "%7",
        "in": "in", "out": "out", "result": "result",
    },
    "shard_map_partial": {
        "@main %0": "out", "@main %2": "%3", "@main_manual %0": "%4", "@main_manual %1": "%5",
        "@main_manual %2": "%6", "in": "in", "out": "out", "result": "result",
    },
}


@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_propagation_matches_shardy(name: str) -> None:
    ours = _ours(PROGRAMS[name][0])
    theirs = _shardy_values(DATA / "extras" / f"{name}.open.mlir")
    for mine, their in AGREEMENT[name].items():
        assert ours[mine] == theirs[their], (mine, ours[mine], their, theirs[their])
    if name == "shard_map":  # Shardy annotates nothing in a fully manual body
        assert ours["@main_manual %0"] == "None" and ours["@main_manual %1"] == "None"


def test_manual_axes_never_enter_from_outside() -> None:
    """A result replicated over a manual axis cannot be sharded on it by its users."""
    text = SHARD_MAP_PARTIAL.replace(
        "-> tensor<16x64xf32> {", '-> tensor<16x64xf32, <@mesh, [{"tp"}, {}]>> {', 1
    )
    ours = _ours(text)
    assert ours["out"] == '<@mesh, [{"dp", ?}, {?}], replicated={"tp"}>'


def test_propagation_is_idempotent() -> None:
    once = _run(SHARD_MAP_PARTIAL, "propagate")
    assert _run(once, "propagate") == once


# ----- the sharded program on every executor --------------------------------------------------


def _backends() -> list[str]:
    return ["numpy", "jax", "jax-global"]


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_executors_match_the_unsharded_math(name: str, backend: str) -> None:
    if backend.startswith("jax"):
        pytest.importorskip("jax")
    text, shapes, math_fn = PROGRAMS[name]
    inputs = _rng_inputs(*shapes)
    want = math_fn(*inputs)
    reference = run_reference(parse_module(text), inputs, check_types=True)
    if backend == "jax-global":  # the global program, the body under jax.shard_map
        import jax

        from shardc.executors.jax_global import global_function

        got = [np.asarray(g) for g in jax.jit(global_function(parse_module(text)))(*inputs)]
    else:
        result = compile(parse_module(text))
        got = result.run(inputs, backend=backend)
        assert "manual_computation" not in print_module(result.spmd)
    for w, r, g in zip(want, reference, got, strict=True):
        np.testing.assert_allclose(r, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_cost_report_counts_the_collectives_of_a_body() -> None:
    from shardc.passes.analysis.cost import collective_report

    report = collective_report(compile(parse_module(SHARD_MAP)).module)
    (entry,) = report["collectives"]
    assert (entry["kind"], entry["axes"], entry["function"]) == ("all_reduce", ["tp"], "main_manual")
    assert entry["local_shape"] == [8, 64] and entry["bytes_per_device"] == 8 * 64 * 4
    assert entry["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    kinds = {
        e["kind"]
        for e in collective_report(compile(parse_module(COLLECTIVES)).module)["collectives"]
    }
    assert kinds == {"all_gather", "all_to_all"}


def test_uneven_free_axes_are_a_located_error() -> None:
    """12 rows over manual "x" (blocks of 3) split by free "y" (2) would pad inside a block."""
    text = """\
mesh @m = <["x"=4, "y"=2]>

func @main(%a: tensor<12xf32, <@m, [{"x", "y"}]>>) -> tensor<12xf32> {
  %0 = manual_computation %a {body = @body, in_shardings = [<@m, [{"x", "y"}]>], manual_axes = ["x"], out_shardings = [<@m, [{"x", "y"}]>]} : tensor<12xf32>
  return %0
}

func private @body(%b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = negate %b : tensor<3xf32>
  return %0
}
"""
    with pytest.raises(PassError) as exc:
        compile(parse_module(text, "u.mlir"))
    assert "uneven parts" in exc.value.message
    assert exc.value.loc is not None and exc.value.loc.line == 4


# ----- live: jaxlib's Shardy on hand-written StableHLO, shardc on the same program natively ----

LIVE = {
    # A free axis enters through the operand edge, the manual one leaves through the result.
    "free_axis_in_manual_axis_out": (
        """\
module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
  func.func public @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"z"}]>}, %arg1: tensor<16x16xf32>) -> (tensor<16x16xf32>) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"y", ?}, {?}]>] out_shardings=[<@mesh, [{"y", ?}, {?}]>] manual_axes={"y"} (%arg2: tensor<8x16xf32>) {
      %2 = stablehlo.tanh %arg2 : tensor<8x16xf32>
      sdy.return %2 : tensor<8x16xf32>
    } : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<16x16xf32>
    return %1 : tensor<16x16xf32>
  }
}
""",
        """\
mesh @mesh = <["x"=2, "y"=2, "z"=2]>

func @main(%arg0: tensor<16x16xf32, <@mesh, [{"x"}, {"z"}]>>, %arg1: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = manual_computation %arg0 {body = @body, in_shardings = [<@mesh, [{"y", ?}, {?}]>], manual_axes = ["y"], out_shardings = [<@mesh, [{"y", ?}, {?}]>]} : tensor<16x16xf32>
  %1 = add %0, %arg1 : tensor<16x16xf32>
  return %1
}

func private @body(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = tanh %a : tensor<8x16xf32>
  return %0
}
""",
        {"arg 1": "%arg1", "body arg 0": "edge %arg2", "@body %0": "%2", "@main %0": "edge %0",
         "@main %1": "%1", "result": "result"},
    ),
    # Two manual axes on one dim, a free axis after them; an unused manual axis is replicated.
    "two_manual_axes": (
        """\
module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func public @main(%arg0: tensor<32x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "b", "c"}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"c"}]>}) -> (tensor<16x8xf32>) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a", "b", ?}, {?}]>] out_shardings=[<@mesh, [{"a", ?}, {?}]>] manual_axes={"a", "b"} (%arg2: tensor<8x8xf32>) {
      %2 = stablehlo.negate %arg2 : tensor<8x8xf32>
      sdy.return %2 : tensor<8x8xf32>
    } : (tensor<32x8xf32>) -> tensor<16x8xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
}
""",
        """\
mesh @mesh = <["a"=2, "b"=2, "c"=2]>

func @main(%arg0: tensor<32x8xf32, <@mesh, [{"a", "b", "c"}, {}]>>, %arg1: tensor<16x8xf32, <@mesh, [{?}, {"c"}]>>) -> tensor<16x8xf32> {
  %0 = manual_computation %arg0 {body = @body, in_shardings = [<@mesh, [{"a", "b", ?}, {?}]>], manual_axes = ["a", "b"], out_shardings = [<@mesh, [{"a", ?}, {?}]>]} : tensor<16x8xf32>
  %1 = multiply %0, %arg1 : tensor<16x8xf32>
  return %1
}

func private @body(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = negate %a : tensor<8x8xf32>
  return %0
}
""",
        {"arg 1": "%arg1", "body arg 0": "edge %arg2", "@body %0": "%2", "@main %0": "edge %0",
         "@main %1": "%1", "result": "result"},
    ),
    # Backward: the function result's free axis enters through the result edge and reaches the
    # operand through the body.
    "backward_through_body": (
        """\
module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func public @main(%arg0: tensor<16x16xf32>) -> (tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<8x16xf32>) {
      %2 = stablehlo.exponential %arg1 : tensor<8x16xf32>
      sdy.return %2 : tensor<8x16xf32>
    } : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %1 = stablehlo.abs %0 : tensor<16x16xf32>
    return %1 : tensor<16x16xf32>
  }
}
""",
        """\
mesh @mesh = <["x"=2, "y"=4]>

func @main(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32, <@mesh, [{"x"}, {"y"}]>> {
  %0 = manual_computation %arg0 {body = @body, in_shardings = [<@mesh, [{"x", ?}, {?}]>], manual_axes = ["x"], out_shardings = [<@mesh, [{"x", ?}, {?}]>]} : tensor<16x16xf32>
  %1 = abs %0 : tensor<16x16xf32>
  return %1
}

func private @body(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = exponential %a : tensor<8x16xf32>
  return %0
}
""",
        {"arg 0": "%arg0", "body arg 0": "edge %arg1", "@body %0": "%2", "@main %0": "edge %0",
         "@main %1": "%1", "result": "result"},
    ),
}


def _shardy_live_values(text: str) -> dict[str, str]:
    """Shardy's propagation (with its data-flow edges not yet sunk): sharding text per func
    argument (`%arg1`), op result (`%2`, numbered as in the input), edge (`edge %0`: a
    manual_computation result; `edge %arg2`: a body argument, without manual axes) and `result`."""
    from tests.shardy_compare import run_shardy, shardy_pipeline_until_propagation

    out_text = run_shardy(text, shardy_pipeline_until_propagation())
    values: dict[str, str] = {}
    for m in re.finditer(r"(%arg\d+): tensor<[^>]*> \{sdy\.sharding = #sdy\.sharding(<.*?>)\}", out_text):
        values[m.group(1)] = m.group(2)
    edges: dict[str, str] = {}
    for m in re.finditer(r"(%\d+) = sdy\.data_flow_edge (%\w+) sharding=(<.*?>) :", out_text):
        values[f"edge {m.group(2)}"] = m.group(3)
        edges[m.group(1)] = m.group(2)
    # Op results are renumbered by the edges Shardy inserted: name them by their input position.
    inputs = re.findall(r"(%\d+) = stablehlo\.(\w+)", text)
    outputs = re.findall(r"(%\d+) = stablehlo\.(\w+)[^\n]*?sharding_per_value<\[(<.*?>)\]>", out_text)
    assert [k for _, k in inputs] == [k for _, k, _ in outputs]
    for (name, _), (_, _, sharding) in zip(inputs, outputs, strict=True):
        values[name] = sharding
    result = re.search(r"-> \(tensor<[^>]*> \{sdy\.sharding = #sdy\.sharding(<.*?>)\}\)", out_text)
    assert result is not None
    values["result"] = result.group(1)
    return values


def _ours_named(text: str) -> dict[str, str]:
    load_all_passes()
    module = parse_module(text)
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    values = {f"arg {i}": str(a.mapping) for i, a in enumerate(module.main.args)}
    for func in module.functions.values():
        for op in func.body:
            for r in op.results:
                values[f"@{func.name} %{r.name_hint}"] = str(r.mapping)
            if op.name == "manual_computation":
                body = module.functions[op.attributes["body"].name]
                values.update({f"body arg {i}": str(a.mapping) for i, a in enumerate(body.args)})
    values["result"] = str(module.main.result_types[0].mapping)
    return values


@pytest.mark.parametrize("name", sorted(LIVE))
def test_propagation_matches_live_shardy(name: str) -> None:
    pytest.importorskip("jax")
    stablehlo, native, pairs = LIVE[name]
    theirs = _shardy_live_values(stablehlo)
    ours = _ours_named(native)
    for mine, their in pairs.items():
        assert ours[mine] == theirs[their], (mine, ours[mine], their, theirs[their])
