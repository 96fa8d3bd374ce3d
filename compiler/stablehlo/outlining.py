"""Regions -> private functions: how the importer outlines the regions of an op (XLA's
computations), so the native op names them by symbol.

    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<8xf32>
      cond { ... stablehlo.return %p : tensor<i1> } do { ... stablehlo.return %i, %x : ... }
        -> %0, %1 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond} : ...

Each region becomes a private function whose arguments are the region's block arguments and
then the values the region reads from the enclosing scope ("captures", in order of first use);
the op gets the captures as trailing operands. The op families decide what may capture:
`while` passes the union of its two regions' captures to both, `case` the union over its
branches; `sdy.manual_computation` is isolated from above, and the scalar bodies of
`sort`/`reduce` in JAX's text never capture (`no_captures`). The exporter inlines the functions
back (inlining.py), so import -> export gives JAX's text again. See docs/interop.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.core import Function
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo.builder import FunctionBuilder
from shardc.stablehlo.records import RegionRec

if TYPE_CHECKING:
    from lark import Token  # (or the line reader's: tokens.py)


def _base(tok) -> str:
    return str(tok)[1:].partition("#")[0]


def free_names(region: RegionRec) -> list[str]:
    """Values `region` (and regions nested in it) reads but does not define, in first-use order:
    `name` or `name#i` (a result of a multi-result op)."""
    defined = {_base(t) for t, _ in region.args}
    out: list[str] = []
    for op in region.ops:
        used = [str(t)[1:] for t in op.operands]
        for nested in op.regions:
            used.extend(free_names(nested))
        for name in used:
            if name.partition("#")[0] not in defined and name not in out:
                out.append(name)
        for tok, _ in op.results:
            defined.add(_base(tok))
    return out


def first_free_use(region: RegionRec, outer: frozenset[str] = frozenset()):
    """The operand token of the first use, in `region` or a region nested in it, of a value
    neither defines (None when there is none): where MLIR reports a region that is not
    isolated from above."""
    defined = set(outer) | {_base(t) for t, _ in region.args}
    for op in region.ops:
        for t in op.operands:
            if str(t)[1:].partition("#")[0] not in defined:
                return t
        for nested in op.regions:
            hit = first_free_use(nested, frozenset(defined))
            if hit is not None:
                return hit
        for tok, _ in op.results:
            defined.add(_base(tok))
    return None


def shared_captures(regions: list[RegionRec]) -> list[str]:
    """The union of the regions' free names, in first-use order (what each of them is passed)."""
    out: list[str] = []
    for r in regions:
        for name in free_names(r):
            if name not in out:
                out.append(name)
    return out


def no_captures(region: RegionRec, what: str) -> None:
    """Fail unless `region` (the op's `what`) uses only its own arguments."""
    free = free_names(region)
    if free:
        raise ValueError(f"its {what} reads %{free[0]} from the enclosing scope; shardc "
                         f"imports a {what} only when it uses its own arguments")


def outline(
    fb: FunctionBuilder, region: RegionRec, suffix: str, captures: list[str] = (),
) -> Function:
    """A new private function holding `region`'s ops: args = block args, then `captures`."""
    b = fb.b
    module = b.module
    base = f"{fb.func.name}_{suffix}"
    name, n = base, 0
    while module.lookup_function(name) is not None:
        n += 1
        name = f"{base}_{n}"
    block_args = list(region.args)
    captured = [fb.scope_value(c, region) for c in captures]
    terminator = region.ops[-1] if region.ops else None
    if terminator is None or not terminator.name.endswith("return"):
        raise b.fail("a region must end with a return", fb.tok or _region_tok(region))
    res_toks = _returned_types(terminator)
    if len(res_toks) != len(terminator.operands):
        raise b.fail("the region's return must list the types of its operands", terminator.tok)
    func = Function(
        name,
        [b.tensor(ty) for _, ty in block_args]
        + [DistributedTensorType(v.type.shape, v.type.dtype) for v in captured],
        [b.tensor(t) for t in res_toks],
        visibility="private",
        loc=b.where(terminator.tok),
        arg_names=[str(t)[1:] for t, _ in block_args]
        + [None if "#" in c else c for c in captures],
    )
    module.add_function(func)
    child = FunctionBuilder(b, func)
    child.manual_mesh = fb.manual_mesh
    child.manual_axes = fb.manual_axes
    child.region_args = len(block_args)
    for (tok, _), value in zip(block_args, func.args):
        child.define(_base(tok), value, tok)
    for cap, value in zip(captures, func.args[len(block_args):]):
        child.capture(cap, value, fb.scope.get(cap.partition("#")[0]))
    for rec in region.ops:
        child.add(rec)
    return func


def _returned_types(ret) -> list[Token]:
    """The types a region's return lists: `return %0 : T` or, generic,
    `"stablehlo.return"(%0) : (T) -> ()`."""
    if ret.sig is None:
        return []
    kind, operand_types, types = ret.sig
    return list(operand_types) if kind == "fn" else list(types)


def _region_tok(region: RegionRec) -> Token | None:
    if region.args:
        return region.args[0][0]
    return region.ops[0].tok if region.ops else None
