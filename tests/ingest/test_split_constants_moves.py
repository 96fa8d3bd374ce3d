"""`split-constants` moves a constant sub-computation only one op uses right before that op
instead of copying it there and erasing it (passes/ingest/split_constants.py: `_move_before`):
the program is the one copying makes (numbered names dropped as a copy's are), the ops are the
same objects, and a shared sub-computation is still copied per user."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.ir.core import Module
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.ingest import split_constants
from shardc.passes.ingest.split_constants import split_module

ROOT = Path(__file__).resolve().parents[2]

TEXT = """
func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = constant {value = dense<1.0>} : tensor<8xf32>
  %0 = constant {value = dense<2.0>} : tensor<4xf32>
  %1 = concatenate %0, %0 {dimension = 0} : tensor<8xf32>
  %s = constant {value = dense<3.0>} : tensor<f32>
  %2 = broadcast_in_dim %s {broadcast_dimensions = []} : tensor<8xf32>
  %3 = negate %2 : tensor<8xf32>
  %a = add %x, %c : tensor<8xf32>
  %b = multiply %a, %c : tensor<8xf32>
  %d = add %b, %1 : tensor<8xf32>
  %e = subtract %d, %3 : tensor<8xf32>
  return %e
}
"""


def _split(text: str, name: str, move: bool, monkeypatch: pytest.MonkeyPatch) -> Module:
    module = parse_module(text, name)
    with monkeypatch.context() as m:
        if not move:  # (every sub-computation copied, as before moving)
            m.setattr(split_constants, "_sole_user_tree", lambda v, out: False)
        split_module(module)
    return module


def test_single_user_trees_move(monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse_module(TEXT, "t.mlir")
    before = {op.results[0].name_hint: op for op in module.main.body if op.results}
    split_module(module)
    ops = list(module.main.body)
    names = [op.name for op in ops]
    # %2 and %3 (a scalar's broadcast and its negation, used by %e alone) moved before %e, the
    # same ops; the scalar %s stays shared where it was
    assert ops[names.index("subtract") - 2:names.index("subtract")] == [before["2"], before["3"]]
    assert before["s"] in ops
    # %c, used twice: the first user gets a copy; the last is then its only user, and the
    # original moves before it (copying it there and erasing it made the same program)
    add, multiply = ops[names.index("add")], ops[names.index("multiply")]
    assert add.operand(1).defining_op is not before["c"]
    assert add.operand(1).defining_op is ops[names.index("add") - 1]
    assert multiply.operand(1).defining_op is before["c"]
    assert ops[names.index("multiply") - 1] is before["c"]
    # %0, both operands of the concatenate (a user: not a constant expression), likewise
    concatenate = ops[names.index("concatenate")]
    assert concatenate.operand(1).defining_op is before["0"]
    assert concatenate.operand(0).defining_op is not before["0"]
    assert print_module(module) == print_module(_split(TEXT, "t.mlir", False, monkeypatch))


ZOO = sorted((ROOT / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", ZOO, ids=lambda p: p.stem)
def test_moving_makes_the_program_copying_makes(path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text()
    moved = print_module(_split(text, str(path), True, monkeypatch))
    assert moved == print_module(_split(text, str(path), False, monkeypatch))
