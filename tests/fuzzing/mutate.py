"""Mutation fuzzing: the repository's own programs, damaged at random, through every command.

    case = mutation_case(corpus(), random.Random("7:123"))
    case.text, case.argv       # the damaged program and `shardc` arguments to run it with

The corpus is every program the repository ships: examples/, the FileCheck tests' cases
(tests/filecheck/, split at `// -----`, CHECK lines dropped), the StableHLO corpus
(tests/data/stablehlo/) and the control-flow programs (tests/data/control/), native text and
StableHLO + sdy text alike. A case applies one to three mutations (`MUTATIONS`): truncations,
deleted or duplicated spans and lines, numbers made huge, zero, negative or odd, tokens from the
IR's vocabulary spliced in, text spliced from another program, identifiers renamed. It is run
with one of `opt` (a random pipeline), `import`, `compile` or `run --check`.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SPLIT = re.compile(r"(?m)^// -----.*\n?")
DIRECTIVE = re.compile(r"(?m)^\s*//\s*(RUN|CHECK|expected-)[^\n]*\n?")
NUMBER = re.compile(r"(?<![\w%@])-?\d+(\.\d+)?(e[+-]?\d+)?")
IDENT = re.compile(r'"[A-Za-z_]\w*"|@[A-Za-z_][\w.$]*|%[A-Za-z_0-9][\w.$]*')
LINE = re.compile(r"[^\n]*\n?")

# Fragments of the IR's syntax (both dialects), for splicing in.
TOKENS = (
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    ",",
    ":",
    "=",
    "?",
    "->",
    "%0",
    "%arg0",
    "@main",
    '"x"',
    '"dp"',
    '"tp":(1)2',
    '"x":(2)4',
    "{?}",
    "{}",
    "p0",
    "p9999999999",
    "tensor<",
    "tensor<8x?xf32>",
    "tensor<0x4xf32>",
    "tensor<4294967296x4294967296xf32>",
    "xf32>",
    "i1",
    "dense<",
    "dense<[1.0, 2.0]>",
    '#sdy.sharding<@mesh, [{"x"}, {}]>',
    "<@mesh, [{}]>",
    "#sdy.sharding_per_value<[",
    "#sdy.op_sharding_rule<([i, j])->([j]) {i=2, j=4}>",
    "sdy.sharding_group %0 group_id=0 : tensor<8xf32>",
    'unreduced={"x"}',
    'replicated={"y"}',
    'manual_axes={"x"}',
    'sdy.mesh @m = <["x"=0]>',
    'mesh @m2 = <["x"=3, "x"=3]>',
    "device_ids=[1, 0]",
    "device_ids=[0, 0]",
    "func.call @main()",
    "call @main",
    "stablehlo.while",
    "sdy.return",
    "return",
    "loc(unknown)",
    "#loc1",
    "\\",
    '"',
    "\n",
    "//",
    "\t",
    "\u00e9",
    "\u0000",
)
NUMBERS = (
    "0",
    "-1",
    "1",
    "3",
    "7",
    "65536",
    "2147483648",
    "99999999999999999999999",
    "1e309",
    "-0.0",
    "nan",
    "0x7FC00000",
    "9223372036854775808",
)


@dataclass(frozen=True)
class Case:
    """One fuzz input: the program text (written to `name`) and the command's arguments
    (`{path}` stands for the file)."""

    text: str
    name: str
    argv: tuple[str, ...]
    mutations: tuple[str, ...]

    def command(self, path: str) -> list[str]:
        return [path if a == "{path}" else a for a in self.argv]


@functools.cache
def corpus() -> tuple[tuple[str, str], ...]:
    """(name, text) of every program the repository ships (module docstring)."""
    out: list[tuple[str, str]] = []
    files = sorted((ROOT / "examples").glob("*.mlir"))
    files += sorted((ROOT / "tests" / "data" / "control").glob("*.mlir"))
    files += sorted((ROOT / "tests" / "data" / "stablehlo").glob("*.mlir"))
    for path in files:
        out.append((path.name, path.read_text()))
    for path in sorted((ROOT / "tests" / "filecheck").rglob("*.mlir"), key=lambda p: p.name):
        for k, chunk in enumerate(SPLIT.split(path.read_text())):
            chunk = DIRECTIVE.sub("", chunk)
            if chunk.strip():
                out.append((f"{path.stem}.{k}.mlir", chunk))
    return tuple(out)


def _span(rng: random.Random, text: str) -> tuple[int, int]:
    a = rng.randrange(len(text) + 1)
    return a, min(len(text), a + rng.choice((1, 2, 5, 20, 80)))


def truncate(rng: random.Random, text: str, other: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def delete_span(rng: random.Random, text: str, other: str) -> str:
    a, b = _span(rng, text)
    return text[:a] + text[b:]


def duplicate_span(rng: random.Random, text: str, other: str) -> str:
    a, b = _span(rng, text)
    return text[:b] + text[a:b] + text[b:]


def _lines(text: str) -> list[str]:
    return [m.group() for m in LINE.finditer(text) if m.group()]


def delete_line(rng: random.Random, text: str, other: str) -> str:
    lines = _lines(text)
    if lines:
        del lines[rng.randrange(len(lines))]
    return "".join(lines)


def swap_lines(rng: random.Random, text: str, other: str) -> str:
    lines = _lines(text)
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def duplicate_line(rng: random.Random, text: str, other: str) -> str:
    lines = _lines(text)
    if lines:
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "".join(lines)


def change_number(rng: random.Random, text: str, other: str) -> str:
    found = list(NUMBER.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    value = rng.choice(NUMBERS + (str(rng.randint(-3, 40)),))
    return text[: m.start()] + value + text[m.end() :]


def insert_token(rng: random.Random, text: str, other: str) -> str:
    a = rng.randrange(len(text) + 1)
    return text[:a] + rng.choice(TOKENS) + text[a:]


def replace_token(rng: random.Random, text: str, other: str) -> str:
    a, b = _span(rng, text)
    return text[:a] + rng.choice(TOKENS) + text[b:]


def splice(rng: random.Random, text: str, other: str) -> str:
    a = rng.randrange(len(text) + 1)
    c, d = _span(rng, other)
    return text[:a] + other[c:d] + text[a:]


def splice_line(rng: random.Random, text: str, other: str) -> str:
    lines, theirs = _lines(text), _lines(other)
    if theirs:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(theirs))
    return "".join(lines)


def rename(rng: random.Random, text: str, other: str) -> str:
    found = list(IDENT.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    old = m.group()
    new = (
        old[0]
        + rng.choice(("z", "x", "main", "0", "arg0", "mesh", ""))
        + (old[-1] if old.startswith('"') else "")
    )
    if rng.random() < 0.5:
        return text.replace(old, new)
    return text[: m.start()] + new + text[m.end() :]


MUTATIONS: dict[str, Callable[[random.Random, str, str], str]] = {
    f.__name__: f
    for f in (
        truncate,
        delete_span,
        duplicate_span,
        delete_line,
        swap_lines,
        duplicate_line,
        change_number,
        change_number,
        insert_token,
        replace_token,
        splice,
        splice_line,
        rename,
    )
}
PIPELINES = (
    "",
    "propagate",
    "propagate{strategy=basic}",
    "propagation-pipeline",
    "propagation-pipeline,close-shardings,insert-reshards",
    "propagation-pipeline,close-shardings,insert-reshards,lower-collectives",
    "propagation-pipeline,close-shardings,insert-reshards,lower-collectives,canonicalize,spmd",
    "sdy-populate-op-sharding-rules",
    "remove-size-one-axes,split-constants",
    "apply-sharding-constraints",
    "sdy-user-priority-propagate",
    "lower-collectives{cost=bytes}",
)


def mutation_case(programs: tuple[tuple[str, str], ...], rng: random.Random) -> Case:
    """A damaged program from `programs` and a command to run it with (module docstring)."""
    name, text = rng.choice(programs)
    applied = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        kind = rng.choice(list(MUTATIONS))
        text = MUTATIONS[kind](rng, text, rng.choice(programs)[1])
        applied.append(kind)
    command = rng.choice(("opt", "opt", "import", "compile", "run"))
    if command == "opt":
        argv: tuple[str, ...] = ("opt", "{path}", "-p", rng.choice(PIPELINES))
    elif command == "run":
        argv = ("run", "{path}", "--check")
    elif command == "compile":
        argv = ("compile", "{path}", "--report", "json")
    else:
        argv = ("import", "{path}")
    return Case(text, name, argv, tuple(applied))
