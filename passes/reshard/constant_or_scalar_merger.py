"""`constant-or-scalar-merger`: identical constants, and identical broadcasts of one scalar,
become one -- the first (Shardy's `sdy-constant-or-scalar-merger`, the inverse of its
splitter). Identical means the same attributes (the value and the sharding included) in the
same function; a broadcast must also read the same scalar and have the same type.

    %0 = stablehlo.constant dense<1.0> : tensor<8xf32>
    %1 = stablehlo.constant dense<1.0> : tensor<8xf32>     # uses of %1 read %0
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

CONSTANTS = ("constant",)


def _attrs_key(op: Operation) -> tuple:
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attributes.items()))
    shardings = tuple(str(r.mapping) for r in op.results)
    return attrs, shardings


@register_pass("constant-or-scalar-merger")
@dataclass(frozen=True)
class ConstantOrScalarMerger(Pass):
    """Merge identical constants and scalar broadcasts (sdy-constant-or-scalar-merger)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            seen: dict[tuple, Operation] = {}
            for op in list(func.body):
                if op.name in CONSTANTS:
                    k: tuple = ("constant", _attrs_key(op), str(op.results[0].type.dtype),
                                op.results[0].type.shape)
                elif op.name == "broadcast_in_dim" and op.operand(0).type.rank == 0:
                    k = ("broadcast", _attrs_key(op), str(op.results[0].type),
                         id(op.operand(0)))
                else:
                    continue
                first = seen.setdefault(k, op)
                if first is op:
                    continue
                for old, new in zip(op.results, first.results, strict=True):
                    old.replace_all_uses_with(new)
                op.erase()


register_alias("sdy-constant-or-scalar-merger", "constant-or-scalar-merger")
