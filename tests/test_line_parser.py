"""The native line reader (ir/line_parser.py) builds exactly what the grammar builds.

Every native input of the FileCheck corpus is read both ways; where the line reader takes it,
the two modules must agree on everything the IR holds (text, locations, names, attributes),
and the printer's output must always be the reader's kind of text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc import formats
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.grammar_parser import parse_with_grammar as _parse_with_grammar
from shardc.ir.line_parser import Unsupported, read_lines
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module

CORPUS = sorted((Path(__file__).parent / "filecheck").rglob("*.mlir"), key=lambda p: p.name)


def _chunks() -> list[tuple[str, str]]:
    out = []
    for path in CORPUS:
        for i, chunk in enumerate(path.read_text().split("\n// -----\n")):
            if formats.detect(chunk) == "native":
                out.append((f"{path.name}#{i}", chunk))
    return out


def _facts(m: Module) -> list:
    """Everything the parsers decide, in order."""
    out: list = [print_module(m), dict(m.mesh_locs), m.attributes]
    for f in m.functions.values():
        out.append((f.name, f.loc, f.loc_written, f.visibility,
                    [a.name_hint for a in f.args], f.arg_attrs, f.res_attrs, f.attributes))
        for op in f.body:
            out.append((op.name, op.loc, op.loc_written, [r.name_hint for r in op.results],
                        op.attributes, [r.type for r in op.results]))
    return out


CHUNKS = _chunks()


@pytest.mark.parametrize("name,text", CHUNKS, ids=[n for n, _ in CHUNKS])
def test_line_reader_agrees_with_the_grammar(name: str, text: str) -> None:
    try:
        expected = _parse_with_grammar(text, "f.mlir")
    except ShardcError:
        with pytest.raises(Unsupported):  # what the grammar rejects, the reader leaves to it
            read_lines(text, "f.mlir")
        return
    try:
        got = read_lines(text, "f.mlir")
    except Unsupported:
        return  # text of another shape (an op over several lines): the grammar reads it
    assert _facts(got) == _facts(expected)


@pytest.mark.parametrize("name,text", CHUNKS, ids=[n for n, _ in CHUNKS])
def test_printed_text_takes_the_line_reader(name: str, text: str) -> None:
    try:
        module = parse_module(text, "f.mlir", verify=False)
    except ShardcError:
        return
    printed = print_module(module)
    again = read_lines(printed, "f.mlir")  # never Unsupported on the printer's own text
    assert print_module(again) == printed
    assert _facts(again) == _facts(_parse_with_grammar(printed, "f.mlir"))


def test_an_op_over_several_lines_is_read_by_the_grammar() -> None:
    text = (
        'mesh @m = <["x"=2]>\n'
        "func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = tanh %a\n"
        '       : tensor<4xf32, <@m, [{"x"}]>>\n'
        "  return %0\n"
        "}\n"
    )
    with pytest.raises(Unsupported):
        read_lines(text, "f.mlir")
    module = parse_module(text, "f.mlir")
    assert str(module.main.body.first.result.type) == 'tensor<4xf32, <@m, [{"x"}]>>'


@pytest.mark.parametrize(
    "line,fragment",
    [
        ("  %0 = tanh %nope : tensor<4xf32>", "use of undefined value %nope"),
        ("  %0 = frob %a : tensor<4xf32>", "unknown op 'frob'"),
        ("  %0, %1 = tanh %a : tensor<4xf32>", "defines 2 values but lists 1 result type"),
    ],
)
def test_errors_come_from_the_grammar_with_their_location(line: str, fragment: str) -> None:
    text = f"func @main(%a: tensor<4xf32>) -> tensor<4xf32> {{\n{line}\n  return %0\n}}\n"
    with pytest.raises(Unsupported):
        read_lines(text, "f.mlir")
    with pytest.raises(ShardcError) as info:
        parse_module(text, "f.mlir")
    assert fragment in info.value.message
    assert info.value.loc is not None and info.value.loc.line == 2
