"""Scalar reducer regions: a region whose body is one binary op of its two block arguments.

    ({ ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
         %2 = stablehlo.add %arg2, %arg3 : tensor<f32>
         stablehlo.return %2 : tensor<f32> })            <-> kind = add

`reduce`, `reduce_window`, `scatter` (which may also just return the update: `replace`) and
`stablehlo.all_reduce` carry such a region; the native op keeps only its `kind`. JAX constrains
the reducer's result to replicated in a partially manual shard_map
(`sdy.sharding_constraint %r <@mesh, []>`): `strip_scalar_constraint` takes that no-op out so the
region still reads as one op, and `reducer_lines` prints it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword, Symbol
from shardc.ir.core import Operation
from shardc.stablehlo.outlining import no_captures, outline
from shardc.stablehlo.records import OpRec, RegionRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

REDUCER_KINDS = {"add", "maximum", "minimum", "multiply", "and", "or"}


def region_kind(region: RegionRec, allow_replace: bool) -> str:
    """The reducer a single-op region computes: `add`, `maximum`, ..., or `replace`."""
    args = [str(t)[1:] for t, _ in region.args]
    ops = region.ops
    fail = ValueError(
        "only a region whose body is one add/maximum/minimum/multiply/and/or of its two "
        "block arguments imports" + (" (or returns the update)" if allow_replace else "")
    )
    is_return = bool(ops) and ops[-1].name.rpartition(".")[2] == "return"
    if len(args) != 2 or not is_return or len(ops[-1].operands) != 1:
        raise fail
    ret = str(ops[-1].operands[0])[1:]
    if len(ops) == 1 and allow_replace and ret == args[1]:
        return "replace"
    if len(ops) != 2:
        raise fail
    body = ops[0]
    dialect, _, short = body.name.partition(".")
    if body.form not in ("simple", "generic") or dialect != "stablehlo":
        raise fail
    if short not in REDUCER_KINDS or not body.results:
        raise fail
    if sorted(str(t)[1:] for t in body.operands) != sorted(args):
        raise fail
    if str(body.results[0][0])[1:] != ret:
        raise fail
    return short


def strip_scalar_constraint(region: RegionRec) -> tuple[RegionRec, OpRec | None]:
    """`{%r = op %a, %b; %c = sdy.sharding_constraint %r <@m, []>; return %c}` -> the region
    without the constraint (returning %r), and the constraint."""
    ops = region.ops
    if len(ops) != 3 or ops[1].form != "sdy_sharding" or not ops[0].results:
        return region, None
    inner, constraint, ret = ops
    produced = str(inner.results[0][0])
    if [str(t) for t in constraint.operands] != [produced] or not ret.operands:
        return region, None
    if str(ret.operands[0]) != str(constraint.results[0][0]):
        return region, None
    if not str(constraint.extra["sharding"]).endswith("[]>"):
        return region, None
    new_ret = OpRec(ret.form, ret.tok, [inner.results[0][0]], ret.extra, ret.attrs, ret.sig,
                    name=ret.name)
    return RegionRec(region.args, [inner, new_ret]), constraint


def reducer_lines(n: Names, indent: str, dtype: str, kind: str, op_attrs: str = "",
                  constraint: str | None = None) -> list[str]:
    """The block of a reducer region as MLIR prints it (the op's `({` and `})` not included):
    `op_attrs` is the inner op's attribute dict (with its leading space), `constraint` the text
    `sdy.sharding_constraint <@mesh, []>` of a constraint on its result."""
    scalar = f"tensor<{dtype}>"
    a0, a1 = f"%arg{n.next_arg}", f"%arg{n.next_arg + 1}"
    lines = [f"{indent}^bb0({a0}: {scalar}, {a1}: {scalar}):"]
    result = a1
    if kind != "replace":
        result = f"%{n.next_value}"
        lines.append(f"{indent}  {result} = stablehlo.{kind} {a0}, {a1}{op_attrs} : {scalar}")
    if constraint is not None:
        name, _, sharding = constraint.partition(" ")
        constrained = f"%{n.next_value + 1}"
        lines.append(f"{indent}  {constrained} = {name} {result} {sharding} : {scalar}")
        result = constrained
    lines.append(f"{indent}  stablehlo.return {result} : {scalar}")
    return lines


def combiner(fb: FunctionBuilder, rec: OpRec, single: bool, suffix: str,
             allow_replace: bool = False) -> dict[str, Any]:
    """The native attribute of a scatter/reduce_window's region: `kind` for one input and a
    one-op region, else `body` naming the region outlined into a private function (block
    arguments: accumulators then new elements, as in StableHLO)."""
    (region,) = rec.regions
    if single:
        try:
            return {"kind": Keyword(region_kind(region, allow_replace))}
        except ValueError:
            pass
    no_captures(region, "region")
    return {"body": Symbol(outline(fb, region, suffix).name)}


def combiner_lines(
    p: Printer, op: Operation, n: Names, indent: str, op_attrs: str = ""
) -> list[str]:
    """The block of a scatter/reduce_window region: `kind`'s one op, or the `body` function's."""
    if "kind" in op.attributes:
        return reducer_lines(n, indent, op.results[0].type.dtype, op.attributes["kind"].word,
                             op_attrs)
    body = p.function_of(op, "body")
    nr = n.region(body)
    block = ", ".join(f"{nr(a)}: {_scalar(a.type.dtype)}" for a in body.args)
    return [f"{indent}^bb0({block}):", *p.body_lines(body, nr, indent + "  ", "stablehlo.return")]


def _scalar(dtype: str) -> str:
    return f"tensor<{dtype}>"
