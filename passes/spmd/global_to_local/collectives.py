"""The six sdy collectives as StableHLO's device-level collectives (`xla.*` ops: replica groups,
channel handles, `use_global_device_ids`), Shardy's rewrite for each:

- `all_gather` over one dim: one `stablehlo.all_gather`; over several: one all_gather of every
  axis on a new leading dim, then reshape/transpose/reshape the blocks into place (or, with
  `per-dim-all-gather=true`, one all_gather per dim, the last dim first);
- `all_reduce`: `stablehlo.all_reduce` with an add/max/min body;
- `all_slice`: a `dynamic_slice` at this device's offsets (no communication);
- `all_to_all` with one param: one `stablehlo.all_to_all`; with several: split each target dim,
  move the splits to the front, one all_to_all over all their axes, and put the pieces back
  along the source dims;
- `collective_permute`: `stablehlo.collective_permute` with Shardy's source/target pairs;
- `reduce_scatter` over one dim: one `stablehlo.reduce_scatter`; over several: an all_reduce and a
  dynamic_slice, or (`combine-multi-dimension-reduce-scatter=true`) one reduce_scatter on a
  combined leading dim.
"""

from __future__ import annotations

from shardc.ir.attributes import Keyword
from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.axes import cut_points, mesh_atoms, product
from shardc.passes.spmd.global_to_local.state import Localizer, shard_index

_KIND = {"sum": "add", "max": "maximum", "min": "minimum"}


def _out_mapping(op: Operation) -> NamedMapping:
    m = op.results[0].mapping
    if m is None:
        raise PassError(f"'{op.name}' op has no out_sharding", op.loc)
    return m


def _groups_attrs(lz: Localizer, m: NamedMapping, axes) -> dict:
    return {**lz.groups(m.mesh, axes), "channel_handle": lz.channel(),
            "use_global_device_ids": True}


def _kind(op: Operation) -> dict:
    return {"kind": Keyword(_KIND[str(attr(op, "reduction_op") or "sum")])}


def all_gather(lz: Localizer, op: Operation) -> None:
    m = _out_mapping(op)
    mesh = m.mesh
    x = op.operand(0)
    shape, dtype = x.type.shape, x.type.dtype
    per_dim = [tuple(a) for a in attr(op, "gathering_axes")]
    dims = [d for d, axes in enumerate(per_dim) if axes]
    if not dims:
        raise PassError("'all_gather' op gathers no axes (canonicalize removes it)", op.loc)
    if lz.options.per_dim_all_gather or len(dims) == 1:
        value = x
        for d in reversed(dims):
            axes = per_dim[d]
            cur = list(value.type.shape)
            cur[d] *= product(axes, mesh)
            value = lz.emit("xla.all_gather", [value],
                            {"all_gather_dim": d, **_groups_attrs(lz, m, axes)}, cur, dtype)
        lz.replace(op, value)
        return
    factors = [product(per_dim[d], mesh) for d in dims]
    every = [a for d in dims for a in per_dim[d]]
    v = lz.emit("reshape", [x], {}, (1, *shape), dtype)
    v = lz.emit("xla.all_gather", [v], {"all_gather_dim": 0, **_groups_attrs(lz, m, every)},
                (product(every, mesh), *shape), dtype)
    v = lz.emit("reshape", [v], {}, (*factors, *shape), dtype)
    perm: list[int] = []
    for i in range(len(shape)):
        if i in dims:
            perm.append(dims.index(i))
        perm.append(i + len(dims))
    split = v.type.shape
    v = lz.emit("transpose", [v], {"permutation": tuple(perm)}, [split[p] for p in perm], dtype)
    final = list(shape)
    for d, f in zip(dims, factors):
        final[d] *= f
    lz.replace(op, lz.emit("reshape", [v], {}, final, dtype))


