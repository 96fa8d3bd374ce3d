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
from shardc.ir.core import Value
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder


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
