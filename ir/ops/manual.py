"""`manual_computation`: per-device code over some mesh axes (jax.shard_map; Shardy's
sdy.manual_computation), with its body outlined into a private function.

    %r = manual_computation %x, %w {body = @main_manual,
           in_shardings = [<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}]>],
           manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {}]>]}
         : tensor<16x64xf32>
    func private @main_manual(%x: tensor<8x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32> {
      %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
           : tensor<8x64xf32>
      %1 = spmd.all_reduce %0 {axes = ["tp"], kind = add, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]}
           : tensor<8x64xf32>
      return %1
    }

`in_shardings[i]` is operand i's sharding as the op sees it (the operand is resharded to it),
`out_shardings[j]` is result j's sharding. In each dim the manual axes come first (major-most,
as Shardy requires); they cut the global tensor into the LOCAL blocks the body works on, so the
body's argument/result types are the global shapes divided by the manual axes of their dims.
The remaining (free) axes still shard the body's values: a body argument's sharding is its
in_sharding without the manual axes (`body_view`), and the body may use free axes only. Per-device
collectives (`spmd.*`) in the body communicate over manual axes only.

The shardings of the values and of the attributes are the same facts seen from two sides and are
kept equal: result j carries `out_shardings[j]`, body argument i carries `body_view` of
`in_shardings[i]`, body result j is typed with `body_view` of `out_shardings[j]` (a value may
also carry no sharding yet). `fill_values` writes the attributes into the values and
`take_values` writes values back into the attributes; passes that change shardings call them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping, axes_text
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.manual_bodies import NAME, manual_computations
from shardc.ir.ops.registry import OpDef, attr, op_error, register, req
from shardc.ir.types import DistributedTensorType, TensorType

# ----- shardings seen from outside and inside ----------------------------------------------------


def manual_names(op: Operation) -> tuple[str, ...]:
    """The manual axis names of `op` (sub-axes of them count as manual too)."""
    return tuple(a.name for a in attr(op, "manual_axes"))


def _num_manual(dim: DimSharding, manual: Sequence[str]) -> int:
    """How many leading axes of `dim` are manual (they must all come before the free ones)."""
    n = 0
    while n < len(dim.axes) and dim.axes[n].name in manual:
        n += 1
    return n


def body_view(m: NamedMapping, manual: Sequence[str]) -> NamedMapping:
    """`m` as the body sees it: the manual axes dropped from every dim and from `replicated`
    (Shardy's `eraseManualAxes`; the body cannot use manual axes anyway)."""
    dims = [d.with_axes(d.axes[_num_manual(d, manual) :]) for d in m.dims]
    replicated = tuple(a for a in m.replicated if a.name not in manual)
    return NamedMapping(m.mesh, tuple(dims), replicated, m.unreduced, m.unreduced_op, m.memory_kind)


def with_free_axes(
    outer: NamedMapping, inner: NamedMapping | None, manual: Sequence[str]
) -> NamedMapping:
    """`outer`'s manual axes followed by `inner`'s (free) axes in each dim, open/closed and
    priority as `inner` says; `outer`'s replicated axes (Shardy's
    `addFreeAxesToManualComputationSharding`). No `inner`: `outer` unchanged."""
    if inner is None:
        return outer
    dims = []
    for o, i in zip(outer.dims, inner.dims, strict=True):
        prefix = o.axes[: _num_manual(o, manual)]
        closed = i.is_closed
        priority = i.priority if (i.axes or prefix or not closed) else None
        dims.append(DimSharding(prefix + i.axes, closed, priority))
    return NamedMapping(
        outer.mesh, tuple(dims), outer.replicated, outer.unreduced, outer.unreduced_op,
        outer.memory_kind,
    )


def manual_shards(m: NamedMapping, manual: Sequence[str]) -> tuple[int, ...]:
    """Per dim, how many blocks the manual axes cut it into."""
    return tuple(
        math.prod(a.axis_size(m.mesh) for a in d.axes[: _num_manual(d, manual)]) for d in m.dims
    )


def local_shape(shape: Sequence[int], m: NamedMapping, manual: Sequence[str]) -> tuple[int, ...]:
    """The body's block of a global tensor of `shape` laid out by `m` (dims must divide)."""
    return tuple(n // k for n, k in zip(shape, manual_shards(m, manual)))


def unused_parts(axis: str, size: int, used: Sequence[AxisRef]) -> list[AxisRef]:
    """The parts of mesh axis `axis` (of `size`) no ref of `used` covers, major first:
    `"y":(2)2` used of `"y"=8` leaves `"y":(1)2, "y":(4)2`."""
    spans = sorted((r.pre, r.pre * (r.size or size)) for r in used if r.name == axis)
    out: list[AxisRef] = []
    cur = 1

    def part(pre: int, n: int) -> AxisRef:
        return AxisRef(axis) if pre == 1 and n == size else AxisRef(axis, pre, n)

    for pre, nxt in spans:
        if pre > cur:
            out.append(part(cur, pre // cur))
        cur = max(cur, nxt)
    if cur < size:
        out.append(part(cur, size // cur))
    return out


def with_manual_replicated(
    m: NamedMapping, manual: Sequence[str], mesh: DeviceMesh | None = None
) -> NamedMapping:
    """Shardy's `sdy-manual-axes-cleanup`: the parts of the manual axes `m` does not use are
    replicated (so propagation can never add them to the sharding from outside). A sharding on
    the empty mesh that needs them moves to `mesh` (the op's common mesh)."""
    mesh = mesh or m.mesh
    used = [*m.used_axes(), *m.replicated, *m.unreduced]
    missing = [
        p for a in manual if mesh.has_axis(a) for p in unused_parts(a, mesh.axis_size(a), used)
    ]
    if not missing:
        return m
    return m.replace(
        mesh=mesh if m.mesh.is_empty else m.mesh, replicated=m.replicated + tuple(missing)
    )


# ----- finding bodies -----------------------------------------------------------------------------


def body_of(op: Operation) -> Function | None:
    func = op.function
    module = func.module if func is not None else None
    return module.lookup_function(attr(op, "body").name) if module is not None else None


# ----- keeping values and attributes equal --------------------------------------------------------


def _set_result_type(func: Function, j: int, m: NamedMapping) -> None:
    t = func.result_types[j]
    func.result_types[j] = DistributedTensorType(t.shape, t.dtype, m)


def fill_values(op: Operation) -> None:
    """Write the attributes into the values: results get `out_shardings`, the body's arguments
    and results their `body_view`."""
    manual = manual_names(op)
    body = body_of(op)
    for r, m in zip(op.results, attr(op, "out_shardings")):
        r.set_mapping(m)
    if body is None:
        return
    for a, m in zip(body.args, attr(op, "in_shardings")):
        a.set_mapping(body_view(m, manual))
    for j, m in enumerate(attr(op, "out_shardings")[: len(body.result_types)]):
        _set_result_type(body, j, body_view(m, manual))


def take_values(op: Operation) -> None:
    """Write the values back into the attributes (after a pass changed value shardings):
    `in_shardings[i]` keeps its manual axes and takes body argument i's free axes,
    `out_shardings[j]` is result j's sharding; the body's result types follow."""
    manual = manual_names(op)
    body = body_of(op)
    ins = list(attr(op, "in_shardings"))
    if body is not None:
        ins = [with_free_axes(m, a.mapping, manual) for m, a in zip(ins, body.args)]
    outs = [r.mapping or m for r, m in zip(op.results, attr(op, "out_shardings"))]
    op.attributes["in_shardings"] = tuple(ins)
    op.attributes["out_shardings"] = tuple(outs)
    if body is not None:
        for j, m in enumerate(outs[: len(body.result_types)]):
            _set_result_type(body, j, body_view(m, manual))


def clean_up_axes(op: Operation) -> None:
    """Shardy's manual-axes cleanup of one op: the manual axes in mesh order, and in every
    in/out sharding the parts of them it does not use replicated."""
    shardings = (*attr(op, "in_shardings"), *attr(op, "out_shardings"))
    mesh = next((m.mesh for m in shardings if not m.mesh.is_empty), None)
    if mesh is None:
        return
    op.attributes["manual_axes"] = tuple(
        sorted(
            attr(op, "manual_axes"),
            key=lambda a: mesh.axis_index(a.name) if mesh.has_axis(a.name) else 1 << 30,
        )
    )
    manual = manual_names(op)
    for key in ("in_shardings", "out_shardings"):
        op.attributes[key] = tuple(with_manual_replicated(m, manual, mesh) for m in attr(op, key))


def normalize(module: Module) -> None:
    """Before propagation: Shardy's manual-axes cleanup (`clean_up_axes`), then every value
    takes its sharding from the attributes."""
    for op in manual_computations(module):
        clean_up_axes(op)
        fill_values(op)


def fill_all(module: Module) -> None:
    """`fill_values` for every manual_computation of `module`."""
    for op in manual_computations(module):
        fill_values(op)


def sync_all(module: Module) -> None:
    """`take_values` for every manual_computation of `module`."""
    for op in manual_computations(module):
        take_values(op)


# ----- the verifier -------------------------------------------------------------------------------


def _mesh_of(op: Operation) -> DeviceMesh | None:
    shardings = (*attr(op, "in_shardings"), *attr(op, "out_shardings"))
    # One mesh, named or written inline: meshes compare by their devices, not their names.
    meshes = {(m.mesh.axes, m.mesh.device_ids): m.mesh for m in shardings}
    if len(meshes) > 1:
        names = ", ".join(dict.fromkeys(f"@{m.mesh.name}" for m in shardings))
        raise op_error(op, f"uses several meshes ({names}); its shardings must share one mesh")
    if meshes:
        return next(iter(meshes.values()))
    # No sharding names a mesh: the module's only mesh, if it has the manual axes (as Shardy,
    # a manual computation without operands and results may name axes of no mesh).
    func = op.function
    module = func.module if func is not None else None
    if module is not None and len(module.meshes) == 1:
        mesh = next(iter(module.meshes.values()))
        if all(mesh.has_axis(a.name) for a in attr(op, "manual_axes")):
            return mesh
    return None


def _check_manual_axes(op: Operation, mesh: DeviceMesh) -> tuple[str, ...]:
    refs = attr(op, "manual_axes")
    names: list[str] = []
    for a in refs:
        if a.is_sub_axis:
            raise op_error(op, f"manual axis {a} is a sub-axis; manual axes are whole mesh axes")
        if not mesh.has_axis(a.name):
            raise op_error(
                op, f'manual axis "{a.name}" is not an axis of @{mesh.name} '
                f"(axes: {mesh.axis_names_text()})"
            )
        if a.name in names:
            raise op_error(op, f'manual axis "{a.name}" is listed twice')
        names.append(a.name)
    return tuple(names)  # in any order, as Shardy allows (manual-axes cleanup sorts them)


def _check_sharding(
    op: Operation, what: str, m: NamedMapping, shape: Sequence[int], manual: Sequence[str]
) -> None:
    if m.rank != len(shape):
        raise op_error(op, f"{what} {m} has {m.rank} dims, but the tensor has rank {len(shape)}")
    # Unreduced free axes are allowed, as in Shardy (the body's values stay unreduced on them).
    late_sum = [a for a in m.unreduced if a.name in manual]
    if late_sum:
        raise op_error(
            op, f"{what} {m} is unreduced on manual axis {late_sum[0]}; a manual_computation's "
            "manual axes cannot be unreduced"
        )
    for d, dim in enumerate(m.dims):
        k = _num_manual(dim, manual)
        late = [a for a in dim.axes[k:] if a.name in manual]
        if late:
            raise op_error(
                op,
                f'{what} {m}: manual axis {late[0]} comes after free axis {dim.axes[k]} in dim '
                f"{d}; manual axes must be the major-most axes of each dim",
            )
        if k and dim.priority is not None:
            raise op_error(
                op, f"{what} {m}: dim {d} has manual axes, so it cannot carry a priority"
            )
        n = manual_shards(m, manual)[d]
        if shape[d] % n:
            raise op_error(
                op,
                f"{what} {m}: dim {d} of size {shape[d]} does not split evenly over its manual "
                f"axes ({axes_text(dim.axes[:k])}, {n} blocks)",
            )


def _local_type(t: TensorType, m: NamedMapping, manual: Sequence[str]) -> TensorType:
    return TensorType(local_shape(t.shape, m, manual), t.dtype)


def _check_body_signature(op: Operation, body: Function, manual: Sequence[str]) -> None:
    ins, outs = attr(op, "in_shardings"), attr(op, "out_shardings")
    name = f"@{body.name}"
    if not body.is_private:
        raise op_error(op, f"body {name} must be a private function (func private @...)")
    if len(body.args) != op.num_operands:
        raise op_error(
            op, f"passes {op.num_operands} operands; its body {name} takes {len(body.args)}"
        )
    if len(body.result_types) != len(op.results):
        raise op_error(
            op, f"has {len(op.results)} results; its body {name} returns {len(body.result_types)}"
        )
    for i, (v, a, m) in enumerate(zip(op.operands, body.args, ins)):
        want = _local_type(v.type.tensor, m, manual)
        if a.type.tensor != want:
            raise op_error(
                op,
                f"body {name} argument {i} has type {a.type.tensor}, but operand {i} "
                f"({v.type.tensor}) split by the manual axes of {m} is {want}",
            )
        view = body_view(m, manual)
        if a.mapping is not None and a.mapping != view:
            raise op_error(
                op,
                f"body {name} argument {i} has sharding {a.mapping}, but in_shardings[{i}] "
                f"without its manual axes is {view}",
            )
    for j, (r, t, m) in enumerate(zip(op.results, body.result_types, outs)):
        want = _local_type(r.type.tensor, m, manual)
        if t.tensor != want:
            raise op_error(
                op,
                f"body {name} result {j} has type {t.tensor}, but result {j} "
                f"({r.type.tensor}) split by the manual axes of {m} is {want}",
            )
        if r.mapping is not None and r.mapping != m:
            raise op_error(
                op, f"result {j} has sharding {r.mapping}, but out_shardings[{j}] is {m}"
            )
        got = getattr(t, "mapping", None)
        view = body_view(m, manual)
        if got is not None and got != view:
            raise op_error(
                op,
                f"body {name} result {j} has sharding {got}, but out_shardings[{j}] without its "
                f"manual axes is {view}",
            )


def _manual_refs_in(m: NamedMapping | None, manual: Sequence[str]) -> list[AxisRef]:
    if m is None:
        return []
    return [a for a in (*m.used_axes(), *m.replicated, *m.unreduced) if a.name in manual]


def _check_body_ops(op: Operation, body: Function, mesh: DeviceMesh, manual: Sequence[str]):
    """The body uses free axes only; its per-device collectives communicate over manual axes."""
    where = f"in the body @{body.name} of a manual_computation over {{{', '.join(manual)}}}"
    values: list[tuple[Value, str]] = [(a, f"argument {a.index}") for a in body.args]
    for inner in body.body:
        if inner.name == NAME:
            _check_nested(inner, manual, where)
        values.extend((r, r.label) for r in inner.results)
        if inner.name.startswith("spmd."):
            _check_per_device_op(inner, mesh, manual, where)
    for v, label in values:
        bad = _manual_refs_in(v.mapping, manual)
        if bad:
            at = v.defining_op or op
            raise op_error(
                at, f"{where}: {label} is sharded on manual axis {bad[0]}; a body may shard "
                "values on free axes only",
            )


def _check_nested(inner: Operation, manual: Sequence[str], where: str) -> None:
    """A manual_computation in a body goes manual over more (free) axes: its own manual axes
    and shardings may not name the enclosing one's manual axes."""
    for a in attr(inner, "manual_axes"):
        if a.name in manual:
            raise op_error(inner, f'{where}: "{a.name}" is already manual')
    for m in (*attr(inner, "in_shardings"), *attr(inner, "out_shardings")):
        bad = _manual_refs_in(m, manual)
        if bad:
            raise op_error(inner, f"{where}: its sharding {m} uses manual axis {bad[0]}")


def _free_coords(mesh: DeviceMesh, device: int, manual: Sequence[str]) -> tuple[int, ...]:
    p = mesh.all_device_ids().index(device)
    coords = mesh.coords(p)
    return tuple(c for a, c in coords.items() if a not in manual)


def _check_per_device_op(
    op: Operation, mesh: DeviceMesh, manual: Sequence[str], where: str
) -> None:
    ids = set(mesh.all_device_ids())
    axes = attr(op, "axes") if "axes" in op.attributes else ()
    for a in axes:
        if a.name not in manual:
            raise op_error(
                op, f'{where}: communicates over "{a.name}", which is not a manual axis'
            )
    groups: tuple = ()
    if "groups" in op.attributes:
        groups = attr(op, "groups")
    elif "pairs" in op.attributes:
        groups = attr(op, "pairs")
    for g in groups:
        unknown = [d for d in g if d not in ids]
        if unknown:
            raise op_error(op, f"{where}: device {unknown[0]} is not in mesh @{mesh.name}")
        if len({_free_coords(mesh, d, manual) for d in g}) > 1:
            raise op_error(
                op,
                f"{where}: {list(g)} joins devices that differ along free axes; per-device "
                "collectives in a body may only connect devices that differ along manual axes",
            )


def _verify(op: Operation) -> None:
    func = op.function
    module = func.module if func is not None else None
    ins, outs = attr(op, "in_shardings"), attr(op, "out_shardings")
    if len(ins) != op.num_operands:
        raise op_error(op, f"has {op.num_operands} operands but {len(ins)} in_shardings")
    if len(outs) != len(op.results):
        raise op_error(op, f"has {len(op.results)} results but {len(outs)} out_shardings")
    mesh = _mesh_of(op)
    if mesh is None:
        # No sharding names a mesh (no operands and results, as Shardy allows): the manual axes
        # are names only.
        names = [a.name for a in attr(op, "manual_axes")]
        if len(set(names)) != len(names):
            raise op_error(op, "lists a manual axis twice")
        return
    manual = _check_manual_axes(op, mesh)
    for i, (v, m) in enumerate(zip(op.operands, ins)):
        _check_sharding(op, f"in_shardings[{i}]", m, v.type.shape, manual)
    for j, (r, m) in enumerate(zip(op.results, outs)):
        _check_sharding(op, f"out_shardings[{j}]", m, r.type.shape, manual)
    if module is None:
        return
    body = module.lookup_function(attr(op, "body").name)
    if body is None:
        raise op_error(op, f"body @{attr(op, 'body').name} is not defined in this module")
    if func is body:
        raise op_error(op, f"body @{body.name} is the function the op is in")
    _check_body_signature(op, body, manual)
    _check_body_ops(op, body, mesh, manual)


register(
    OpDef(
        NAME,
        None,
        None,
        {
            "body": req("symbol"),
            "in_shardings": req("mappings"),
            "manual_axes": req("axes"),
            "out_shardings": req("mappings"),
        },
        None,
        _verify,
        summary="per-device code over manual axes (jax.shard_map)",
    )
)
