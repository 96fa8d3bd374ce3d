"""Finding the manual_computations of a module and their bodies (re-exported by manual.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from shardc.ir.core import Module, Operation
from shardc.ir.ops.registry import attr

NAME = "manual_computation"

__all__ = ["NAME", "bodies_fixed", "is_manual_body", "manual_computations"]


def manual_computations(module: Module) -> list[Operation]:
    return [op for f in module.functions.values() for op in f.body if op.name == NAME]


# A module whose manual_computations stay as they are meanwhile (`bodies_fixed`) and their
# bodies (None: not asked yet): a walk per combined collective checked grew superlinearly.
_fixed: ContextVar[list | None] = ContextVar("manual_bodies_fixed", default=None)


@contextmanager
def bodies_fixed(module: Module) -> Iterator[None]:
    """No manual_computation of `module` is added, removed or changed while the block runs."""
    token = _fixed.set([module, None])
    try:
        yield
    finally:
        _fixed.reset(token)


def is_manual_body(module: Module, func_name: str) -> bool:
    """Is `@func_name` the body of some manual_computation of `module`?"""
    fixed = _fixed.get()
    if fixed is not None and fixed[0] is module:
        try:
            if fixed[1] is None:
                fixed[1] = frozenset(attr(op, "body").name for op in manual_computations(module))
            return func_name in fixed[1]
        except AttributeError:  # a malformed body: said (or not) where the walk meets it
            pass
    return any(attr(op, "body").name == func_name for op in manual_computations(module))
