"""Collectives: Shardy's (all_gather, all_slice, all_to_all, all_reduce, reduce_scatter,
collective_permute) and the `stablehlo.all_reduce` a shard_map body holds.

    %0 = sdy.all_gather [{"tp"}, {}] %arg0 out_sharding=<@mesh, [{}, {}]> : tensor<8x16xf32>
        <-> all_gather {gathering_axes = [[tp], []]}, its result typed with the out_sharding
    %1 = "stablehlo.all_reduce"(%0) <{replica_groups = dense<[[0, 1], [2, 3]]> : ...,
         use_global_device_ids}> ({ ... add ... }) : (...) -> ...
        <-> spmd.all_reduce {axes = ["x"], groups = ..., kind = add}

A `stablehlo.all_reduce` imports only inside an `sdy.manual_computation` body: its replica groups
must be the device groups of some of the mesh's axes, which become the native op's `axes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import AllToAllParam, Keyword, OpaqueAttr
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import axes_text
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.sharding import SDY_REDUCTIONS, reduction_of
from shardc.ir.placements import ReduceOp
from shardc.stablehlo.export_table import prints, prints_lines
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.mlir_text import inline_sharding
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.ops.replica_collectives import import_replica_collective, replica_groups
from shardc.stablehlo.records import OpRec
from shardc.stablehlo.reducers import reducer_lines, region_kind, strip_scalar_constraint

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

# The sdy collectives that move one axis list per dim -> the attribute that holds them.
PER_DIM_AXES = {"all_gather": "gathering_axes", "all_slice": "slicing_axes",
                "reduce_scatter": "scatter_axes", "sharded_to_unreduced": "axes"}
# The sdy collectives with one axis list -> the attribute that holds it.
AXES = {"all_reduce": "reduction_axes", "replicated_to_unreduced": "axes"}
# The ones written with a reduction (`sdy.all_reduce max {"x"} ...`; sum when absent).
WITH_REDUCTION = ("all_reduce", "reduce_scatter")


# ----- import: sdy collectives ----------------------------------------------------------------


@read_rule("sdy_dims_collective")
def sdy_dims_collective(c: list) -> OpRec:
    per_dim = [x for x in c if isinstance(x, tuple)]
    value, sharding, attrs, ty = c[-4:]
    extra = {"per_dim": per_dim, "sharding": sharding, "reduction": c[1]}
    return OpRec("sdy_collective", c[0], [value], extra, attrs, ("plain", None, [ty]))


@read_rule("sdy_all_to_all")
def sdy_all_to_all(c: list) -> OpRec:
    params = [x for x in c if isinstance(x, list)]
    value, sharding, attrs, ty = c[-4:]
    return OpRec("sdy_collective", c[0], [value], {"params": params, "sharding": sharding},
                 attrs, ("plain", None, [ty]))


@read_rule("a2a_param")
def a2a_param(c: list) -> list:
    return [c[0], int(c[1]), int(c[2])]


@read_rule("sdy_all_reduce")
def sdy_all_reduce(c: list) -> OpRec:
    extra = {"axes": c[2], "sharding": c[4], "reduction": c[1]}
    return OpRec("sdy_collective", c[0], [c[3]], extra, c[5], ("plain", None, [c[6]]))


@read_rule("sdy_permute")
def sdy_permute(c: list) -> OpRec:
    return OpRec("sdy_collective", c[0], [c[1]], {"sharding": c[2]}, c[3],
                 ("plain", None, [c[4]]))


def _axes(items: tuple) -> tuple[AxisRef, ...]:
    out = []
    for a in items:
        out.append(a if isinstance(a, AxisRef) else AxisRef(a[0], a[1], a[2]))
    return tuple(out)


def _holds_other_than_sum(value: Value) -> bool:
    m = value.mapping
    return m is not None and bool(m.unreduced) and m.unreduced_op is not ReduceOp.SUM


@pretty_form("sdy_collective")
def _sdy_collective(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    short = rec.name.partition(".")[2]
    extra = rec.extra
    try:
        if short in PER_DIM_AXES:
            attrs: dict[str, Any] = {
                PER_DIM_AXES[short]: tuple(_axes(d) for d in extra["per_dim"])
            }
        elif short == "all_to_all":
            attrs = {"params": tuple(AllToAllParam(_axes(axes), src, tgt)
                                     for axes, src, tgt in extra["params"])}
        elif short in AXES:
            attrs = {AXES[short]: _axes(extra["axes"])}
        else:
            attrs = {}
    except ShardcError as e:
        raise fb.b.fail(e.message, rec.tok, type(e)) from None
    reduction = extra.get("reduction")
    if reduction is not None:
        if short not in WITH_REDUCTION or str(reduction) not in SDY_REDUCTIONS:
            raise fb.b.fail(f"unexpected '{reduction}': only sdy.all_reduce and sdy.reduce_scatter "
                            f"take a reduction ({', '.join(SDY_REDUCTIONS)})", reduction)
        attrs["reduction_op"] = Keyword(str(reduction))
    elif short in WITH_REDUCTION and _holds_other_than_sum(operands[0]):
        # Shardy's default is sum; the native op's is the operand's reduction, so say it.
        attrs["reduction_op"] = Keyword("sum")
    mapping = fb.b.mapping(str(extra["sharding"]), extra["sharding"])
    return short, attrs, fb.results_of(rec, operands), [mapping]


# ----- import: stablehlo.all_reduce in a manual body ------------------------------------------


@generic("stablehlo.all_reduce")
def _generic_all_reduce(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                        results: list):
    """`stablehlo.all_reduce` inside a manual body -> `spmd.all_reduce` over the mesh axes whose
    device groups are its replica groups."""
    from shardc.passes.analysis.collectives.groups import axes_for_groups

    mesh = fb.manual_mesh
    if mesh is None:  # a global program: XLA's all-reduce by replica groups
        return import_replica_collective(fb, rec, props, results)
    if len(operands) != 1 or len(rec.regions) != 1:
        raise ValueError("imports with one operand and one reducer region")
    region, constraint = strip_scalar_constraint(rec.regions[0])
    kind = region_kind(region, allow_replace=False)
    groups_attr = props.get("replica_groups")
    if groups_attr is None:
        raise ValueError("needs replica_groups = dense<[[...]]>")
    if props.get("use_global_device_ids", "absent") == "absent":
        # Groups of replicas, not of this mesh's devices: XLA's all-reduce as written.
        return import_replica_collective(fb, rec, props, results)
    groups = [list(g) for g in replica_groups(fb, groups_attr)]
    axes = axes_for_groups(mesh, [AxisRef(n) for n in mesh.axis_names], groups, ordered=False)
    if axes is None:
        raise ValueError(f"replica_groups {groups} are not the device groups of any "
                         f"axes of mesh @{mesh.name}")
    attrs: dict[str, Any] = {
        "axes": axes, "groups": tuple(tuple(g) for g in groups), "kind": Keyword(kind),
    }
    inner = region.ops[0]
    if inner.attrs is not None and inner.attrs.entries:
        # Shardy's output shards the reducer's scalar op too: kept verbatim for the exporter.
        attrs["reducer_attrs"] = OpaqueAttr("{" + ", ".join(
            key if v is None else f"{key} = {fb.b.text[v.start:v.end]}"
            for key, v in inner.attrs.entries.items()) + "}")
    if constraint is not None:
        # JAX constrains the reducer's scalar to replicated in a partially manual shard_map: a
        # no-op on a scalar, kept only so the exporter writes it back.
        text = f"{constraint.name} {constraint.extra['sharding']}"
        if constraint.attrs is not None and constraint.attrs.entries:
            text += " {" + ", ".join(
                key if v is None else f"{key} = {fb.b.text[v.start:v.end]}"
                for key, v in constraint.attrs.entries.items()) + "}"
        attrs["reducer_constraint"] = OpaqueAttr(text)
    channel = props.get("channel_handle")
    if channel is not None:
        attrs["channel_handle"] = OpaqueAttr(fb.b.text[channel.start : channel.end])
    return "spmd.all_reduce", attrs, fb.results_of(rec, operands), None


# ----- export ---------------------------------------------------------------------------------


def _axis_sets(per_dim) -> str:
    return "[" + ", ".join("{" + axes_text(d) + "}" for d in per_dim) + "]"


@prints(*PER_DIM_AXES, *AXES, "all_to_all", "collective_permute")
def _print_sdy_collective(p: Printer, op: Operation, n: Names, args: str) -> str:
    name = op.name
    at = op.attributes
    value = n(op.operands[0])
    reduction = reduction_of(op) if name in WITH_REDUCTION else ReduceOp.SUM
    kind = f" {reduction.value}" if reduction is not ReduceOp.SUM else ""
    if name in PER_DIM_AXES:
        head = f"sdy.{name}{kind} {_axis_sets(at[PER_DIM_AXES[name]])} {value}"
    elif name == "all_to_all":
        params = ", ".join(str(param) for param in at["params"])
        head = f"sdy.all_to_all [{params}] {value}"
    elif name in AXES:
        head = f"sdy.{name}{kind} {{{axes_text(at[AXES[name]])}}} {value}"
    else:
        head = f"sdy.collective_permute {value}"
    sharding = inline_sharding(op)
    return (f"{head} out_sharding={sharding}{p.op_attrs(op, False)} : "
            f"{_ty(op.results[0].type)}")


@prints_lines("spmd.all_reduce")
def _print_all_reduce(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    """`spmd.all_reduce` in a manual body as the `stablehlo.all_reduce` shard_map emits."""
    at = op.attributes
    groups = at["groups"]
    dense = "[" + ", ".join("[" + ", ".join(str(d) for d in g) + "]" for g in groups) + "]"
    props = []
    if "channel_handle" in at:
        props.append(f"channel_handle = {at['channel_handle'].text}")
    props.append(f"replica_groups = dense<{dense}> : "
                 f"tensor<{len(groups)}x{len(groups[0])}xi64>")
    props.append("use_global_device_ids")
    t = op.results[0].type
    inner = " " + at["reducer_attrs"].text if "reducer_attrs" in at else ""
    constraint = at.get("reducer_constraint")
    lines = [f'{indent}{n.group(op)}"stablehlo.all_reduce"({n(op.operands[0])}) '
             f'<{{{", ".join(props)}}}> ({{']
    lines += reducer_lines(n, indent, t.dtype, at["kind"].word, inner,
                           constraint.text if constraint is not None else None)
    lines.append(f"{indent}}}){p.op_attrs(op)} : ({_ty(op.operands[0].type)}) -> "
                 f"{_ty(t)}" + p.tail(op))
    return lines
