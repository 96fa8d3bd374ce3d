"""A candidate change to a program's annotations, as a user would write it.

    Change.constraint(v, mapping)          # jax.lax.with_sharding_constraint(v, P(...))
    Change.in_sharding(func, 3, mapping)   # jax.jit(..., in_shardings=...) for argument 3
    Change.out_sharding(func, 0, mapping)  # ... out_shardings for result 0
    change.apply(module, value_of)         # onto a program (the input, or a copy of it)

Every mapping is closed (a JAX `NamedSharding` is). A change names values of the compiled
program (`Baseline.module`); `apply` is given how to find them in the program it edits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.types import DistributedTensorType

CONSTRAINT, IN_SHARDING, OUT_SHARDING = "sharding_constraint", "in_sharding", "out_sharding"


def closed_layout(m: NamedMapping) -> NamedMapping:
    """`m`'s dims, every one closed, without priorities, replicated or unreduced axes."""
    return NamedMapping(m.mesh, tuple(DimSharding(d.axes, True) for d in m.dims))


def spec_text(m: NamedMapping) -> str | None:
    """`P('dp', None)` for a JAX user, or None when a sub-axis makes it unspellable."""
    parts = []
    for d in m.dims:
        if any(a.is_sub_axis for a in d.axes):
            return None
        names = [a.name for a in d.axes]
        parts.append("None" if not names else repr(names[0]) if len(names) == 1
                     else "(" + ", ".join(map(repr, names)) + ")")
    return "P(" + ", ".join(parts) + ")"


@dataclass(frozen=True, eq=False)
class Change:
    """One change (see the module docstring): `kind`, the function, the value (a constraint)
    or the argument/result index, and the layout."""

    kind: str
    function: str
    mapping: NamedMapping
    value: Value | None = None
    index: int = 0
    label: str = ""  # how to name the value or argument (`%12`, `%w1`)
    where: str = ""  # the source line of the value's op, when known
    path: str = ""  # an argument's name in its source (JAX: its pytree path, `params['w1']`)

    @classmethod
    def constraint(cls, v: Value, mapping: NamedMapping, label: str, where: str = "") -> Change:
        func = v.owner if isinstance(v.owner, Function) else v.owner.function
        assert func is not None
        return cls(CONSTRAINT, func.name, closed_layout(mapping), v, 0, label, where)

    @classmethod
    def in_sharding(cls, func: Function, index: int, mapping: NamedMapping, label: str) -> Change:
        labels = func.arg_labels
        path = (labels[index] if index < len(labels) else None) or ""
        return cls(IN_SHARDING, func.name, closed_layout(mapping), None, index, label, "", path)

    @classmethod
    def out_sharding(cls, func: Function, index: int, mapping: NamedMapping) -> Change:
        return cls(OUT_SHARDING, func.name, closed_layout(mapping), None, index, f"result {index}")

    @property
    def key(self) -> tuple:
        return (self.kind, self.function, id(self.value), self.index, self.mapping)

    def text(self) -> str:
        """The change in words, with the JAX spelling where there is one."""
        layout = self.mapping.text()
        spec = spec_text(self.mapping)
        jax = f" (JAX: {spec})" if spec else ""
        if self.kind == CONSTRAINT:
            where = f" at {self.where}" if self.where else ""
            jax = f" (JAX: jax.lax.with_sharding_constraint(x, {spec}))" if spec else ""
            return f"constrain {self.label}{where} to {layout}{jax}"
        if self.kind == IN_SHARDING:
            path = f" {self.path}" if self.path else ""
            return (f"give argument {self.index}{path} ({self.label}) the in_sharding "
                    f"{layout}{jax}")
        return f"give result {self.index} the out_sharding {layout}{jax}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "function": self.function,
                                  "sharding": self.mapping.text(), "text": self.text()}
        if self.kind == CONSTRAINT:
            out["value"] = self.label
            if self.where:
                out["loc"] = self.where
        else:
            out["index"] = self.index
            if self.path:
                out["path"] = self.path
        spec = spec_text(self.mapping)
        if spec:
            out["partition_spec"] = spec
        return out

    # ----- applying it -----------------------------------------------------------------------

    def apply(self, module: Module, value_of: Callable[[Value], Value | None]) -> Operation | None:
        """Make the change in `module` (`value_of` finds `self.value` there); returns the
        constraint op it added (None for the other kinds). Raises KeyError if the value is not
        in `module`."""
        func = module.functions[self.function]
        if self.kind == IN_SHARDING:
            func.args[self.index].set_mapping(self.mapping)
            return None
        if self.kind == OUT_SHARDING:
            t = func.result_types[self.index]
            func.result_types[self.index] = DistributedTensorType(t.shape, t.dtype, self.mapping)
            return None
        assert self.value is not None
        v = value_of(self.value)
        if v is None:
            raise KeyError("value not in this program")
        return add_constraint(v, self.mapping)


def add_constraint(v: Value, mapping: NamedMapping) -> Operation:
    """`%c = sharding_constraint %v` right after `v` is made, read by all of `v`'s users."""
    t = v.type
    d = v.defining_op
    op = (Operation.at(d, CONSTRAINT, [v], [DistributedTensorType(t.shape, t.dtype, mapping)])
          if d is not None else
          Operation(CONSTRAINT, [v], [DistributedTensorType(t.shape, t.dtype, mapping)]))
    block = d.parent if d is not None else v.owner.body  # type: ignore[union-attr]
    assert block is not None
    op.cause = None  # the user's own constraint, not a pass's op
    block.insert_after_definition(v, op)
    v.replace_uses_if(op.result, lambda use: use.op is not op)
    return op
