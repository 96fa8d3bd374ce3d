"""Where Shardy's export passes put the ops they create, and what Shardy calls two shardings that
mean the same layout.

`Cursor` is an MLIR insertion point: new ops go right before an anchor op (or at the end of the
block), in the order they are created. `Cursor.after(op)` anchors at the op after `op` *now*, so,
as in MLIR, two cursors set after the same op put their ops in the order the cursors insert.

`equivalent` is Shardy's `isEquivalent`, `dims_replicated` its `isFullyReplicated` (unreduced
axes do not count there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shardc.ir.core import Block, Function, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.types import DistributedTensorType, TensorType


@dataclass
class Cursor:
    block: Block
    anchor: Operation | None  # None: the end of the block

    @classmethod
    def before(cls, op: Operation) -> Cursor:
        assert op.parent is not None
        return cls(op.parent, op)

    @classmethod
    def after(cls, op: Operation) -> Cursor:
        assert op.parent is not None
        return cls(op.parent, op.next)

    @classmethod
    def after_value(cls, v: Value) -> Cursor:
        """Right after `v` is defined (a function argument: the start of the function)."""
        if v.defining_op is not None:
            return cls.after(v.defining_op)
        func = v.owner
        assert isinstance(func, Function)
        return cls(func.body, func.body.first)

    def insert(self, op: Operation) -> Operation:
        if self.anchor is None:
            return self.block.append(op)
        return self.block.insert_before(self.anchor, op)

    def create(
        self,
        name: str,
        operand: Value,
        mapping: NamedMapping | None,
        attrs: dict[str, Any] | None = None,
        at: Operation | None = None,
    ) -> Value:
        """Insert a one-operand, one-result op whose result is typed like `operand` with
        `mapping`, made for `at` (its location and cause, `Operation.at`); returns the
        result."""
        t = operand.type
        result: TensorType = (
            DistributedTensorType(t.shape, t.dtype, mapping)
            if mapping is not None
            else TensorType(t.shape, t.dtype)
        )
        op = (Operation(name, [operand], [result], attrs or {}) if at is None
              else Operation.at(at, name, [operand], [result], attrs or {}))
        return self.insert(op).result


def dims_replicated(m: NamedMapping | None) -> bool:
    """Shardy's `isFullyReplicated`: no dim is sharded (unreduced axes do not count)."""
    return m is None or all(not d.axes for d in m.dims)


def equivalent(a: NamedMapping | None, b: NamedMapping | None) -> bool:
    """Shardy's `isEquivalent`: the same layout (open/closed, priorities and replicated axes
    aside). A missing sharding is replicated; otherwise replicated means no dim sharded and no
    unreduced axis."""
    if a is None:
        return dims_replicated(b)

    def replicated(m: NamedMapping | None) -> bool:
        return m is None or (not m.unreduced and dims_replicated(m))

    if replicated(a):
        return replicated(b)
    if b is None:
        return False
    return (
        a.mesh == b.mesh
        and a.unreduced == b.unreduced
        and tuple(d.axes for d in a.dims) == tuple(d.axes for d in b.dims)
    )


def closed_replicated(like: NamedMapping, rank: int | None = None) -> NamedMapping:
    """Shardy's `getFullyClosedLike`: `like`'s mesh, every dim closed and empty."""
    n = like.rank if rank is None else rank
    return NamedMapping(like.mesh, tuple(DimSharding() for _ in range(n)))
