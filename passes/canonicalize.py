"""`canonicalize`: local rewrites of reshards and collectives, applied to a fixed point.

    shardc opt model.mlir -p insert-reshards,canonicalize,lower-collectives,canonicalize

The rewrites are a table of `(pattern, function)` rows (tinygrad style): a row's pattern names
the ops it looks at, its function rewrites one such op in place and says whether it did. Every
rewrite keeps each value's layout (its type), so the verifier still holds after each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mesh import AxisRef
from shardc.ir.ops import GLOBAL_COLLECTIVES, verify_operation
from shardc.ir.types import DistributedTensorType
from shardc.passes.collectives.steps import same_layout
from shardc.passes.manager import Pass, PassContext, register_pass

Rewrite = Callable[[Operation], bool]
ANY = "*"
COLLECTIVES = GLOBAL_COLLECTIVES
# Ops that must stay even when nothing uses their results.
SIDE_EFFECTS = frozenset({"return", "custom_call", "sharding_group", "manual_computation"})


def _producer(v: Value, name: str) -> Operation | None:
    op = v.defining_op
    return op if op is not None and op.name == name else None


def _forward(op: Operation, value: Value) -> bool:
    """Replace `op`'s result by `value` and erase `op`."""
    value_hint = value.name_hint or op.result.name_hint
    op.result.replace_all_uses_with(value)
    op.erase()
    value.name_hint = value_hint
    return True


def fold_reshard_chain(op: Operation) -> bool:
    inner = _producer(op.operand(0), "reshard")
    if inner is None or len(inner.result.uses) != 1:
        return False
    op.set_operand(0, inner.operand(0))
    inner.erase()
    return True


def drop_noop(op: Operation) -> bool:
    source, result = op.operand(0).mapping, op.result.mapping
    if source is None or result is None or not same_layout(source, result):
        return False
    return _forward(op, op.operand(0))


def _flat(per_dim: tuple[tuple[AxisRef, ...], ...]) -> list[AxisRef]:
    return [a for axes in per_dim for a in axes]


def all_reduce_then_slice(op: Operation) -> bool:
    reduce = _producer(op.operand(0), "all_reduce")
    if reduce is None or len(reduce.result.uses) != 1:
        return False
    scattered = _flat(op.attr("slicing_axes"))
    reduced = list(reduce.attr("reduction_axes"))
    if not scattered or any(a not in reduced for a in scattered):
        return False
    source = reduce.operand(0)
    rest = tuple(a for a in reduced if a not in scattered)
    block = op.parent
    assert block is not None
    built: list[Operation] = []
    try:
        if rest:
            mapping = source.mapping
            assert mapping is not None, "all_reduce verifies its operand has a sharding"
            kept = tuple(a for a in mapping.unreduced if a not in rest)
            partial = mapping.replace(unreduced=kept)
            t = DistributedTensorType(source.type.shape, source.type.dtype, partial)
            first = Operation("all_reduce", [source], [t], {"reduction_axes": rest}, reduce.loc)
            built.append(block.insert_before(op, first))
            verify_operation(first)
            source = first.result
        attrs = {"scatter_axes": op.attr("slicing_axes")}
        new = Operation("reduce_scatter", [source], [op.result.type], attrs, op.loc)
        built.append(block.insert_before(op, new))
        verify_operation(new)
    except ShardcError:  # a layout the IR's ops cannot spell: keep the original pair
        for b in reversed(built):
            b.erase()
        return False
    _forward(op, new.result)
    reduce.erase()
    return True


def _cancel(op: Operation, inner_name: str, inner_key: str, outer_key: str) -> bool:
    inner = _producer(op.operand(0), inner_name)
    if inner is None or inner.attr(inner_key) != op.attr(outer_key):
        return False
    source = inner.operand(0)
    if source.mapping is None or not same_layout(source.mapping, op.result.mapping):
        return False
    return _forward(op, source)


def slice_after_gather(op: Operation) -> bool:
    return _cancel(op, "all_gather", "gathering_axes", "slicing_axes")


def gather_after_slice(op: Operation) -> bool:
    return _cancel(op, "all_slice", "slicing_axes", "gathering_axes")


def erase_dead(op: Operation) -> bool:
    if op.name in SIDE_EFFECTS or not op.results or any(r.uses for r in op.results):
        return False
    op.erase()
    return True


REWRITES: list[tuple[str | tuple[str, ...], Rewrite]] = [
    ("reshard", fold_reshard_chain),  # reshard(reshard(x)) -> reshard(x)
    ("reshard", drop_noop),  # reshard(x) laid out as x -> x
    (COLLECTIVES, drop_noop),  # collective(x) laid out as x (empty axes) -> x
    ("all_slice", all_reduce_then_slice),  # all_slice{A}(all_reduce{A}(x)) -> reduce_scatter{A}(x)
    ("all_slice", slice_after_gather),  # all_slice{A}(all_gather{A}(x)) -> x
    ("all_gather", gather_after_slice),  # all_gather{A}(all_slice{A}(x)) -> x
    (ANY, erase_dead),  # op whose results are unused, without side effects -> nothing
]


def _matches(pattern: str | tuple[str, ...], op: Operation) -> bool:
    if pattern == ANY:
        return True
    return op.name == pattern if isinstance(pattern, str) else op.name in pattern


def canonicalize_module(module: Module, rewrites=REWRITES) -> int:
    """Apply `rewrites` until none fires; returns how many rewrites ran."""
    count = 0
    for func in module.functions.values():
        changed = True
        while changed:
            changed = False
            for op in list(func.body):
                if op.parent is None:
                    continue
                for pattern, rewrite in rewrites:
                    if _matches(pattern, op) and rewrite(op):
                        count += 1
                        changed = True
                        break
    return count


@register_pass("canonicalize")
@dataclass(frozen=True)
class Canonicalize(Pass):
    """Fold reshard chains, drop no-op collectives, fuse all_reduce+all_slice, erase dead ops."""

    def run(self, module: Module, ctx: PassContext) -> None:
        stats = ctx.data.setdefault("canonicalize", {"rewrites": 0})
        stats["rewrites"] += canonicalize_module(module)
