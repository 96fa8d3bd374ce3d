"""`legalize-chlo`: the `chlo` element-wise ops as XLA hands them to Shardy when it compiles a
`jax.jit` program.

JAX prints `jnp.square`, `lax.erf_inv` and `lax.erf` as `chlo.square`, `chlo.erf_inv` and
`chlo.erf`, and jaxlib's Shardy pass registers no sharding rule for them (so shardc's
`propagation-pipeline` has none either, docs/propagation.md). But XLA does not run Shardy on
that text: it first converts the module to HLO, which legalizes `chlo` — `square x` becomes
`multiply x, x`, `erf_inv` a polynomial of element-wise ops, while `erf` stays one op (HLO's
`erf`) that Shardy still has no rule for. So under `jax.jit` a sharding does go through
`jnp.square` (an optimizer's global norm) and `jax.random.normal`'s `erf_inv`, and not through
`lax.erf`. This pass makes the same program of them for `shardc.jit`:

    %1 = square %0 : tensor<8x4xf32>   ->   %1 = multiply %0, %0 : tensor<8x4xf32>
    %2 = erf_inv %1 : tensor<8x4xf32>  ->   %2 = erf_inv %1 {sdy.sharding_rule =
        #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=4}>} : tensor<8x4xf32>
                                            (the element-wise rule of its expansion)

`erf` is left as it is. The special functions (`sinh`, `asin`, `lgamma`, `digamma`, `erfc`,
`next_after`, `zeta`, ...: `SPECIAL_UNARY`/`SPECIAL_BINARY`) are expanded by XLA as `erf_inv`
is, and get its element-wise rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Module, Operation
from shardc.ir.ops.elementwise import SPECIAL_BINARY, SPECIAL_UNARY
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.propagation.rules.builder import pointwise_rule
from shardc.passes.propagation.rules.registry import SHARDING_RULE_ATTR

# The chlo ops XLA expands into element-wise StableHLO before Shardy sees them (so a sharding
# goes through them under jax.jit; measured for each with jax.jit on 8 CPU devices, JAX 0.10).
EXPANDED = frozenset({"erf_inv", *SPECIAL_UNARY, *SPECIAL_BINARY})


def legalize_chlo(module: Module) -> int:
    """Rewrite `module`'s `square` and annotate its `erf_inv` ops as XLA's legalization leaves
    them for Shardy; returns how many ops changed."""
    changed = 0
    for func in module.functions.values():
        for op in list(func.body):
            if op.name == "square":
                x = op.operand(0)
                op.replace_with(Operation.at(op, "multiply", [x, x], [op.result.type],
                                             dict(op.attributes)))
                changed += 1
            elif op.name in EXPANDED and SHARDING_RULE_ATTR not in op.attributes:
                shape = op.result.type.shape
                op.attributes[SHARDING_RULE_ATTR] = OpaqueAttr(
                    pointwise_rule([shape] * op.num_operands, [shape]).text()
                )
                changed += 1
    return changed


@register_pass("legalize-chlo")
@dataclass(frozen=True)
class LegalizeChlo(Pass):
    """chlo.square as multiply and chlo.erf_inv with an element-wise rule, as XLA legalizes a
    jax.jit program before Shardy propagates (`shardc.jit` runs it on import)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        legalize_chlo(module)
