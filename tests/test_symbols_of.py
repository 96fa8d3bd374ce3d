"""`symbols_of` (ir/symbols.py: what symbol-dce reads of every op) names the functions
`symbols_in` finds in each attribute value of each op, in order: on the zoo's modules and on
values of every shape an attribute takes (a symbol, ints, a tuple of ints, symbols in a tuple
after ints, nested lists, other attributes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation
from shardc.ir.parser import parse_module
from shardc.ir.symbols import op_symbols, symbols_in, symbols_of

ROOT = Path(__file__).resolve().parent.parent
ZOO = sorted((ROOT / "examples").glob("*.mlir")) + sorted((ROOT / "examples" / "jax").glob("*.mlir"))


def _expected(ops: list[Operation]) -> list[str]:
    return [n for op in ops for v in op.attributes.values() for n in symbols_in(v)]


def test_every_shape_of_value() -> None:
    values = {
        "callee": Symbol("f"), "dims": (0, 1, 2), "n": 3, "flag": True, "text": "g",
        "mixed": (0, Symbol("g"), (Symbol("h"),)), "listed": [Symbol("i"), [Symbol("j")]],
        "empty": (), "bools": (True, False), "nested_ints": ((0, 1), (2,)),
    }
    ops = [Operation("custom", [], [], values), Operation("plain", [], [], {}),
           Operation("other", [], [], {"branches": (Symbol("k"), Symbol("l"))})]
    assert symbols_of(ops) == _expected(ops) == ["f", "g", "h", "i", "j", "k", "l"]
    assert [op_symbols(op) for op in ops] == [["f", "g", "h", "i", "j"], [], ["k", "l"]]


@pytest.mark.parametrize("path", ZOO, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_zoo(path: Path) -> None:
    text = path.read_text()
    if "stablehlo." in text or "sdy." in text:
        from shardc.stablehlo import import_stablehlo

        module = import_stablehlo(text, str(path))
    else:
        module = parse_module(text, str(path))
    for func in module.functions.values():
        ops = list(func.body)
        assert symbols_of(ops) == _expected(ops)
