"""The IR graph: `Value`, `Operation`, `Block`, `Function`, `Module`.

Ops, blocks and values are mutable and hashed by identity. Every value keeps its uses as
`(op, operand_index)` pairs; all mutation goes through the methods here (`Operation.set_operand`,
`Value.replace_all_uses_with`, `Block.insert_before/after`, `Operation.erase`) so use lists never
drift. A block is a doubly linked list of ops, so inserting and erasing are O(1).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from shardc.ir.cause import Cause
from shardc.ir.diagnostics import Location, VerifyError
from shardc.ir.mesh import DeviceMesh
from shardc.ir.types import DistributedTensorType, TensorType, with_sharding

# `Function.clone`'s `merge(op, its operands in the copy)`: a key under which the copy keeps only
# the first op (the others' results read its results), or None for an op it keeps.
MergeKey = Callable[["Operation", list["Value"]], Hashable | None]


class Use:
    """One use of a value: `op.operands[index] is value`."""

    __slots__ = ("op", "index")

    def __init__(self, op: Operation, index: int):
        self.op = op
        self.index = index

    def __iter__(self) -> Iterator[Any]:
        yield self.op
        yield self.index

    def __repr__(self) -> str:
        return f"Use({self.op.name}, {self.index})"


class Value:
    """An SSA value: an op result (`owner` is the Operation) or a function argument."""

    __slots__ = ("type", "owner", "index", "uses", "name_hint", "__weakref__")

    def __init__(
        self,
        type: TensorType,
        owner: Operation | Function,
        index: int,
        name_hint: str | None = None,
    ):
        self.type = type
        self.owner = owner
        self.index = index
        self.uses: list[Use] = []
        self.name_hint = name_hint

    @property
    def is_argument(self) -> bool:
        return isinstance(self.owner, Function)

    @property
    def defining_op(self) -> Operation | None:
        return self.owner if isinstance(self.owner, Operation) else None

    @property
    def mapping(self):
        return self.type.mapping  # None for a plain TensorType

    def set_mapping(self, mapping) -> None:
        t = self.type
        if t.mapping is mapping and isinstance(t, DistributedTensorType):
            return  # types are immutable: the same sharding needs no new type
        self.type = with_sharding(t, mapping)

    @property
    def users(self) -> list[Operation]:
        """Distinct user ops in first-use order."""
        seen: dict[int, Operation] = {}
        for use in self.uses:
            seen.setdefault(id(use.op), use.op)
        return list(seen.values())

    def replace_all_uses_with(self, other: Value) -> None:
        for use in list(self.uses):
            use.op.set_operand(use.index, other)

    def replace_uses_if(self, other: Value, predicate) -> None:
        for use in list(self.uses):
            if predicate(use):
                use.op.set_operand(use.index, other)

    @property
    def label(self) -> str:
        """How messages name it: `%x`, `argument 0`, `result 1 of 'dot_general'`."""
        if self.name_hint:
            return f"%{self.name_hint}"
        if self.is_argument:
            return f"argument {self.index}"
        return f"result {self.index} of '{self.owner.name}'"  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"<Value %{self.name_hint or '?'}: {self.type}>"


class Operation:
    """One op: a name, operands, results, typed attributes and a source location.

    `loc` is where diagnostics point; `loc_written` says whether the text spelled it
    (`loc("f.py":3:1)`), in which case the printer writes it back. `cause` is why a pass made
    the op (None for ops the program was written with). Ops a rewrite makes in place of another
    are built with `Operation.at(old, ...)`, so they keep its location and cause.

    NOTE: `scratch` is a pass's own per-op record while that pass runs (None otherwise; the
    pass that sets it clears it before it returns). It is not part of the IR: never printed,
    compared or copied. Propagation keeps its per-op worklist state there (passes/propagation/
    state.py's `Site`), because tables keyed by `id(op)` made the time per op grow with the
    program (docs/benchmarks.md).
    """

    __slots__ = ("name", "_operands", "results", "attributes", "loc", "loc_written", "cause",
                 "parent", "prev", "next", "scratch", "__weakref__")

    def __init__(
        self,
        name: str,
        operands: Sequence[Value],
        result_types: Sequence[TensorType],
        attributes: dict[str, Any] | None = None,
        loc: Location | None = None,
        loc_written: bool = False,
        cause: Cause | None = None,
    ):
        self.name, self._operands = name, list(operands)
        if result_types.__class__ is list and len(result_types) == 1:  # (no comprehension frame)
            self.results = [Value(result_types[0], self, 0)]
        else:
            self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Any] = dict(attributes) if attributes else {}
        self.loc, self.loc_written, self.cause = loc, loc_written, cause
        self.parent: Block | None = None
        self.prev: Operation | None = None
        self.next: Operation | None = None
        self.scratch: object = None
        for i, v in enumerate(self._operands):  # (_add_operand inlined: every op is built here)
            v.uses.append(Use(self, i))

    @classmethod
    def at(
        cls,
        where: Operation,
        name: str,
        operands: Sequence[Value],
        result_types: Sequence[TensorType],
        attributes: dict[str, Any] | None = None,
    ) -> Operation:
        """A new op made in place of (or for) `where`: it inherits `where`'s location, written
        or not, and its cause."""
        return cls(name, operands, result_types, attributes, where.loc, where.loc_written,
                   where.cause)

    # ----- operands ------------------------------------------------------------------------

    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def operand(self, i: int) -> Value:
        return self._operands[i]

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def _add_operand(self, v: Value) -> None:
        v.uses.append(Use(self, len(self._operands)))
        self._operands.append(v)

    def set_operand(self, index: int, value: Value) -> None:
        old = self._operands[index]
        if old is value:
            return
        _drop_use(old, self, index)
        self._operands[index] = value
        value.uses.append(Use(self, index))

    def set_operands(self, values: Sequence[Value]) -> None:
        self._drop_all_operands()
        for v in values:
            self._add_operand(v)

    def _drop_all_operands(self) -> None:
        for i, v in enumerate(self._operands):
            _drop_use(v, self, i)
        self._operands = []

    # ----- results and attributes --------------------------------------------------------------

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise VerifyError(
                f"'{self.name}' op has {len(self.results)} results, expected 1", self.loc
            )
        return self.results[0]

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)

    @property
    def function(self) -> Function | None:
        return self.parent.parent if self.parent is not None else None

    # ----- mutation --------------------------------------------------------------------------

    def clone(self, operands: Sequence[Value] | None = None) -> Operation:
        """A detached copy (same name, attributes, result types and location)."""
        op = Operation(self.name, list(self._operands) if operands is None else operands,
                       [r.type for r in self.results], dict(self.attributes), self.loc,
                       self.loc_written, self.cause)
        for mine, theirs in zip(op.results, self.results):
            mine.name_hint = theirs.name_hint if not (theirs.name_hint or "").isdigit() else None
        return op

    def replace_with(self, new: Operation) -> Operation:
        """Put `new` (detached, with as many results) where this op is: its results take over
        this op's uses and names, and this op goes. Returns `new`."""
        assert self.parent is not None and len(new.results) == len(self.results)
        self.parent.insert_before(self, new)
        for old, fresh in zip(self.results, new.results):
            fresh.name_hint = old.name_hint
            old.replace_all_uses_with(fresh)
        self.erase()
        return new

    def erase(self) -> None:
        """Remove from its block. The results must have no uses left."""
        for r in self.results:
            if r.uses:
                raise VerifyError(
                    f"cannot erase '{self.name}': result {r.index} still has {len(r.uses)} uses",
                    self.loc,
                )
        self._drop_all_operands()
        if self.parent is not None:
            self.parent._unlink(self)

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


def _drop_use(value: Value, op: Operation, index: int) -> None:
    uses = value.uses
    for i in range(len(uses) - 1, -1, -1):
        u = uses[i]
        if u.op is op and u.index == index:
            del uses[i]
            return
    raise AssertionError("use list out of sync")


class Block:
    """An ordered list of ops (doubly linked)."""

    __slots__ = ("first", "last", "parent", "_len")

    def __init__(self, parent: Function | None = None):
        self.first: Operation | None = None
        self.last: Operation | None = None
        self.parent = parent
        self._len = 0

    def __iter__(self) -> Iterator[Operation]:
        op = self.first
        while op is not None:
            nxt = op.next
            yield op
            op = nxt

    def __reversed__(self) -> Iterator[Operation]:
        op = self.last
        while op is not None:
            prv = op.prev
            yield op
            op = prv

    def __len__(self) -> int:
        return self._len

    @property
    def ops(self) -> list[Operation]:
        return list(self)

    def append(self, op: Operation) -> Operation:
        self._link(op, self.last, None)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        assert anchor.parent is self
        self._link(op, anchor.prev, anchor)
        return op

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        assert anchor.parent is self
        self._link(op, anchor, anchor.next)
        return op

    def insert_after_definition(self, value: Value, op: Operation) -> Operation:
        """Put `op` right after `value`'s defining op, or first in this block when `value` is
        an argument (no defining op)."""
        d = value.defining_op
        if d is not None:
            return self.insert_after(d, op)
        if self.first is not None:
            return self.insert_before(self.first, op)
        return self.append(op)

    def _link(self, op: Operation, prev: Operation | None, nxt: Operation | None) -> None:
        assert op.parent is None, "op is already in a block"
        op.parent = self
        op.prev, op.next = prev, nxt
        if prev is None:
            self.first = op
        else:
            prev.next = op
        if nxt is None:
            self.last = op
        else:
            nxt.prev = op
        self._len += 1

    def _unlink(self, op: Operation) -> None:
        if op.prev is None:
            self.first = op.next
        else:
            op.prev.next = op.next
        if op.next is None:
            self.last = op.prev
        else:
            op.next.prev = op.prev
        op.parent = op.prev = op.next = None
        self._len -= 1

    @property
    def terminator(self) -> Operation | None:
        return self.last


class Function:
    """`func [private] @name(%args...) -> (results...) { body }`.

    Argument and result shardings live in the types (`DistributedTensorType.mapping`);
    `arg_attrs`/`res_attrs` hold any other attributes (e.g. imported `jax.result_info`).
    """

    def __init__(
        self,
        name: str,
        arg_types: Sequence[TensorType],
        result_types: Sequence[TensorType],
        *,
        visibility: str = "public",
        loc: Location | None = None,
        arg_names: Sequence[str | None] | None = None,
    ):
        self.name = name
        self.args = [
            Value(t, self, i, (arg_names[i] if arg_names else None))
            for i, t in enumerate(arg_types)
        ]
        self.result_types: list[TensorType] = list(result_types)
        self.visibility = visibility
        # False when the text left the visibility out (MLIR then prints no keyword either).
        self.visibility_written = True
        self.loc = loc
        self.loc_written = False
        self.body = Block(self)
        self.arg_attrs: list[dict[str, Any]] = [{} for _ in arg_types]
        self.arg_labels: list[str | None] = [None] * len(self.args)  # JAX: loc("params['w']")
        self.res_attrs: list[dict[str, Any]] = [{} for _ in result_types]
        self.attributes: dict[str, Any] = {}
        self.module: Module | None = None

    @property
    def ops(self) -> Iterator[Operation]:
        return iter(self.body)

    @property
    def return_op(self) -> Operation | None:
        last = self.body.last
        return last if last is not None and last.name == "return" else None

    @property
    def is_private(self) -> bool:
        return self.visibility == "private"

    def clone(self, name: str | None = None, merge: MergeKey | None = None) -> Function:
        """A deep copy named `name` (default: the same), not added to any module: new ops and
        values (attributes and types are immutable and shared). `merge`: see `MergeKey`."""
        g = Function(
            self.name if name is None else name,
            [a.type for a in self.args],
            list(self.result_types),
            visibility=self.visibility,
            loc=self.loc,
            arg_names=[a.name_hint for a in self.args],
        )
        g.loc_written = self.loc_written
        g.visibility_written = self.visibility_written
        g.arg_attrs = [dict(a) for a in self.arg_attrs]
        g.arg_labels = list(self.arg_labels)
        g.res_attrs = [dict(a) for a in self.res_attrs]
        g.attributes = dict(self.attributes)
        values: dict[Value, Value] = dict(zip(self.args, g.args))  # (values hash by identity)
        firsts: dict[Hashable, Operation] = {}
        block, prev, count = g.body, None, 0
        for op in self.body:
            operands = [values[v] for v in op._operands]
            key = None if merge is None else merge(op, operands)
            first = None if key is None else firsts.get(key)
            if first is not None:  # (a repeat: its results read the first's)
                values.update(zip(op.results, first.results))
                continue
            # (Operation.__init__ and Block.append inlined, the slots set directly: this loop
            # was ~3 us per op of `shardc.jit`'s first call, which copies the global program)
            copy = Operation.__new__(Operation)
            copy.name, copy._operands, copy.attributes = op.name, operands, dict(op.attributes)
            copy.loc, copy.loc_written, copy.cause = op.loc, op.loc_written, op.cause
            copy.parent, copy.prev, copy.next, copy.scratch = block, prev, None, None
            copy.results = [Value(r.type, copy, r.index, r.name_hint) for r in op.results]
            values.update(zip(op.results, copy.results))
            for i, v in enumerate(operands):
                v.uses.append(Use(copy, i))
            if prev is None:
                block.first = copy
            else:
                prev.next = copy
            prev, count = copy, count + 1
            if key is not None:
                firsts[key] = copy
        block.last, block._len = prev, count
        return g

    def __repr__(self) -> str:
        return f"<Function @{self.name}>"


class Module:
    """Top-level container: meshes, then functions, in declaration order."""

    def __init__(self) -> None:
        self.meshes: dict[str, DeviceMesh] = {}
        self.mesh_locs: dict[str, Location | None] = {}
        self.functions: dict[str, Function] = {}
        self.attributes: dict[str, Any] = {}

    def add_mesh(self, mesh: DeviceMesh, loc: Location | None = None) -> DeviceMesh:
        if mesh.name in self.meshes:
            raise VerifyError(f"mesh @{mesh.name} is declared twice", loc)
        self.meshes[mesh.name] = mesh
        self.mesh_locs[mesh.name] = loc
        return mesh

    def add_function(self, func: Function) -> Function:
        if func.name in self.functions:
            raise VerifyError(f"function @{func.name} is defined twice", func.loc)
        func.module = self
        self.functions[func.name] = func
        return func

    def lookup_function(self, name: str) -> Function | None:
        return self.functions.get(name)

    @property
    def main(self) -> Function:
        """The entry point: `@main` if present, else the first public function."""
        if "main" in self.functions:
            return self.functions["main"]
        for f in self.functions.values():
            if not f.is_private:
                return f
        raise VerifyError("module has no public function to run")

    def walk(self) -> Iterator[Operation]:
        for f in self.functions.values():
            yield from f.body

    def clone(self, merge: MergeKey | None = None) -> Module:
        """A deep copy: new functions, ops and values (attributes and types are immutable and
        shared); `merge`: see `Function.clone`."""
        new = Module()
        new.meshes = dict(self.meshes)
        new.mesh_locs = dict(self.mesh_locs)
        new.attributes = dict(self.attributes)
        for f in self.functions.values():
            g = f.clone(merge=merge)
            new.add_function(g)
        return new
