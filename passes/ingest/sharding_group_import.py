"""`sharding-group-import` (Shardy's `sdy-sharding-group-import`): groups that share a value
become one group, ids are renumbered 0..N-1, and a value keeps one `sharding_group` op per group.

    sharding_group %a {group_id = 7}              sharding_group %a {group_id = 0}
    sharding_group %b {group_id = 7}       ->     sharding_group %b {group_id = 0}
    sharding_group %b {group_id = 3}              sharding_group %c {group_id = 1}
    sharding_group %c {group_id = 9}

Ops are visited in program order (a manual_computation's body where the op stands). Each value
adds its groups' ids to an equivalence relation in that order; the classes are numbered in the
order their first id was met (as jaxlib's Shardy numbers them). The members of a group must all
be outside any manual_computation or all in the same one, and must have one shape: otherwise a
located error.
Shardings are not touched: propagation keeps the members of a group on one sharding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.registry import op_error
from shardc.ir.symbols import region_symbols
from shardc.passes.ingest.call_graph import region_functions
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def _walk(
    module: Module, func: Function, parent: Operation | None, active: frozenset[str]
) -> Iterator[tuple[Operation, Operation | None]]:
    """`func`'s ops in program order, each with its innermost enclosing manual_computation."""
    for op in func.body:
        yield op, parent
        inner = op if op.name == "manual_computation" else parent
        for name in region_symbols(op):
            region = module.functions.get(name)
            if region is not None and name not in active:
                yield from _walk(module, region, inner, active | {name})


def group_ops(module: Module) -> list[tuple[Operation, Operation | None]]:
    """Every `sharding_group` op in program order, with its enclosing manual_computation."""
    regions = region_functions(module)
    out = []
    for func in list(module.functions.values()):
        if func.name not in regions:
            out += [
                (op, parent)
                for op, parent in _walk(module, func, None, frozenset({func.name}))
                if op.name == "sharding_group"
            ]
    return out


def _validate(ops: list[tuple[Operation, Operation | None]]) -> None:
    parents: dict[int, Operation | None] = {}
    shapes: dict[int, tuple[int, ...]] = {}
    for op, parent in ops:
        gid = op.attributes["group_id"]
        if parents.setdefault(gid, parent) is not parent:
            raise op_error(
                op,
                "ShardingGroupOps values cannot cross ManualComputationOp boundaries for "
                f"groupId: {gid}",
            )
        shape = tuple(op.operand(0).type.shape)
        if shapes.setdefault(gid, shape) != shape:
            raise op_error(
                op, f"ShardingGroupOps values must have the same shape for groupId: {gid}"
            )


class _Classes:
    """Union-find over group ids that remembers the order ids were first met."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = min(ra, rb), max(ra, rb)
            self.parent[hi] = lo


def import_sharding_groups(module: Module) -> None:
    ops = group_ops(module)
    _validate(ops)
    if not ops:
        return
    by_value: dict[int, list[Operation]] = {}
    values: dict[int, Value] = {}
    for op, _ in ops:
        v = op.operand(0)
        by_value.setdefault(id(v), []).append(op)
        values[id(v)] = v
    classes = _Classes()
    for members in by_value.values():
        first = members[0].attributes["group_id"]
        for op in members:
            classes.union(first, op.attributes["group_id"])
    new_id: dict[int, int] = {}
    for gid in list(classes.parent):  # a class is numbered when its first id is met
        new_id.setdefault(classes.find(gid), len(new_id))
    for members in by_value.values():
        seen: set[int] = set()
        for op in members:
            gid = new_id[classes.find(op.attributes["group_id"])]
            if gid in seen:
                op.erase()
                continue
            seen.add(gid)
            op.attributes["group_id"] = gid


@register_pass("sharding-group-import")
@dataclass(frozen=True)
class ShardingGroupImport(Pass):
    """Merge sharding groups that share a value, renumber them 0..N-1, drop duplicates."""

    def run(self, module: Module, ctx: PassContext) -> None:
        import_sharding_groups(module)


register_alias("sdy-sharding-group-import", "sharding-group-import")