def _reduce(lz: Localizer, op: Operation, name: str, operand, m: NamedMapping, axes,
            extra: dict, shape, dtype):
    attrs = {**extra, **_groups_attrs(lz, m, axes), **_kind(op)}
    return lz.emit(name, [operand], attrs, shape, dtype)


def all_reduce(lz: Localizer, op: Operation) -> None:
    m = _out_mapping(op)
    x = op.operand(0)
    axes = tuple(attr(op, "reduction_axes"))
    lz.replace(op, _reduce(lz, op, "xla.all_reduce", x, m, axes, {}, x.type.shape, x.type.dtype))


def all_slice(lz: Localizer, op: Operation) -> None:
    m = _out_mapping(op)
    lz.localize(op.results[0], op)
    local = op.results[0].type.shape
    axes = [tuple(a) for a in attr(op, "slicing_axes")]
    lz.replace(op, lz.slice_for_axes(op.operand(0), m.mesh, axes, local))


def all_to_all(lz: Localizer, op: Operation) -> None:
    m = _out_mapping(op)
    mesh = m.mesh
    x = op.operand(0)
    shape, dtype = list(x.type.shape), x.type.dtype
    params = list(attr(op, "params"))
    if len(params) == 1:
        p = params[0]
        n = product(p.axes, mesh)
        if shape[p.tgt_dim] % n:
            raise PassError("'all_to_all' op: dimension not divisible by num devices per group",
                            op.loc)
        shape[p.src_dim] *= n
        shape[p.tgt_dim] //= n
        attrs = {"split_dimension": p.tgt_dim, "concat_dimension": p.src_dim,
                 "split_count": n, **lz.groups(mesh, p.axes), "channel_handle": lz.channel()}
        lz.replace(op, lz.emit("xla.all_to_all", [x], attrs, shape, dtype))
        return
    order = sorted(range(len(params)), key=lambda i: params[i].tgt_dim)
    sizes = [product(params[i].axes, mesh) for i in order]
    every: list[AxisRef] = [a for i in order for a in params[i].axes]
    shape0: list[int] = []
    perm0: list[int] = []
    for d, n in enumerate(shape):
        k = next((j for j, i in enumerate(order) if params[i].tgt_dim == d), None)
        if k is None:
            shape0.append(n)
            continue
        if n % sizes[k]:
            raise PassError("'all_to_all' op: dimension not divisible by num devices per param",
                            op.loc)
        perm0.append(len(shape0))
        shape0 += [sizes[k], n // sizes[k]]
    perm0 += [i for i in range(len(shape0)) if i not in perm0]
    v = lz.emit("reshape", [x], {}, shape0, dtype)
    shape_t = [shape0[p] for p in perm0]
    t0 = lz.emit("transpose", [v], {"permutation": tuple(perm0)}, shape_t, dtype)
    group = product(every, mesh)
    shape1 = [group, *shape_t[len(params):]]
    v = lz.emit("reshape", [t0], {}, shape1, dtype)
    attrs = {"split_dimension": 0, "concat_dimension": 0, "split_count": group,
             **lz.groups(mesh, every), "channel_handle": lz.channel()}
    v = lz.emit("xla.all_to_all", [v], attrs, shape1, dtype)
    v = lz.emit("reshape", [v], {}, shape_t, dtype)
    perm1 = [i + len(params) for i in range(len(shape))]
    for i in range(len(params)):
        src = params[order[i]].src_dim
        perm1.insert(perm1.index(src + len(params)), i)
    shape_t1 = [shape_t[p] for p in perm1]
    v = lz.emit("transpose", [v], {"permutation": tuple(perm1)}, shape_t1, dtype)
    final: list[int] = []
    i = 0
    while i < len(shape_t1):
        if perm1[i] < len(params):
            final.append(shape_t1[i] * shape_t1[i + 1])
            i += 2
        else:
            final.append(shape_t1[i])
            i += 1
    lz.replace(op, lz.emit("reshape", [v], {}, final, dtype))


def collective_permute(lz: Localizer, op: Operation) -> None:
    out = _out_mapping(op)
    src = lz.mapping(op.operand(0))
    if src is None:
        raise PassError("'collective_permute' op: its operand has no sharding", op.loc)
    if src.text() == out.text():
        raise PassError("'collective_permute' op: its operand is already laid out as its "
                        "out_sharding (a no-op that canonicalize removes)", op.loc)
    if src.mesh.num_devices != out.mesh.num_devices:
        raise PassError("'collective_permute' op between meshes of different sizes", op.loc)
    mesh = out.mesh
    refs = [*src.used_axes(), *out.used_axes()]
    ordered = mesh_atoms(cut_points(refs, mesh), mesh)  # Shardy's getOrderedAxisRefs

    def sharding_axes(m: NamedMapping) -> list[AxisRef]:
        axes: list[AxisRef] = []
        for d in m.dims:
            for ref in d.axes:
                for a in ordered:
                    if a.name == ref.name and ref.contains(a, mesh) and a not in axes:
                        axes.append(a)
        return axes + [a for a in ordered if a not in axes]

    out_axes, in_axes = sharding_axes(out), sharding_axes(src)
    n = mesh.num_devices
    to_device = {shard_index(mesh, p, out_axes): out.mesh.device_id(p) for p in range(n)}
    positions = src.mesh.positions_by_id()
    pairs = tuple((i, to_device[shard_index(src.mesh, positions[i], in_axes)])
                  for i in range(n))
    x = op.operand(0)
    attrs = {"source_target_pairs": pairs, "channel_handle": lz.channel()}
    lz.replace(op, lz.emit("xla.collective_permute", [x], attrs, x.type.shape, x.type.dtype))


def reduce_scatter(lz: Localizer, op: Operation) -> None:
    m = lz.mapping(op.operand(0)) or _out_mapping(op)
    mesh = m.mesh
    x = op.operand(0)
    shape, dtype = x.type.shape, x.type.dtype
    per_dim = [tuple(a) for a in attr(op, "scatter_axes")]
    dims = [d for d, axes in enumerate(per_dim) if axes]
    if not dims:
        raise PassError("'reduce_scatter' op scatters no axes (canonicalize removes it)", op.loc)
    every = [a for d in dims for a in per_dim[d]]
    lz.localize(op.results[0], op)
    local = op.results[0].type.shape
    if len(dims) == 1:
        value = _reduce(lz, op, "xla.reduce_scatter", x, m, per_dim[dims[0]],
                        {"scatter_dimension": dims[0]}, local, dtype)
        lz.replace(op, value)
        return
    if not lz.options.combine_multi_dimension_reduce_scatter:
        whole = _reduce(lz, op, "xla.all_reduce", x, m, every, {}, shape, dtype)
        lz.replace(op, lz.slice_for_axes(whole, mesh, per_dim, local))
        return
    factors = [product(per_dim[d], mesh) for d in dims]
    split: list[int] = []
    where: list[int] = []
    for d, n in enumerate(shape):
        if d not in dims:
            split.append(n)
            continue
        f = factors[dims.index(d)]
        where.append(len(split))
        split += [f, n // f]
    v = lz.emit("reshape", [x], {}, split, dtype)
    perm = where + [i for i in range(len(split)) if i not in where]
    v = lz.emit("transpose", [v], {"permutation": tuple(perm)}, [split[p] for p in perm], dtype)
    total = product(every, mesh)
    v = lz.emit("reshape", [v], {}, (total, *local), dtype)
    v = _reduce(lz, op, "xla.reduce_scatter", v, m, every, {"scatter_dimension": 0},
                (1, *local), dtype)
    lz.replace(op, lz.emit("reshape", [v], {}, local, dtype))


HANDLERS = {
    "all_gather": all_gather, "all_reduce": all_reduce, "all_slice": all_slice,
    "all_to_all": all_to_all, "collective_permute": collective_permute,
    "reduce_scatter": reduce_scatter,
}
