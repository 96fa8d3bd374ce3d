"""The IR graph: use lists, mutation API, builder, verifier, and text round trips."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from shardc.ir.builder import Builder
from shardc.ir.core import Operation
from shardc.ir.diagnostics import VerifyError
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.ir.verifier import verify_module
from tests.programs import modules


def small_program():
    b = Builder()
    mesh = b.mesh("mesh", {"dp": 2, "tp": 4})
    with b.function("main") as f:
        x = f.arg((8, 16), "f32", mesh.spec("dp", None), name="x")
        w = f.arg((16, 32), "f32", mesh.spec(None, "tp"), name="w")
        h = b.matmul(x, w)
        t = b.tanh(h)
        s = b.add(t, h)
        f.returns(s)
    return b, x, w, h, t, s


def test_builder_infers_types_and_prints() -> None:
    b, *_ = small_program()
    text = print_module(b.module)
    assert (
        "%0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x32xf32>"
        in text
    )
    assert parse_module(text) is not None
    assert print_module(parse_module(text)) == text


def test_use_lists_track_operand_indices() -> None:
    _, x, w, h, t, s = small_program()
    assert [(u.op.name, u.index) for u in h.uses] == [("tanh", 0), ("add", 1)]
    add = s.defining_op
    add.set_operand(1, t)
    assert [(u.op.name, u.index) for u in h.uses] == [("tanh", 0)]
    assert [(u.op.name, u.index) for u in t.uses] == [("add", 0), ("add", 1)]


def test_replace_all_uses_and_erase() -> None:
    b, x, w, h, t, s = small_program()
    with b.insertion_point(after=h.defining_op):
        n = b.negate(h)
    h.replace_uses_if(n, lambda use: use.op is not n.defining_op)
    assert [u.op.name for u in h.uses] == ["negate"]
    assert {u.op.name for u in n.uses} == {"tanh", "add"}
    verify_module(b.module)
    with pytest.raises(VerifyError, match="still has"):
        h.defining_op.erase()
    t_op = t.defining_op
    t.replace_all_uses_with(n)
    t_op.erase()
    assert [op.name for op in b.module.main.ops] == ["dot_general", "negate", "add", "return"]
    verify_module(b.module)


def test_insert_before_keeps_order() -> None:
    b, x, w, h, t, s = small_program()
    with b.insertion_point(before=t.defining_op):
        c = b.abs(h)
        d = b.negate(c)
    names = [op.name for op in b.module.main.ops]
    assert names == ["dot_general", "abs", "negate", "tanh", "add", "return"]
    assert d.type.shape == (8, 32)


def test_builder_rejects_bad_ops_immediately() -> None:
    b = Builder()
    with b.function("main") as f:
        x = f.arg((8, 16))
        y = f.arg((4, 16))
        with pytest.raises(VerifyError, match="equal shapes"):
            b.add(x, y)


def test_verifier_catches_use_before_def() -> None:
    b, x, w, h, t, s = small_program()
    tanh = t.defining_op
    block = tanh.parent
    tanh_next = tanh.next
    block._unlink(tanh)
    block.insert_after(tanh_next, tanh)  # tanh now after add, which uses it
    with pytest.raises(VerifyError, match="used before it is defined"):
        verify_module(b.module)


def test_operation_is_identity_hashed() -> None:
    _, x, w, h, t, s = small_program()
    ops = {h.defining_op, t.defining_op}
    assert len(ops) == 2
    assert isinstance(h.defining_op, Operation)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_random_modules_round_trip(module) -> None:
    text = print_module(module)
    again = parse_module(text, "random.mlir")
    assert print_module(again) == text
    # structural equality: same ops, types and attributes in the same order
    a_ops = list(module.walk())
    b_ops = list(again.walk())
    assert [(o.name, o.attributes, [r.type for r in o.results]) for o in a_ops] == [
        (o.name, o.attributes, [r.type for r in o.results]) for o in b_ops
    ]


def test_clone_is_deep_and_prints_the_same() -> None:
    b, x, w, h, t, s = small_program()
    copy = b.module.clone()
    assert print_module(copy) == print_module(b.module)
    copied = list(copy.walk())
    assert all(a is not o for a, o in zip(copied, b.module.walk()))
    copied[1].attributes["shardc.note"] = "changed"
    assert "shardc.note" not in print_module(b.module)
    assert [u.op.name for u in copy.main.args[0].uses] == ["dot_general"]
    assert x.uses and copy.main.args[0] is not x
    # the copy's block links both ways and counts its ops; its values name their new owners
    body = copy.main.body
    assert len(body) == len(b.module.main.body)
    assert [op.name for op in reversed(body)] == [op.name for op in reversed(b.module.main.body)]
    for op in body:
        assert op.parent is body and all(r.owner is op for r in op.results)
        assert [r.index for r in op.results] == list(range(len(op.results)))
        assert all(u.op.parent is body for r in op.results for u in r.uses)


def test_verifier_checks_every_repeat_of_an_op() -> None:
    """The verifier passes an op like one it passed (same name, types, attribute objects)
    without checking it again: an op that differs from it only in an attribute's value, in a
    second function too, is still checked."""
    b = Builder()
    with b.function("main") as f:
        x = f.arg((8, 16))
        first = b.transpose(x, (1, 0))
        second = b.transpose(x, (1, 0))
        f.returns(b.add(first, second))
    verify_module(b.module)  # both pass
    second.defining_op.attributes["permutation"] = (1, 1)
    with pytest.raises(VerifyError, match="permutation"):
        verify_module(b.module)
    second.defining_op.attributes["permutation"] = first.defining_op.attributes["permutation"]
    verify_module(b.module)
    with b.function("other") as g:
        y = g.arg((8, 16))
        t = b.transpose(y, (1, 0))
        g.returns(t)
    verify_module(b.module)
    t.defining_op.attributes["permutation"] = (0, 0)
    with pytest.raises(VerifyError, match="permutation"):
        verify_module(b.module)
