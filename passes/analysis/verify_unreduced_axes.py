"""`verify-unreduced-axes` (Shardy's `sdy-verify-unreduced-axes`): check that no op drops or
invents unreduced axes behind the user's back. Only an explicit reshard (`reshard`,
`sharding_constraint`) or a reduction may turn an unreduced value into a reduced one:

    %0 = add %a, %a : tensor<8xf32, <@mesh, [{}]>>      # %a unreduced={"y"}: error, 'y' dropped
    %1 = reshard %a : tensor<8xf32, <@mesh, [{}]>>       # fine: the reshard reduces 'y'

The rules, per op (an operand made by a reshard or sharding_constraint, looking through
propagation barriers, counts as unsharded: the reshard is where its axes change):

- any op: may introduce `sum` unreduced axes on its results (e.g. a partial contraction), may
  not drop an operand's unreduced axis, and keeps the reduction of the axes it keeps;
- `reduce`: may introduce only axes of its body's reduction (`add` -> sum, `maximum` -> max,
  `minimum` -> min; none for another body); `xla.all_reduce`/`xla.reduce_scatter` (StableHLO's)
  may introduce none and drop only axes of their body's reduction;
- `all_reduce`/`reduce_scatter` (sdy's): the operand must carry a sharding;
- `call`: operand i and the callee's argument i, the callee's result j and result j hold the
  same unreduced axes; `return`: operand i and the function's result i the same.

The first violation is a located error in Shardy's words; the pass changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.attributes import Keyword
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.placements import ReduceOp
from shardc.passes.analysis.collectives.sub_axes import set_difference
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

EXPLICIT_RESHARDS = frozenset({"reshard", "sharding_constraint"})
SDY_REDUCTIONS = frozenset({"all_reduce", "reduce_scatter"})
STABLEHLO_REDUCTIONS = frozenset({"xla.all_reduce", "xla.reduce_scatter"})
# A reducer body's op -> the reduction of the unreduced axes it may remove.
BODY_REDUCTIONS = {"add": ReduceOp.SUM, "maximum": ReduceOp.MAX, "minimum": ReduceOp.MIN}

Sharding = NamedMapping | None


def _error(op: Operation, message: str) -> VerifyError:
    return VerifyError(f"'{op.name}' op {message}", op.loc)


def bypass_barriers(value: Value) -> Value:
    """The value a chain of propagation barriers forwards."""
    op = value.defining_op
    while op is not None and op.name == "propagation_barrier":
        value = op.operand(0)
        op = value.defining_op
    return value


def sharding_of(value: Value) -> Sharding:
    """The sharding of `value`, looking through propagation barriers (Shardy's
    getShardingBypassingBarriers)."""
    return bypass_barriers(value).mapping


def _made_by_reshard(value: Value) -> bool:
    op = bypass_barriers(value).defining_op
    return op is not None and op.name in EXPLICIT_RESHARDS


def _operand_shardings(operands: Sequence[Value]) -> list[Sharding]:
    return [None if _made_by_reshard(v) else sharding_of(v) for v in operands]


def _unreduced(shardings: Sequence[Sharding]) -> list[AxisRef]:
    return [a for s in shardings if s is not None for a in s.unreduced]


def _overlaps_any(sharding: NamedMapping, axes: Sequence[AxisRef]) -> bool:
    return any(a.overlaps(b, sharding.mesh) for a in sharding.unreduced for b in axes)


def verify_transition(op: Operation, operands: Sequence[Sharding], results: Sequence[Sharding],
                      introduce: ReduceOp | None, remove: ReduceOp | None) -> None:
    """Shardy's `verifyUnreducedAxesTransition`: result unreduced axes no operand has must be
    `introduce`d partials, operand unreduced axes no result keeps must be `remove`d ones (None:
    not allowed at all), and axes both hold keep their reduction. Shardings on different meshes
    are not compared."""
    present = [s for s in (*operands, *results) if s is not None]
    if not present or any(s.mesh.name != present[0].mesh.name for s in present):
        return
    mesh = present[0].mesh
    before, after = _unreduced(operands), _unreduced(results)
    introduced = set_difference(after, before, mesh)
    removed = set_difference(before, after, mesh)
    if introduced:
        if introduce is None:
            raise _error(op, f"cannot add new unreduced axis '{introduced[0].name}'.")
        _expect_reduction(op, results, introduced, introduce, "introduce")
    if removed:
        if remove is None:
            raise _error(op, f"dropped unreduced axis '{removed[0].name}' without a blessed "
                             "operation (e.g., sdy.reshard). This is an invalid transition from "
                             "unreduced to reduced.")
        _expect_reduction(op, operands, removed, remove, "reduce")
    for r in results:
        for s in operands:
            if r is not None and s is not None and _overlaps_any(r, s.unreduced) \
                    and r.unreduced_op is not s.unreduced_op:
                raise _error(op, "cannot change the reduction operator of kept unreduced axes "
                                 f"from {s.unreduced_op.value} to {r.unreduced_op.value}.")


def _expect_reduction(op: Operation, shardings: Sequence[Sharding], changed: list[AxisRef],
                      want: ReduceOp, verb: str) -> None:
    for s in shardings:
        if s is not None and _overlaps_any(s, changed) and s.unreduced_op is not want:
            raise _error(op, f"cannot {verb} '{s.unreduced_op.value}' unreduced axes. "
                             f"Expected '{want.value}'.")


def body_reduction(op: Operation) -> ReduceOp | None:
    """The reduction a reducer computes (`kind = add` -> sum ...); None for other bodies."""
    kind = op.attributes.get("kind")
    return BODY_REDUCTIONS.get(kind.word) if isinstance(kind, Keyword) else None


def _same_axes(op: Operation, a: Sharding, b: Sharding, where: str) -> None:
    """Shardy's `verifyEqual`: `a` and `b` hold the same unreduced axes (as sets)."""
    left = set(a.unreduced) if a is not None else set()
    right = set(b.unreduced) if b is not None else set()
    if left != right:
        names = ", ".join(sorted({r.name for r in left ^ right}))
        raise _error(op, f"has unreduced axes mismatch for '{names}' at {where}.")


