"""Shardy's debugging options against Shardy's own, run through jaxlib: every
`sdy.sharding_origins`, `sdy.propagation_edges` (and their block-argument / result arrays and
`sdy.sharding_origin_name`) shardc writes is the text jaxlib's Shardy writes, on the JAX corpus
(tests/data/stablehlo/) and on random programs (tests/programs.py, without their dead code:
`without_dead_ops`), under the pipeline of
Shardy's debugging lit tests: add data-flow edges, apply constraints, aggressive propagation,
sink the edges.

Shardy fails on some programs with both options: its origins crash on some
(tests/shardy_worker.py), and its edges of a `while` name a second source its edge op does not
have, which its own verifier rejects. Such a program is compared with one option at a time,
each that Shardy completes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("jax")

from shardc.ir.core import Module  # noqa: E402
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline  # noqa: E402
from shardc.passes.propagation.liveness import dead_ops  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.programs import modules  # noqa: E402
from tests.shardy_compare import importable_corpus  # noqa: E402
from tests.shardy_worker import ShardyWorker  # noqa: E402

KEYS = (
    "sdy.propagation_edges", "sdy.block_arg_propagation_edges", "sdy.result_propagation_edges",
    "sdy.sharding_origins", "sdy.block_arg_sharding_origins", "sdy.result_sharding_origins",
    "sdy.sharding_origin_name",
)
ORIGINS = "debug-sharding-origins=true"
EDGES = "debug-propagation-edge-sharding=true"
BOTH = f"{ORIGINS} {EDGES}"


def passes(options: str) -> list[str]:
    sink = options.replace("debug-", "sink-debug-")
    return [
        "sdy-remove-size-one-axes",  # as Shardy's import does: its origins crash on them
        "sdy-add-data-flow-edges",
        f"sdy-apply-sharding-constraints{{{options}}}",
        f"sdy-aggressive-propagate{{{options}}}",
        f"sdy-sink-data-flow-edges{{{sink}}}",
    ]


def debug_attrs(module: Module) -> list[tuple[str, str, str, str]]:
    """Every debugging attribute in module order, but on dead ops: Shardy's rewrite driver
    erases them (their steps still count), shardc keeps them."""
    out = []
    for f in module.functions.values():
        dead = dead_ops(f)
        places = [(f"arg {i}", a) for i, a in enumerate(f.arg_attrs)]
        places += [(f"result {i}", a) for i, a in enumerate(f.res_attrs)]
        places += [(op.name, op.attributes) for op in f.body if id(op) not in dead]
        for place, attrs in places:
            for key in KEYS:
                if key in attrs:
                    value = attrs[key]
                    text = value.text if hasattr(value, "text") else str(value)
                    out.append((f.name, place, key, re.sub(r"\s+", " ", text)))
    return out


@pytest.fixture(scope="module")
def shardy():
    with ShardyWorker() as worker:
        yield worker


def check(text: str, shardy: ShardyWorker, options: str) -> int:
    """Compare one program; the number of attributes compared (-1: Shardy failed)."""
    load_all_passes()
    theirs_text = shardy.run(text, "builtin.module(" + ",".join(
        p if not p.startswith("sdy-sink") else f"func.func({p})" for p in passes(options)) + ")")
    if theirs_text is None:
        return -1
    theirs = import_stablehlo(theirs_text, "shardy.mlir")
    ours = import_stablehlo(text, "ours.mlir")
    PassManager(parse_pipeline(",".join(passes(options)))).run(ours, PassContext())
    expected, got = debug_attrs(theirs), debug_attrs(ours)
    assert got == expected, (
        text + "\nonly shardc: " + repr(sorted(set(got) - set(expected)))
        + "\nonly Shardy: " + repr(sorted(set(expected) - set(got)))
    )
    return len(got)


def check_program(text: str, shardy: ShardyWorker) -> int:
    """Compare with both options, else each alone; attributes compared (asserts some were)."""
    n = check(text, shardy, BOTH)
    if n < 0:
        n = max(check(text, shardy, ORIGINS), check(text, shardy, EDGES))
    assert n >= 0, f"Shardy failed with every option: {shardy.last_error}"
    return n


CORPUS = Path(__file__).parent.parent / "data" / "stablehlo"
_CHLO = re.compile(r"chlo\.(?:square|erf|tan) (%[\w#]+) : (tensor<[^>]*>) -> tensor<[^>]*>")


def without_chlo(text: str) -> str:
    """`chlo.square`/`erf`/`tan` as a `stablehlo.multiply` of the same shape: jaxlib's Shardy has
    no sharding rule for chlo ops (shardc's is element-wise), so the same shardings reach their
    users by other paths, in other steps, there (docs/propagation.md)."""
    return _CHLO.sub(r"stablehlo.multiply \1, \1 : \2", text)


@pytest.mark.parametrize("name", importable_corpus())
def test_jax_corpus_matches_shardy(name: str, shardy: ShardyWorker) -> None:
    check_program(without_chlo((CORPUS / f"{name}.mlir").read_text()), shardy)


def without_dead_ops(module: Module) -> Module:
    """Shardy's recorder keeps the ops it saw, and its rewrite driver erases dead ones: on a
    program with dead code it crashes or reads freed ops. So random programs lose theirs."""
    for f in module.functions.values():
        dead = dead_ops(f)
        for op in reversed(list(f.body)):
            if id(op) in dead:
                op.erase()
    return module


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(module=modules(max_ops=12))
def test_random_programs_match_shardy(module: Module, shardy: ShardyWorker) -> None:
    assert check(export_stablehlo(without_dead_ops(module)), shardy, BOTH) >= 0, shardy.last_error
