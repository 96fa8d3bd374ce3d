"""`split-constants`: give every user its own copy of a constant sub-computation.

A constant expression is a `constant` or `iota`, or a pure broadcast/reshape/slice/element-wise
op whose operands are all constant expressions. Shared constants would otherwise carry a
sharding from one user to an unrelated other; Shardy splits them before propagating
(`sdy-constant-or-scalar-splitter`) and so does shardc. Broadcasts of scalars are split too;
scalars themselves are never sharded and stay shared.

    %c = constant {value = dense<1.0>} : tensor<8xf32>
    %a = add %x, %c : tensor<8xf32>
    %b = multiply %y, %c : tensor<8xf32>
  becomes
    %c = constant {value = dense<1.0>} : tensor<8xf32>
    %a = add %x, %c : tensor<8xf32>
    %0 = constant {value = dense<1.0>} : tensor<8xf32>
    %b = multiply %y, %0 : tensor<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops import ELEMENTWISE, get_op_def
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

_PRESERVING = ("broadcast_in_dim", "reshape", "slice")
# Every constant sub-computation starts at one of these (a broadcast of a scalar is split too).
_SOURCES = frozenset({"constant", "iota", "broadcast_in_dim"})


def _is_constant_expression(op: Operation, constants: set[int]) -> bool:
    if op.name in ("constant", "iota"):
        return True
    op_def = get_op_def(op.name)
    preserving = op.name in _PRESERVING or (op_def is not None and op_def.has(ELEMENTWISE))
    return preserving and all(
        v.defining_op is not None and id(v.defining_op) in constants for v in op.operands
    )


def _is_scalar_expansion(op: Operation) -> bool:
    return op.name == "broadcast_in_dim" and op.operand(0).type.rank == 0


def _clone_tree(
    v: Value,
    before: Operation | None,
    mapping: dict[int, Value],
    sources: dict[int, Operation] | None = None,
) -> Value:
    """Clone the sub-computation producing `v` right before `before`, or with `before=None`
    each op right before the op it copies (as Shardy does; scalars stay shared)."""
    if v.type.rank == 0 or id(v) in mapping:
        return mapping.get(id(v), v)
    op = v.defining_op
    assert op is not None
    operands = [
        _clone_tree(o, before, mapping, sources) if o.defining_op is not None else o
        for o in op.operands
    ]
    copy = op.clone(operands)
    if sources is not None:
        sources[id(copy)] = sources.get(id(op), op)
    anchor = op if before is None else before
    anchor.parent.insert_before(anchor, copy)  # type: ignore[union-attr]
    for old, new in zip(op.results, copy.results):
        mapping[id(old)] = new
    for old, new in zip(op.results, copy.results):  # the copy joins the original's groups
        for group in [u.op for u in old.uses if u.op.name == "sharding_group"]:
            anchor.parent.insert_before(anchor, group.clone([new]))  # type: ignore[union-attr]
    return mapping[id(v)]


def _sole_user_copy(op: Operation, constants: set[int], expansions: set[int]) -> bool:
    """`op` has one use and no operand to copy with it (nothing but scalars or values from
    outside the constant sub-computations): its copy for that use, right before it, would be
    the same op in the same place, and `op` would be erased."""
    uses = 0
    for r in op.results:
        uses += len(r.uses)
    if uses != 1:
        return False
    for o in op.operands:
        d = o.defining_op
        if d is not None and o.type.rank > 0 and (id(d) in constants or id(d) in expansions):
            return False
    return True


def _rename_as_copy(op: Operation) -> None:
    """The result names `Operation.clone` gives a copy (numbered names are dropped)."""
    for r in op.results:
        if (r.name_hint or "").isdigit():
            r.name_hint = None


def split_function(
    func: Function, at_original: bool = False, sources: dict[int, Operation] | None = None
) -> int:
    """Clone every shared constant sub-computation per user; the clones go right before their
    user, or with `at_original` each right before the op it copies (where Shardy's
    `sdy-constant-or-scalar-splitter` puts them, so that merging them back restores the order
    of the program). `sources`, if given, maps each clone (by id) to the op it copies."""
    if not any(op.name in _SOURCES for op in func.body):
        return 0  # no constant, iota or broadcast: nothing to split (a walk over names only)
    constants: set[int] = set()
    expansions: set[int] = set()
    members: list[Operation] = []
    clones = 0
    for op in list(func.body):
        if op.name == "sharding_group":
            continue
        if _is_constant_expression(op, constants):
            constants.add(id(op))
            members.append(op)
            continue
        if _is_scalar_expansion(op):
            expansions.add(id(op))
            members.append(op)
            continue
        for i, v in enumerate(op.operands):
            d = v.defining_op
            if d is not None and (id(d) in constants or id(d) in expansions) and v.type.rank > 0:
                if at_original and _sole_user_copy(d, constants, expansions):
                    _rename_as_copy(d)  # the copy would be `d` itself, at `d`'s place
                else:
                    op.set_operand(i, _clone_tree(v, None if at_original else op, {}, sources))
                clones += 1
    for op in reversed(members):
        if all(u.op.name == "sharding_group" for r in op.results for u in r.uses):
            for r in op.results:
                for use in list(r.uses):
                    use.op.erase()
            op.erase()
    return clones


# Marks a native `constant` printed as `sdy.constant` (Shardy's splitter turns every
# `stablehlo.constant` into one, which no folding merges; the StableHLO printer reads it).
SDY_CONSTANT_MARKER = "sdy.constant"


def mark_sdy_constants(module: Module) -> None:
    for func in module.functions.values():
        for op in func.body:
            if op.name == "constant":
                op.attributes[SDY_CONSTANT_MARKER] = True


@register_pass("split-constants")
@dataclass(frozen=True)
class SplitConstants(Pass):
    """Clone constant sub-computations per user so they do not link unrelated shardings.
    `at-original`: the clones go right before what they copy (as Shardy places them);
    `sdy-constants`: every constant becomes an `sdy.constant`."""

    at_original: bool = False
    sdy_constants: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            split_function(func, at_original=self.at_original)
        if self.sdy_constants:
            mark_sdy_constants(module)


register_alias(
    "sdy-constant-or-scalar-splitter", "split-constants", at_original="true", sdy_constants="true"
)
