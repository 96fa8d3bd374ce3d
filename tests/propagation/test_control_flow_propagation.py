"""`while` and `case` propagate like Shardy's data-flow ops.

tests/data/control/*.mlir are native programs whose regions are outlined into functions; each is
the hand-written twin of a StableHLO program with inline regions: JAX's (tests/data/stablehlo,
with Shardy's answer stored in extras/<name>.open.mlir) or ours (tests/data/control/shardy/,
propagated here by jaxlib's Shardy in-process). Every value, inside the regions too, must get
Shardy's sharding (tests/shardy_regions.py compares them in Shardy's print order).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from tests.programs import modules
from tests.shardy_regions import compare_flat, native_flat, shardy_flat

DATA = Path(__file__).parent.parent / "data"
STORED = ["while_loop", "cond_switch"]
LIVE = ["while_captures", "case_sources", "scan_like", "nested", "while_reshard"]


def propagated(name: str, pipeline: str = "propagation-pipeline"):
    load_all_passes()
    module = parse_module((DATA / "control" / f"{name}.mlir").read_text())
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return module


@pytest.mark.parametrize("name", STORED)
def test_jax_programs_match_stored_shardy(name: str) -> None:
    pytest.importorskip("jax")
    ours = native_flat(propagated(name))
    theirs = shardy_flat((DATA / "stablehlo" / "extras" / f"{name}.open.mlir").read_text())
    compared, differences = compare_flat(ours, theirs)
    assert not differences, "\n".join(differences)
    assert compared >= 18
    assert sum(1 for _, values in ours for v in values if v is not None) >= 8


@functools.cache
def _shardy_pipeline() -> str:
    from tests.shardy_compare import shardy_pipeline_until_propagation

    # The edges' shardings are moved back onto the while/case ops so they can be read.
    return shardy_pipeline_until_propagation()[:-1] + ",func.func(sdy-sink-data-flow-edges))"


@pytest.mark.parametrize("name", LIVE)
def test_programs_match_live_shardy(name: str) -> None:
    pytest.importorskip("jax")
    from tests.shardy_compare import run_shardy

    text = (DATA / "control" / "shardy" / f"{name}.mlir").read_text()
    theirs = shardy_flat(run_shardy(text, _shardy_pipeline()))
    ours = native_flat(propagated(name))
    compared, differences = compare_flat(ours, theirs)
    assert not differences, "\n".join(differences)
    assert compared >= 8


def test_comparison_sees_a_difference() -> None:
    """The comparison is not vacuous: a changed sharding inside a region is reported."""
    pytest.importorskip("jax")
    ours = native_flat(propagated("cond_switch"))
    theirs = shardy_flat((DATA / "stablehlo" / "extras" / "cond_switch.open.mlir").read_text())
    k = next(i for i, (name, _) in enumerate(ours) if name == "transpose")
    ours[k] = ("transpose", ['<@mesh, [{"dp", ?}, {"tp", ?}]>'])
    _, differences = compare_flat(ours, theirs)
    assert len(differences) == 1 and "transpose" in differences[0]


def test_carried_values_share_one_sharding() -> None:
    """Result k, cond argument k, body argument k and body result k get one sharding; a
    captured operand and the arguments it feeds are one value."""
    module = propagated("while_captures")
    main = module.functions["main"]
    loop = next(op for op in main.body if op.name == "while")
    cond = module.functions["main_while_cond"]
    body = module.functions["main_while_body"]
    for k, r in enumerate(loop.results):
        assert cond.args[k].mapping == r.mapping == body.args[k].mapping
        assert getattr(body.result_types[k], "mapping", None) == r.mapping
    for j in range(3, 5):
        assert loop.operand(j).mapping == cond.args[j].mapping == body.args[j].mapping
    # The bias is sharded only through its use inside the body.
    assert str(main.args[2].mapping) == '<@mesh, [{"tp", ?}]>'
    # The carried operand keeps its closed sharding; the loop value gains "tp" from the body.
    assert str(loop.operand(1).mapping) == '<@mesh, [{"dp"}, {}]>'
    assert str(loop.results[1].mapping) == '<@mesh, [{"dp", ?}, {"tp", ?}]>'


def test_propagation_is_idempotent() -> None:
    once = propagated("nested")
    text = print_module(once)
    PassManager(parse_pipeline("propagate")).run(once, PassContext())
    assert print_module(once) == text


def test_conflicting_linked_shardings_are_an_error() -> None:
    from shardc.ir.diagnostics import ShardcError

    text = """
