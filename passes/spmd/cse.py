"""`cse`: common subexpression elimination. A pure op that repeats an earlier op of its function
(the same name, operands, attributes and result types, shardings included) is dropped and its
uses read the earlier op's results, as MLIR's `cse` and XLA's HloCSE do:

    shardc opt model.mlir -p 'spmd,cse'

    %0 = iota {iota_dimension = 0} : tensor<64xf32>
    %1 = cosine %0 : tensor<64xf32>
    %2 = iota {iota_dimension = 0} : tensor<64xf32>        # uses of %2 read %0
    %3 = cosine %2 : tensor<64xf32>                        # then %3 is %1: uses read %1

Why: Shardy's constant splitter (`split-constants`) gives every use of a constant expression its
own copy so each can take its own sharding, and only constants and scalar broadcasts are merged
back (`constant-or-scalar-merger`). A JAX program's expressions of iotas and constants (RoPE's
angles, masks) then reach the per-device program once per use: on the 8-layer Llama step of
benchmarks/jit.py, 4x the sines and cosines the user wrote. XLA merges them again, but only
after the per-device program was traced and handed over, at a cost that grows with its size.
`compile` runs this pass before `spmd` (copies with the same sharding are one op to lower) and
after `inline-calls` (what inlining makes repeat, e.g. the offsets of one device's block).

Which ops: those of `PURE` (element-wise arithmetic, data movement, constants, iotas, device
indices, contractions and reductions): no collectives (the report counts each as it runs), no
random numbers, no calls or control flow, no op with side effects. Two constants are the same
when their values print the same (so -0.0 and 0.0 differ). The walk is in program order, so the
op kept is the first, which comes before every use of the others; the result never depends on
anything but the program.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.registry import ELEMENTWISE, OPS
from shardc.passes.manager import Pass, PassContext, register_pass

_STRUCTURAL = frozenset({
    "constant", "iota", "broadcast_in_dim", "reshape", "transpose", "slice", "concatenate",
    "pad", "reverse", "dynamic_slice", "gather", "dot_general", "dot", "reduce",
    "bitcast_convert", "partition_id", "replica_id", "spmd.axis_index",
})


def _pure() -> frozenset[str]:
    elementwise = {name for name, d in OPS.items() if d.has(ELEMENTWISE)}
    return frozenset(elementwise | _STRUCTURAL)


def _attr_key(value: Any) -> Any:
    """A hashable stand-in for an attribute value that tells apart what prints differently
    (Python's == has 0.0 == -0.0 and 1 == 1.0 == True)."""
    cls = value.__class__
    if cls is tuple:
        for v in value:
            if v.__class__ is not int:
                break
        else:  # (the common case, dims: no call per element; a tag no other key has)
            return ("ints", value)
    if isinstance(value, (DenseElements, float)):
        return (type(value).__name__, repr(value))
    if isinstance(value, (bool, int, str)):
        return (type(value).__name__, value)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_attr_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, repr(value))
    return value


def _key(op: Operation, operands: Sequence[Value]) -> tuple[Any, ...]:
    """What two ops must share to merge (`operands`: `op`'s, or what stands for them)."""
    written = op.attributes
    # (keys are distinct: sorting them sorts the items; lists, not generators, for tuple())
    attrs = tuple([(k, _attr_key(written[k])) for k in sorted(written)]) if written else ()
    return (op.name, tuple([id(v) for v in operands]), tuple([r.type for r in op.results]),
            attrs)


def cse_function(func: Function, pure: frozenset[str]) -> int:
    """Merge the repeated pure ops of `func`; returns how many were dropped."""
    seen: dict[tuple[Any, ...], Operation] = {}
    dropped = 0
    for op in func.body:
        if op.name not in pure or not op.results:
            continue
        first = seen.setdefault(_key(op, op.operands), op)
        if first is op:
            continue
        for old, new in zip(op.results, first.results, strict=True):
            old.replace_all_uses_with(new)
        op.erase()
        dropped += 1
    return dropped


def merged_copy(module: Module) -> Module:
    """`module.clone()` and then this pass on the copy, in one walk: a repeated pure op is not
    copied (its results read the first copy's), so the copy holds the program `cse` leaves,
    op for op and name for name. `compile` copies the global program for the per-device
    pipeline, which starts with `cse`: the global program keeps the per-use copies of constant
    expressions that Shardy's `split-constants` makes (~12,600 of the 32-layer Llama step's
    21,120 ops), and copying them to drop them at once was ~0.05 CPU s of its first call."""
    pure = _pure()

    def merge(op: Operation, operands: list[Value]) -> tuple[Any, ...] | None:
        if op.name not in pure or not op.results:
            return None
        return _key(op, operands)  # (ids of the copy's values: all alive in the copy)

    return module.clone(merge=merge)


@register_pass("cse")
@dataclass(frozen=True)
class Cse(Pass):
    """Merge repeated pure ops (common subexpression elimination)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        pure = _pure()
        for func in module.functions.values():
            cse_function(func, pure)
