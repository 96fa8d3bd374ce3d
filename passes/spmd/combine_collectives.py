"""`combine-collectives`: independent collectives of the same kind, device groups and reduction
become one collective over several operands, up to a byte threshold, as XLA's all-reduce,
all-gather and reduce-scatter combiners do. It runs on the per-device program (after `spmd`):

    shardc opt model.mlir -p 'spmd,combine-collectives'                 # XLA's threshold
    shardc opt model.mlir -p 'spmd,combine-collectives{threshold=1048576}'
    shardc opt model.mlir -p 'spmd,combine-collectives{threshold=0}'    # off

    %3 = spmd.all_reduce %1 {axes = ["dp"], kind = add, groups = [[0, 1]]} : tensor<64xf32>
    %4 = multiply %3, %3 : tensor<64xf32>
    %5 = spmd.all_reduce %2 {axes = ["dp"], kind = add, groups = [[0, 1]]} : tensor<64x64xf32>
  becomes
    %3, %5 = spmd.all_reduce %1, %2 {axes = ["dp"], kind = add, groups = [[0, 1]]}
             : tensor<64xf32>, tensor<64x64xf32>
    %4 = multiply %3, %3 : tensor<64xf32>

Why here, on the per-device program, and not on the global collectives: this is where XLA
combines (after SPMD partitioning), and where one global collective has become the launches a
backend makes (a reduce_scatter onto two dims is two `spmd.reduce_scatter`s, each combinable
with others); the executors run this program, and the global program keeps one sharding per
value, which an op over several differently-sharded operands would not fit.

The rule, per function (region functions too), for each key in order of first appearance
(`spmd.all_reduce` by groups and `kind`; `spmd.all_gather` and `spmd.reduce_scatter` by groups,
`dim` and element type, since their operands travel as one concatenated buffer): walk the
collectives of that key in program order and add each to the open group unless it depends on a
member (its operands are computed from a member's result), or the group's result bytes would
pass `threshold`, or the group has `count` members (XLA's 256), or an op with side effects that
depends on a member lies before it; then the group closes and a new one starts with it. A
group of two or more becomes one op where its last member stood; the ops between its first and
last member that depend on an earlier member move (in order) to right after it. Nothing depends
on wall-clock or load: the same program always gives the same groups.

The default threshold is XLA's for the GPU combiners, `kDefaultAllReduceCombineThreshold` (and
the all-gather and reduce-scatter ones) in xla/service/collective_utils.h: 30 MiB + 7 bytes,
with at most 256 operands (`combine_threshold_count`). XLA:CPU runs only its all-reduce
combiner, with no byte limit; docs/spmd.md says more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.effects import SIDE_EFFECTS
from shardc.ir.ops.manual_bodies import bodies_fixed
from shardc.ir.ops.registry import verify_operation
from shardc.ir.ops.spmd import COMBINABLE
from shardc.ir.symbols import op_symbols
from shardc.ir.types import element_bytes
from shardc.passes.manager import Pass, PassContext, register_pass

# XLA's default combine threshold (xla/service/collective_utils.h) and operand count.
DEFAULT_THRESHOLD = 30 * 1024 * 1024 + 7
DEFAULT_COUNT = 256


def result_bytes(op: Operation) -> int:
    """Bytes of `op`'s results on one device (what XLA's combiners count against the
    threshold)."""
    return sum(math.prod(r.type.shape) * element_bytes(r.type.dtype) for r in op.results)


def combine_key(op: Operation) -> tuple[Any, ...] | None:
    """What two collectives must share to combine (None: `op` does not combine)."""
    if op.name not in COMBINABLE:
        return None
    groups = tuple(tuple(g) for g in op.attributes["groups"])
    axes = tuple(op.attributes["axes"])
    if op.name == "spmd.all_reduce":
        return (op.name, axes, groups, op.attributes["kind"].word)
    dtypes = {v.type.dtype for v in op.operands}
    if len(dtypes) != 1:
        return None
    return (op.name, axes, groups, op.attributes["dim"], dtypes.pop())


@register_pass("combine-collectives")
@dataclass(frozen=True)
class CombineCollectives(Pass):
    """Combine independent per-device collectives of one kind, group and reduction (XLA's
    all-reduce / all-gather / reduce-scatter combiners)."""

    threshold: int = DEFAULT_THRESHOLD
    count: int = DEFAULT_COUNT

    def run(self, module: Module, ctx: PassContext) -> None:
        if self.threshold < 0:
            raise PassError(
                f"combine-collectives: threshold must be 0 (off) or more bytes, not "
                f"{self.threshold}"
            )
        if self.count < 1:
            raise PassError(f"combine-collectives: count must be at least 1, not {self.count}")
        stats = ctx.data.setdefault(
            "combine_collectives",
            {"threshold": self.threshold, "before": 0, "after": 0, "combined": 0},
        )
        effects = _Effects(module)
        # Each op's combine key, asked once: every key walks from its first collective to its last.
        keys: dict[Operation, tuple | None] = {}
        with bodies_fixed(module):  # (combining moves no manual_computation)
            for func in module.functions.values():
                before = sum(1 for op in func.body if op.name in COMBINABLE)
                if self.threshold > 0:
                    for key, (first, count) in _keys(func, keys).items():
                        if count < 2:
                            continue  # (nothing to combine it with)
                        if first.parent is None:  # moved by an earlier key's combining
                            first = func.body.first
                        for group in self._groups(first, count, key, effects, keys):
                            _combine(func, group)
                            stats["combined"] += 1
                stats["before"] += before
                stats["after"] += sum(1 for op in func.body if op.name in COMBINABLE)

    def _groups(self, first: Operation, count: int, key: tuple, effects: _Effects,
                keys: dict[Operation, tuple | None]) -> list[list[Operation]]:
        """The groups of two or more collectives of `key` to combine, in program order
        (`keys`: the combine keys known so far, by op). The walk starts at `first`, the key's
        first collective, and stops at its last (the `count`th): before the first no value
        depends on one, after the last none can join a group."""
        ancestors: dict[int, int] = {}  # id(value) -> bit set of the key's collectives it uses
        groups: list[list[Operation]] = []
        members: list[Operation] = []
        mask = size = seen = 0
        sealed = False
        op: Operation | None = first
        while op is not None and seen < count:
            deps = 0
            for v in op.operands:
                deps |= ancestors.get(id(v), 0)
            mine = deps
            mine_key = keys.get(op, _UNKNOWN)
            if mine_key is _UNKNOWN:
                mine_key = keys[op] = combine_key(op)
            if mine_key == key:
                n = result_bytes(op)
                if members and (deps & mask or sealed or size + n > self.threshold
                                or len(members) >= self.count):
                    if len(members) > 1:
                        groups.append(members)
                    members, mask, size, sealed = [], 0, 0, False
                bit = 1 << seen  # one bit per collective of the key
                seen += 1
                members.append(op)
                mask |= bit
                size += n
                mine |= bit
            elif members and deps & mask and effects.of(op):
                # It would have to move past the combined op: keep the group before it.
                sealed = True
            if mine:
                for r in op.results:
                    ancestors[id(r)] = mine
            op = op.next
        if len(members) > 1:
            groups.append(members)
        return groups


def _keys(func: Function, known: dict[Operation, tuple | None]) -> dict[tuple, tuple[
        Operation, int]]:
    """The combine keys of `func`'s collectives in order of first appearance, each with its
    first collective and their number (`known`: filled with every op's key). Combining the
    groups of one key leaves another's number as it was, and its first collective first unless
    that one moved: an op it moves (one that depends on a member) goes later, as a copy with the
    key it had."""
    keys: dict[tuple, tuple[Operation, int]] = {}
    for op in func.body:
        key = known[op] = combine_key(op)
        if key is not None:
            first, count = keys.get(key, (op, 0))
            keys[key] = (first, count + 1)
    return keys


def _combine(func: Function, group: list[Operation]) -> None:
    """Replace `group` (program order, independent) by one op where its last member is; the
    ops in between that use an earlier member's result move to right after it."""
    first, last = group[0], group[-1]
    block = first.parent
    assert block is not None
    tainted = {id(r) for op in group[:-1] for r in op.results}
    moved: list[Operation] = []
    op = first.next
    while op is not last:
        assert op is not None, "the group's members are in program order"
        if any(id(v) in tainted for v in op.operands):
            moved.append(op)
            tainted.update(id(r) for r in op.results)
        op = op.next
    combined = Operation.at(
        last, last.name, [m.operand(0) for m in group], [m.result.type for m in group],
        dict(last.attributes),
    )
    block.insert_before(last, combined)
    for member, result in zip(group, combined.results):
        result.name_hint = member.result.name_hint
        member.result.replace_all_uses_with(result)
        member.erase()
    verify_operation(combined)
    anchor = combined
    for op in moved:  # a copy after the anchor takes over the op's uses, in order
        copy = block.insert_after(anchor, op.clone())
        for old, fresh in zip(op.results, copy.results):
            fresh.name_hint = old.name_hint
            old.replace_all_uses_with(fresh)
        op.erase()
        anchor = copy


_UNKNOWN: Any = object()


class _Effects:
    """Whether an op has side effects, its callees' and regions' included (asked once per op:
    every key's walk asks again)."""

    def __init__(self, module: Module):
        self.module = module
        self._funcs: dict[str, bool] = {}
        self._ops: dict[Operation, bool] = {}

    def of(self, op: Operation) -> bool:
        known = self._ops.get(op)
        if known is None:
            known = self._ops[op] = self._of(op)
        return known

    def _of(self, op: Operation) -> bool:
        if op.name in SIDE_EFFECTS and op.name != "return":
            return True
        if not op.attributes:
            return False  # (names no function: most ops)
        return any(self._function(name) for name in op_symbols(op))

    def _function(self, name: str) -> bool:
        if name not in self._funcs:
            self._funcs[name] = False  # recursion: assume none until seen
            func = self.module.lookup_function(name)
            self._funcs[name] = func is not None and any(self.of(op) for op in func.body)
        return self._funcs[name]