def _verify_call(op: Operation, module: Module) -> None:
    callee = op.attributes.get("callee")
    func = module.lookup_function(callee.name) if callee is not None else None
    if func is None:
        return
    for i, v in enumerate(op.operands[: len(func.args)]):
        if not _made_by_reshard(v):
            _same_axes(op, sharding_of(v), sharding_of(func.args[i]), f"call argument {i}")
    for i, r in enumerate(op.results[: len(func.result_types)]):
        _same_axes(op, _result_sharding(func, i), sharding_of(r), f"call result {i}")


def _result_sharding(func: Function, i: int) -> Sharding:
    return getattr(func.result_types[i], "mapping", None)


def _verify_return(op: Operation, func: Function) -> None:
    for i, v in enumerate(op.operands[: len(func.result_types)]):
        want = _result_sharding(func, i)
        if want is None or _made_by_reshard(v):
            continue
        _same_axes(op, sharding_of(v), want,
                   f"return value {i} without a blessed operation (e.g., sdy.reshard). This is "
                   "an invalid transition from unreduced to reduced")


def verify_op(op: Operation, func: Function, module: Module) -> None:
    """Check one op (see the module docstring); raise a located VerifyError on the first fault."""
    name = op.name
    if name in EXPLICIT_RESHARDS:
        return  # their own verifier checks the transition
    if name == "return":
        _verify_return(op, func)
    elif name == "call":
        _verify_call(op, module)
    elif name in SDY_REDUCTIONS:
        if sharding_of(op.operand(0)) is None:
            raise _error(op, "operand must be sharded.")
    elif name in STABLEHLO_REDUCTIONS:
        src, dst = sharding_of(op.operand(0)), sharding_of(op.results[0])
        if src is not None or dst is not None:
            verify_transition(op, [src], [dst], None, body_reduction(op))
    elif name == "reduce":  # its operands: the inputs, then one init value per input
        inputs = _operand_shardings(op.operands[: len(op.results)])
        verify_transition(op, inputs, [sharding_of(r) for r in op.results], body_reduction(op),
                          None)
    else:
        results = [sharding_of(r) for r in op.results]
        verify_transition(op, _operand_shardings(op.operands), results, ReduceOp.SUM, None)


@register_pass("verify-unreduced-axes")
@dataclass(frozen=True)
class VerifyUnreducedAxes(Pass):
    """Fail at the first op that drops, invents or re-kinds unreduced axes."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for op in func.body:
                verify_op(op, func, module)


register_alias("sdy-verify-unreduced-axes", "verify-unreduced-axes")
