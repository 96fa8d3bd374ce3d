"""StableHLO's collectives by replica groups: the native `xla.*` ops
(ir/ops/replica_collectives.py), every property kept, in a global program or a manual body.

    %0:2 = "stablehlo.all_gather"(%a, %b) <{all_gather_dim = 1 : i64, replica_groups =
           dense<[[0, 1]]> : tensor<1x2xi64>}> : (...) -> (...)
        <-> xla.all_gather %a, %b {all_gather_dim = 1, replica_groups = [[0, 1]]}

`stablehlo.all_reduce` is read here too, except inside a manual body with
`use_global_device_ids` (collectives.py reads that one as a per-device `spmd.all_reduce`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Operation, Value
from shardc.ir.mesh import AxisRef
from shardc.stablehlo.attributes import tensor_type_text
from shardc.stablehlo.export_table import prints_lines
from shardc.stablehlo.import_table import Props, generic
from shardc.stablehlo.literals import int_nest
from shardc.stablehlo.mlir_text import functional_type
from shardc.stablehlo.records import AttrRec, OpRec
from shardc.stablehlo.reducers import combiner, combiner_lines

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer

# native op -> its integer properties, in MLIR's (sorted) order with the others.
_INT_PROPS = {
    "all_gather": ("all_gather_dim",),
    "all_to_all": ("concat_dimension", "split_count", "split_dimension"),
    "reduce_scatter": ("scatter_dimension",),
    "all_reduce": (),
    "collective_permute": (),
}
_GROUP_PROPS = {"replica_groups", "source_target_pairs"}


_MESH_AXES = re.compile(r"#stablehlo\.replica_group_mesh_axes<\s*mesh\s*=\s*@([\w$.\-]+)\s*,"
                        r"\s*axes\s*=\s*\[(.*)\]\s*>", re.S)
_AXIS_REF = re.compile(r'#stablehlo\.axis_ref<\s*name\s*=\s*"([^"]*)"\s*>')


def replica_groups(fb: FunctionBuilder, value: AttrRec) -> tuple[tuple[int, ...], ...]:
    """The device groups of `replica_groups`: `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` ->
    ((0, 1), (2, 3)), or the groups of `#stablehlo.replica_group_mesh_axes<mesh = @m, axes =
    [#stablehlo.axis_ref<name = "y">]>` (whole axes of a declared mesh)."""
    text = str(value.value) if value.kind == "dialect" else ""
    found = _MESH_AXES.fullmatch(text.strip())
    if found is None:
        return _groups(value)
    from shardc.passes.analysis.collectives.groups import device_groups

    mesh = fb.b.module.meshes.get(found.group(1))
    if mesh is None:
        raise ValueError(f"replica groups name an unknown mesh @{found.group(1)}")
    refs = _AXIS_REF.findall(found.group(2))
    if len(refs) != found.group(2).count("#stablehlo.axis_ref"):
        raise ValueError("replica groups over sub-axes do not import (whole axes only)")
    unknown = [n for n in refs if not mesh.has_axis(n)]
    if unknown or not refs:
        raise ValueError(f"replica groups need axes of mesh @{mesh.name}; got {refs}")
    return tuple(tuple(g) for g in device_groups(mesh, [AxisRef(n) for n in refs]))


def _groups(value: AttrRec) -> tuple[tuple[int, ...], ...]:
    """`dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` -> ((0, 1), (2, 3))."""
    if value.kind != "dense":
        raise ValueError("replica groups must be a dense<[[...]]> : tensor<NxMxi64> or a "
                         "#stablehlo.replica_group_mesh_axes<...>")
    body = str(value.value[0])[len("dense<"):-1]
    parsed = int_nest(body) if body else []
    if isinstance(parsed, int):  # a splat: dense<0> : tensor<1x2xi64>
        shape = tensor_type_text(str(value.value[1])) if value.value[1] is not None else None
        if not isinstance(shape, tuple) or len(shape[0]) != 2:
            raise ValueError("a splat of replica groups needs a tensor<NxMxi64> type")
        rows, cols = shape[0]
        parsed = [[parsed] * cols for _ in range(rows)]
    return tuple(tuple(int(d) for d in g) for g in parsed)


def import_replica_collective(fb: FunctionBuilder, rec: OpRec, props: Props,
                              results: list) -> tuple[str, dict[str, Any], list, None]:
    """The `xla.*` op of a StableHLO collective of a global program."""
    short = rec.name.partition(".")[2]
    attrs: dict[str, Any] = {key: props.need(key).value for key in _INT_PROPS[short]}
    for key in _GROUP_PROPS:
        if props.get(key) is not None:
            attrs[key] = replica_groups(fb, props[key])
    if props.get("channel_handle") is not None:
        value = props["channel_handle"]
        attrs["channel_handle"] = OpaqueAttr(fb.b.text[value.start : value.end])
    if props.get("use_global_device_ids", "absent") != "absent":
        attrs["use_global_device_ids"] = True
    if short in ("reduce_scatter", "all_reduce"):
        attrs.update(combiner(fb, rec, len(rec.operands) == 1, f"{short}_body"))
    return f"xla.{short}", attrs, results, None


@generic("stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.reduce_scatter",
         "stablehlo.collective_permute")
def _generic_collective(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                        results: list):
    return import_replica_collective(fb, rec, props, results)


# ----- export ---------------------------------------------------------------------------------


def dense_groups(groups: tuple) -> str:
    """MLIR's dense text of replica groups or pairs: a splat when every entry is equal."""
    width = len(groups[0]) if groups else 0
    flat = [d for g in groups for d in g]
    if flat and all(d == flat[0] for d in flat):
        rows = str(flat[0])
    else:
        rows = "[" + ", ".join("[" + ", ".join(str(d) for d in g) + "]" for g in groups) + "]"
    return f"dense<{rows}> : tensor<{len(groups)}x{width}xi64>"


@prints_lines(*(f"xla.{short}" for short in _INT_PROPS))
def _print_replica_collective(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    short = op.name.partition(".")[2]
    at = op.attributes
    props: dict[str, str] = {key: f"{at[key]} : i64" for key in _INT_PROPS[short]}
    if "channel_handle" in at:
        props["channel_handle"] = at["channel_handle"].text
    for key in _GROUP_PROPS:
        if key in at:
            props[key] = dense_groups(at[key])
    if at.get("replica_group_mesh_axes") is not None:
        props["replica_groups"] = at["replica_group_mesh_axes"].text
    if at.get("use_global_device_ids"):
        props["use_global_device_ids"] = ""
    text = ", ".join(k if not v else f"{k} = {v}" for k, v in sorted(props.items()))
    args = ", ".join(n(v) for v in op.operands)
    head = f'{indent}{n.group(op)}"stablehlo.{short}"({args}) <{{{text}}}>'
    tail = f"{p.op_attrs(op)} : {functional_type(op)}" + p.tail(op)
    if short not in ("reduce_scatter", "all_reduce"):
        return [f"{head}{tail}"]
    return [f"{head} ({{", *combiner_lines(p, op, n, indent), f"{indent}}}){tail}"]
