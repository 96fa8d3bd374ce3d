"""The fuzzer's CI slice (issue 13): a few thousand inputs, every one a located error or a
correct run. `python benchmarks/fuzz.py --n 100000` runs the same fuzzers at scale.

- 1,500 mutated programs (tests/fuzzing/mutate.py, seed 0) through `opt`, `import`, `compile`
  and `run --check`: no crash, hang, memory error or wrong result;
- 600 generated valid programs (tests/fuzzing/generate.py; hypothesis, derandomized) compiled,
  run on the simulated devices and compared with the unsharded reference.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzzing.generate import programs
from tests.fuzzing.minimise import minimise, same_failure, signature
from tests.fuzzing.mutate import MUTATIONS, corpus, mutation_case
from tests.fuzzing.oracle import Outcome, check_program, classify, run_command

MUTATED = 1500
GENERATED = 600


def test_corpus_has_both_dialects():
    texts = [t for _, t in corpus()]
    assert len(texts) > 100
    assert any("sdy.mesh" in t for t in texts) and any(t.startswith("mesh @") for t in texts)


def test_mutation_cases_are_reproducible():
    a = mutation_case(corpus(), random.Random("0:17"))
    b = mutation_case(corpus(), random.Random("0:17"))
    assert a == b
    assert set(a.mutations) <= set(MUTATIONS)


def test_mutated_programs(tmp_path):
    bad = []
    for i in range(MUTATED):
        case = mutation_case(corpus(), random.Random(f"0:{i}"))
        path = tmp_path / case.name
        path.write_text(case.text)
        outcome = run_command(case.command(str(path)), timeout=20)
        if outcome.bad:
            bad.append(
                f"#{i} {case.name} {case.mutations} {case.argv}: {outcome.kind}: {outcome.message}"
            )
    assert not bad, "\n".join(bad)


@settings(
    max_examples=GENERATED,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(programs())
def test_generated_programs(text):
    outcome = check_program(text, timeout=20)
    assert not outcome.bad, f"{outcome.kind}: {outcome.message}\n{text}"


@pytest.mark.parametrize(
    ("code", "stderr", "kind"),
    [
        (0, "", "ok"),
        (1, "x.mlir:1:2: error: bad", "error"),
        (1, "error: internal compiler error: boom", "crash"),
        (1, "Traceback (most recent call last):\nMemoryError", "memory"),
        (1, "error: outputs differ from the unsharded reference", "wrong"),
        (3, "", "crash"),
    ],
)
def test_classify(code, stderr, kind):
    assert classify(code, stderr, "") == kind


def test_a_hang_is_reported(monkeypatch):
    import shardc.cli

    def spin(argv):
        while True:
            pass

    monkeypatch.setattr(shardc.cli, "main", spin)
    outcome = run_command(["opt", "x.mlir"], timeout=0.2)
    assert outcome.kind == "hang" and outcome.bad


def test_minimise_keeps_the_failure():
    text = "".join(f"line {k}\n" for k in range(40)) + "boom here\n"
    want = Outcome("crash", "KeyError: boom 3", 0.0)

    def judge(t: str) -> Outcome:
        return Outcome("crash", "KeyError: boom 7", 0.0) if "boom" in t else Outcome("ok", "", 0)

    small = minimise(text, lambda t: same_failure(judge(t), want))
    assert small.split() == ["boom"]
    assert signature(want) == signature(judge(small))