mesh @m = <["x"=2]>
func @main(%x: tensor<8xf32, <@m, [{"x"}]>>) -> tensor<8xf32> {
  %0 = case %i, %x {branches = [@b]} : tensor<8xf32>
  return %0
}
func private @b(%x: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32> {
  return %x
}
""".replace("%i, ", "%c, ").replace(
        "  %0 = case", '  %c = constant {value = dense<0>} : tensor<i32>\n  %0 = case'
    )
    load_all_passes()
    module = parse_module(text)
    with pytest.raises(ShardcError, match="different shardings"):
        PassManager(parse_pipeline("propagate")).run(module, PassContext())


# ----- random programs wrapped in a `case` -----------------------------------------------------


def _types_only(result_types: str) -> list[str]:
    """`tensor<4x6xf32, <@m, ...>>, tensor<6xf32>` -> ['tensor<4x6xf32>', 'tensor<6xf32>']."""
    return [t + ">" for t in re.findall(r"tensor<[0-9x]*[a-z]+[0-9]*(?=[,>])", result_types)]


def wrap_native(text: str) -> str:
    """@main's body moved into a branch function of a one-branch `case` on a new index argument
    (its arguments become captures)."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("func @main("))
    header = lines[i]
    args = header[len("func @main(") : header.index(") -> ")]
    res = header[header.index(") -> ") + len(") -> ") : -len(" {")]
    end = lines.index("}", i)
    types = _types_only(res)
    names = ", ".join(re.findall(r"(%\w+): tensor", args))
    results = ", ".join(f"%r{k}" for k in range(len(types)))
    branch_res = types[0] if len(types) == 1 else f"({', '.join(types)})"
    return "\n".join(
        [
            *lines[:i],
            f"func @main({args}, %idx: tensor<i32>) -> {res} {{",
            f"  {results} = case %idx, {names} {{branches = [@main_case]}} : {', '.join(types)}",
            f"  return {results}",
            "}",
            "",
            f"func private @main_case({args}) -> {branch_res} {{",
            *lines[i + 1 : end + 1],
            *lines[end + 1 :],
        ]
    ) + "\n"


def wrap_stablehlo(text: str) -> str:
    """The same for the StableHLO text the exporter writes: an inline `stablehlo.case`."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if "func.func public @main(" in line)
    cut = lines[i].index(") -> ")
    header = lines[i][:cut] + ", %argidx: tensor<i32>" + lines[i][cut:]
    j = next(k for k in range(i, len(lines)) if lines[k].strip().startswith("return "))
    values, types = lines[j].strip()[len("return ") :].split(" : ")
    n = len(values.split(","))
    name, outs = ("%casev", "%casev") if n == 1 else (
        f"%casev:{n}", ", ".join(f"%casev#{k}" for k in range(n))
    )
    return "\n".join(
        [
            *lines[:i],
            header,
            f'    {name} = "stablehlo.case"(%argidx) ({{',
            *("  " + line for line in lines[i + 1 : j]),
            f"      stablehlo.return {values} : {types}",
            f"    }}) : (tensor<i32>) -> {types if n == 1 else f'({types})'}",
            f"    return {outs} : {types}",
            *lines[j + 1 :],
        ]
    ) + "\n"


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(modules(max_ops=12))
def test_random_programs_in_a_case_match_shardy(module) -> None:
    """Random programs (tests/programs.py) moved into a `case` branch, so every argument is a
    capture and every result crosses an edge, agree with Shardy on the same program with an
    inline region; where they do not, the program without the `case` disagrees too (a known
    divergence of the op-level propagation, not of the edges)."""
    pytest.importorskip("jax")
    from shardc.stablehlo import export_stablehlo
    from tests.propagation.test_shardy_live import check
    from tests.shardy_compare import run_shardy

    load_all_passes()
    ours = parse_module(wrap_native(print_module(module)))
    PassManager(parse_pipeline("propagation-pipeline")).run(ours, PassContext())
    text = wrap_stablehlo(export_stablehlo(module))
    theirs = shardy_flat(run_shardy(text, _shardy_pipeline()))
    compared, differences = compare_flat(native_flat(ours), theirs)
    if differences:
        with pytest.raises(AssertionError):
            check(module)
    else:
        assert compared >= 4


def wrap_native_loop(text: str) -> str:
    """@main's body moved into the body of a two-trip `while` that carries (i, x, y, results):
    the arguments are carried unchanged, the results start as zeros."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("func @main("))
    header = lines[i]
    args = header[len("func @main(") : header.index(") -> ")]
    res = header[header.index(") -> ") + len(") -> ") : -len(" {")]
    end = lines.index("}", i)
    types = _types_only(res)
    arg_types = _types_only(args)
    names = re.findall(r"(%\w+): tensor", args)
    plain = ", ".join(f"{n}: {t}" for n, t in zip(names, arg_types, strict=True))
    outs = ", ".join(f"%o{k}: {t}" for k, t in enumerate(types))
    carried = ["tensor<i32>", *arg_types, *types]
    zeros = [f"  %z{k} = constant {{value = dense<0.0>}} : {t}" for k, t in enumerate(types)]
    results = ["%i", *(f"%w{k}" for k in range(len(names))), *(f"%r{k}" for k in range(len(types)))]
    operands = ["%c", *names, *(f"%z{k}" for k in range(len(types)))]
    returned = lines[end - 1].strip()[len("return ") :]
    return "\n".join(
        [
            *lines[:i],
            f"func @main({args}) -> {res} {{",
            "  %c = constant {value = dense<0>} : tensor<i32>",
            *zeros,
            f"  {', '.join(results)} = while {', '.join(operands)} {{body = @main_while_body, "
            f"cond = @main_while_cond}} : {', '.join(carried)}",
            f"  return {', '.join(f'%r{k}' for k in range(len(types)))}",
            "}",
            "",
            f"func private @main_while_cond(%i: tensor<i32>, {plain}, {outs}) -> tensor<i1> {{",
            "  %two = constant {value = dense<2>} : tensor<i32>",
            "  %0 = compare %i, %two {comparison_direction = LT} : tensor<i1>",
            "  return %0",
            "}",
            "",
            f"func private @main_while_body(%i: tensor<i32>, {plain}, {outs}) -> "
            f"({', '.join(carried)}) {{",
            *lines[i + 1 : end - 1],
            "  %one = constant {value = dense<1>} : tensor<i32>",
            "  %next = add %i, %one : tensor<i32>",
            f"  return %next, {', '.join(names)}, {returned}",
            "}",
            *lines[end + 1 :],
        ]
    ) + "\n"


def wrap_stablehlo_loop(text: str) -> str:
    """The same for the StableHLO text the exporter writes: an inline `stablehlo.while`."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if "func.func public @main(" in line)
    header = lines[i]
    args = header[header.index("(") + 1 : header.index(") -> ")]
    arg_names = re.findall(r"(%arg\d+): tensor", args)
    arg_types = _types_only(args)
    j = next(k for k in range(i, len(lines)) if lines[k].strip().startswith("return "))
    values, types_text = lines[j].strip()[len("return ") :].split(" : ")
    types = _types_only(types_text + ">") if "," in types_text else [types_text]
    types = [t if t.endswith(">") else t + ">" for t in types]
    carried = ["tensor<i32>", *arg_types, *types]
    inits = ["%wc", *arg_names, *(f"%wz{k}" for k in range(len(types)))]
    iters = ["%it", *(f"%ia{k}" for k in range(len(arg_names))),
             *(f"%io{k}" for k in range(len(types)))]
    body = []
    for line in lines[i + 1 : j]:
        for k, name in enumerate(arg_names):
            line = re.sub(rf"{name}\b", f"%ia{k}", line)
        body.append("    " + line)
    returned = values
    for k, name in enumerate(arg_names):
        returned = re.sub(rf"{name}\b", f"%ia{k}", returned)
    n = len(carried)
    first = 1 + len(arg_names)
    outs = ", ".join(f"%w#{first + k}" for k in range(len(types)))
    return "\n".join(
        [
            *lines[:i],
            header,
            "    %wc = stablehlo.constant dense<0> : tensor<i32>",
            *(f"    %wz{k} = stablehlo.constant dense<0.000000e+00> : {t}"
              for k, t in enumerate(types)),
            f"    %w:{n} = stablehlo.while("
            + ", ".join(f"{a} = {b}" for a, b in zip(iters, inits, strict=True))
            + f") : {', '.join(carried)}",
            "    cond {",
            "      %two = stablehlo.constant dense<2> : tensor<i32>",
            "      %p = stablehlo.compare LT, %it, %two, SIGNED : "
            "(tensor<i32>, tensor<i32>) -> tensor<i1>",
            "      stablehlo.return %p : tensor<i1>",
            "    } do {",
            *body,
            "      %one = stablehlo.constant dense<1> : tensor<i32>",
            "      %next = stablehlo.add %it, %one : tensor<i32>",
            f"      stablehlo.return %next, {', '.join(iters[1:first])}, {returned} : "
            f"{', '.join(carried)}",
            "    }",
            f"    return {outs} : {types_text}",
            *lines[j + 1 :],
        ]
    ) + "\n"


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(modules(max_ops=12))
def test_random_programs_in_a_loop_match_shardy(module) -> None:
    """The same with the program as a loop body: arguments carried through the loop (two
    sources: the argument and the body's return of it), results carried from zeros."""
    pytest.importorskip("jax")
    from shardc.stablehlo import export_stablehlo
    from tests.propagation.test_shardy_live import check
    from tests.shardy_compare import run_shardy

    load_all_passes()
    ours = parse_module(wrap_native_loop(print_module(module)))
    PassManager(parse_pipeline("propagation-pipeline")).run(ours, PassContext())
    text = wrap_stablehlo_loop(export_stablehlo(module))
    theirs = shardy_flat(run_shardy(text, _shardy_pipeline()))
    compared, differences = compare_flat(native_flat(ours), theirs)
    if differences:
        with pytest.raises(AssertionError):
            check(module)
    else:
        assert compared >= 4


def test_captured_value_uses_are_counted_inside_the_regions() -> None:
    """A captured value is one value with its region uses (Shardy's op-priority stage 0 asks
    for single-use operands); a carried operand and the case index are ordinary uses."""
    from shardc.passes.propagation.data_flow import live_uses

    module = parse_module((DATA / "control" / "nested.mlir").read_text())
    main = module.functions["main"]
    w = main.args[1]  # captured by the loop, then by the case in its body: one use (dot)
    assert live_uses(w, set()) == 1
    body = module.functions["main_while_body"]
    x = body.args[1]  # captured by the case: used by the dot and twice by the multiply
    assert live_uses(x, set()) == 3
    assert live_uses(main.args[0], set()) == 1  # carried operand of the loop
    index = next(op for op in body.ops if op.name == "remainder").result
    assert live_uses(index, set()) == 1  # the case index


def test_reshards_match_shardy_explicit_reshards() -> None:
    """insert-reshards puts the reshards where Shardy's `sdy-insert-explicit-reshards` (full
    version, after its export steps) puts them, with the same shardings: the loop operand to the
    carried sharding, the body result back to it before the body's return, the loop result to
    the function's result."""
    pytest.importorskip("jax")
    from tests.shardy_compare import run_shardy, shardy_pipeline_until_propagation

    text = (DATA / "control" / "shardy" / "while_reshard.mlir").read_text()
    pipeline = shardy_pipeline_until_propagation()[:-1] + (
        ",func.func(sdy-sink-data-flow-edges),sdy-close-shardings,"
        "func.func(sdy-insert-explicit-reshards{enable-full-version=true}))"
    )
    theirs = re.findall(r"sdy\.reshard %[\w#]+ (<@mesh, \[.*?\]>)", run_shardy(text, pipeline))
    ours = propagated("while_reshard", "propagation-pipeline,close-shardings,insert-reshards")
    mine = [v[0] for name, v in native_flat(ours) if name == "reshard"]
    assert mine == theirs
    assert len(mine) == 4
