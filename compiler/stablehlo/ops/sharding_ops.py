"""Shardy's sharding ops: sharding_constraint, reshard, sharding_group, propagation_barrier.

    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"dp"}, {}]> : tensor<8x16xf32>
        <-> sharding_constraint, its result typed with that sharding
    sdy.sharding_group %arg0 group_id=3 : tensor<8xf32>        <-> sharding_group {group_id}
    %1 = sdy.propagation_barrier %0 allowed_direction=FORWARD : tensor<8xf32>

The sharding written inline on the op is its result's mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation, Value
from shardc.stablehlo.export_table import prints
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.mlir_text import inline_sharding
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@read_rule("sdy_sharding_op")
def sdy_sharding_op(c: list) -> OpRec:
    return OpRec("sdy_sharding", c[0], [c[1]], {"sharding": c[2]}, c[3], ("plain", None, [c[4]]))


@pretty_form("sdy_sharding")
def _sdy_sharding(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    mapping = fb.b.mapping(str(rec.extra["sharding"]), rec.extra["sharding"])
    name = rec.name.partition(".")[2]
    return name, {}, fb.results_of(rec, operands), [mapping]


@generic("sdy.sharding_constraint", "sdy.reshard")
def _generic_sdy_sharding(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                          results: list):
    mapping = fb.b.mapping(props.need("sharding").value, rec.tok)
    return rec.name.partition(".")[2], {}, results, [mapping]


@read_rule("sdy_group_op")
def sdy_group_op(c: list) -> OpRec:
    return OpRec("sdy_group", c[0], [c[1]], {"group_id": int(c[2])}, c[3], None)


@pretty_form("sdy_group")
def _sdy_group(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    return "sharding_group", {"group_id": rec.extra["group_id"]}, [], None


@read_rule("sdy_barrier_op")
def sdy_barrier_op(c: list) -> OpRec:
    return OpRec("sdy_barrier", c[0], [c[1]], {"direction": c[2]}, c[3], ("plain", None, [c[4]]))


@pretty_form("sdy_barrier")
def _sdy_barrier(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    direction = str(rec.extra["direction"])
    attrs = {"allowed_direction": Keyword(direction)}
    return "propagation_barrier", attrs, fb.results_of(rec, operands), None


# ----- export ---------------------------------------------------------------------------------


@prints("sharding_constraint", "reshard")
def _print_sdy_sharding(p: Printer, op: Operation, n: Names, args: str) -> str:
    sharding = inline_sharding(op)
    return f"sdy.{op.name} {args} {sharding}{p.op_attrs(op, False)} : {_ty(op.results[0].type)}"


@prints("sharding_group")
def _print_sharding_group(p: Printer, op: Operation, n: Names, args: str) -> str:
    return (f"sdy.sharding_group {args} group_id={op.attributes['group_id']}"
            f"{p.op_attrs(op, False)} : {_ty(op.operands[0].type)}")


@prints("propagation_barrier")
def _print_propagation_barrier(p: Printer, op: Operation, n: Names, args: str) -> str:
    direction = op.attributes["allowed_direction"].word
    return (f"sdy.propagation_barrier {args} allowed_direction={direction}{p.op_attrs(op)} : "
            f"{_ty(op.results[0].type)}")
