"""The ops `sdy-convert-global-to-local` rewrites beyond their types, as Shardy does:

- `sdy.constant`: a `stablehlo.constant` of the local type (a splat, or an unsharded value), or
  the global constant and a `dynamic_slice` at this device's offsets;
- `iota` sharded along its dim: a local iota plus this device's offset;
- `slice` of a sharded dim: only the whole dim (the local block) slices without communication;
- `pad` of a sharded dim: each block padded by its own offset (a table when devices differ);
- `concatenate`: only along a replicated dim, the other dims sharded alike;
- `dot` / `dot_general` with a sharded contracting dim: the partial sums must be reduced by the
  one `sdy.all_reduce` over those axes that uses the result;
- `reduce_window` / `select_and_scatter`: only along pass-through dims;
- `convolution`: a new local op, its group counts divided by the axes sharding them;
- `manual_computation`: its (converted) body inlined where it stands.
Every other op keeps its attributes and sharding and takes local types (`generic`).
"""

from __future__ import annotations

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import OPS
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.axes import merge_set, product
from shardc.passes.spmd.global_to_local.state import Localizer, shard_index


def generic(lz: Localizer, op: Operation) -> None:
    for r in op.results:
        lz.localize(r, op)


def _replicated(m: NamedMapping | None) -> bool:
    return m is None or not m.used_axes()


def constant(lz: Localizer, op: Operation) -> None:
    r = op.results[0]
    m = r.mapping
    glob = r.type.shape
    lz.localize(r, op)
    local = r.type.shape
    dense: DenseElements = attr(op, "value")
    if not op.attributes.get("sdy.constant"):
        if local != glob and not dense.is_splat:
            raise PassError("'constant' op: a sharded dense stablehlo.constant has no local "
                            "value (write it as sdy.constant)", op.loc)
        return
    if local == glob or dense.is_splat or m is None:
        lz.replace(op, lz.emit("constant", [], {"value": dense}, local, r.type.dtype))
        return
    whole = lz.emit("constant", [], {"value": dense}, glob, r.type.dtype)
    axes = [tuple(d.axes) for d in m.dims]
    lz.replace(op, lz.slice_for_axes(whole, m.mesh, axes, local))


def iota(lz: Localizer, op: Operation) -> None:
    r = op.results[0]
    m = r.mapping
    if _replicated(m):
        return
    assert m is not None
    lz.localize(r, op)
    local, dtype = r.type.shape, r.type.dtype
    d = attr(op, "iota_dimension")
    value = lz.emit("iota", [], {"iota_dimension": d}, local, dtype)
    if m.dims[d].axes:
        offset = lz.offset(m.mesh, m.dims[d].axes, local[d])
        offset = lz.emit("convert", [offset], {}, (), dtype)
        offset = lz.emit("broadcast_in_dim", [offset], {"broadcast_dimensions": ()}, local, dtype)
        value = lz.emit("add", [value, offset], {}, local, dtype)
    lz.replace(op, value)


def _mismatch(op: Operation, d: int, a: NamedMapping | None, b: NamedMapping | None) -> None:
    ax = a.dims[d].axes if a is not None else ()
    bx = b.dims[d].axes if b is not None else ()
    if tuple(ax) != tuple(bx):
        raise PassError(
            f"'{op.name}' op: dimension {d} has mismatched sharding axes "
            f"({_axes(ax)} vs {_axes(bx)}); this needs a reshard that earlier passes insert "
            "(sdy-insert-explicit-reshards, sdy-reshard-to-collectives)", op.loc)


def _axes(axes) -> str:
    return "[" + ", ".join(a.text() if hasattr(a, "text") else str(a) for a in axes) + "]"


def slice_op(lz: Localizer, op: Operation, global_in: tuple[int, ...]) -> None:
    """Unsharded dims keep their indices; a sharded dim must be sliced whole, or from 0 with
    stride 1 to a size whose blocks are as many as the operand's (Shardy's
    isCommunicationFreeSliceDim), and takes the local block."""
    src, r = op.operand(0), op.results[0]
    m_in, m_out = lz.mapping(src), r.mapping
    if _replicated(m_in) and _replicated(m_out):
        return generic(lz, op)
    starts, limits = attr(op, "start_indices"), list(attr(op, "limit_indices"))
    strides = attr(op, "strides") or (1,) * len(limits)
    global_out = r.type.shape
    lz.localize(r, op)
    for d in range(len(limits)):
        _mismatch(op, d, m_in, m_out)
        if m_in is None or not m_in.dims[d].axes:
            continue
        k = m_in.num_shards(d)
        free = k <= 1 or (starts[d] == 0 and strides[d] == 1
                          and -(-global_in[d] // k) == -(-global_out[d] // k))
        if starts[d] != 0 or (limits[d] != global_in[d] and not free):
            raise PassError(
                f"'slice' op: dimension {d} is sharded but the slice is not a full slice "
                "and requires device communication", op.loc)
        limits[d] = src.type.shape[d] if limits[d] == global_in[d] else r.type.shape[d]
    attrs = {"start_indices": tuple(starts), "limit_indices": tuple(limits),
             "strides": tuple(strides)}
    lz.replace(op, lz.emit("slice", [src], attrs, r.type.shape, r.type.dtype))


def concatenate(lz: Localizer, op: Operation) -> None:
    d = attr(op, "dimension")
    out = op.results[0].mapping
    if out is not None and out.dims[d].axes:
        raise PassError(f"'concatenate' op: dimension {d} is sharded but the concatenation "
                        "is on this dimension", op.loc)
    for i, v in enumerate(op.operands):
        m = lz.mapping(v)
        if _replicated(m):
            continue
        assert m is not None
        if m.dims[d].axes:
            raise PassError(f"'concatenate' op: operand {i} is sharded on concatenation "
                            f"dimension {d}", op.loc)
        for k in range(m.rank):
            if k != d:
                _mismatch(op, k, m, out)
    generic(lz, op)


def dot(lz: Localizer, op: Operation) -> None:
    lhs = op.operand(0)
    m = lz.mapping(lhs)
    if not _replicated(m):
        assert m is not None
        dims = (attr(op, "lhs_contracting_dims") if op.name == "dot_general"
                else (lhs.type.rank - 1,))
        axes = [a for d in dims for a in m.dims[d].axes]
        if axes:
            _check_reduced_by_user(op, tuple(axes))
    generic(lz, op)


def _check_reduced_by_user(op: Operation, axes: tuple) -> None:
    """The partial sums of `op` over `axes` are reduced by its one user, an `sdy.all_reduce`."""
    uses = op.results[0].uses
    user = uses[0].op if len(uses) == 1 else None
    if user is None or user.name != "all_reduce":
        raise PassError(f"'{op.name}' op: a sharded contracting dim needs the result's one "
                        "user to be an sdy.all_reduce", op.loc)
    if tuple(attr(user, "reduction_axes")) != tuple(axes):
        raise PassError(f"'{op.name}' op: the sdy.all_reduce of its result must reduce the "
                        "axes of its sharded contracting dims", op.loc)


def inline_body(lz: Localizer, op: Operation, body_ops: list[Operation],
                args: list[Value]) -> None:
    """Clone the converted body (`body_ops`, reading `args`) before `op`; its results become the
    returned values."""
    values: dict[int, Value] = {id(a): v for a, v in zip(args, op.operands)}
    for inner in body_ops:
        if inner.name == "return":
            for r, x in zip(op.results, inner.operands):
                r.replace_all_uses_with(values.get(id(x), x))
            break
        copy = inner.clone([values.get(id(x), x) for x in inner.operands])
        op.parent.insert_before(op, copy)  # type: ignore[union-attr]
        for old, new in zip(inner.results, copy.results):
            values[id(old)] = new
    op.erase()


def pad(lz: Localizer, op: Operation) -> None:
    """Each device pads its block by the offset between where its input block lands and where
    its output block starts; when that offset differs between devices along a dim, pad enough
    for every device and take this device's window with a dynamic_slice."""
    x, value, r = op.operand(0), op.operand(1), op.results[0]
    m_in, m_out = lz.mapping(x), r.mapping
    if _replicated(m_in):
        return generic(lz, op)
    assert m_in is not None
    mesh = m_in.mesh
    g_in, g_out = lz.global_shape(x), r.type.shape
    low, interior = attr(op, "edge_padding_low"), attr(op, "interior_padding")
    n = mesh.num_devices
    offsets: list[list[int]] = []
    for d in range(len(g_in)):
        _mismatch(op, d, m_in, m_out)
        axes = m_in.dims[d].axes
        k = m_in.num_shards(d)
        s_in, s_out = g_in[d] // k, g_out[d] // k
        row = [0] * n
        for p in range(n):
            i = shard_index(mesh, p, axes)
            row[mesh.device_id(p)] = (i * s_in) * (interior[d] + 1) + low[d] - i * s_out
        offsets.append(row)
    lz.localize(r, op)
    local_in, local_out, dtype = x.type.shape, r.type.shape, r.type.dtype
    expanded = [(s - 1) * (interior[d] + 1) + 1 for d, s in enumerate(local_in)]
    if all(len(set(row)) == 1 for row in offsets):
        lo = [row[0] for row in offsets]
        hi = [local_out[d] - (expanded[d] + lo[d]) for d in range(len(lo))]
        attrs = {"edge_padding_low": tuple(lo), "edge_padding_high": tuple(hi),
                 "interior_padding": tuple(interior)}
        return lz.replace(op, lz.emit("pad", [x, value], attrs, local_out, dtype))
    k_low = [max(0, max(row)) for row in offsets]
    k_high = [max(0, local_out[d] - min(row) - expanded[d]) for d, row in enumerate(offsets)]
    shape = [a + e + b for a, e, b in zip(k_low, expanded, k_high)]
    attrs = {"edge_padding_low": tuple(k_low), "edge_padding_high": tuple(k_high),
             "interior_padding": tuple(interior)}
    safe = lz.emit("pad", [x, value], attrs, shape, dtype)
    pid = lz.device_id()
    starts = []
    for d, row in enumerate(offsets):
        table = [k_low[d] - o for o in row]
        if len(set(row)) == 1:
            starts.append(lz.const([table[0]], (), "i64"))
            continue
        t = lz.const(table, (n,), "i64")
        one = lz.emit("dynamic_slice", [t, pid], {"slice_sizes": (1,)}, (1,), "i64")
        starts.append(lz.emit("reshape", [one], {}, (), "i64"))
    lz.replace(op, lz.emit("dynamic_slice", [safe, *starts], {"slice_sizes": tuple(local_out)},
                           local_out, dtype))


def windowed(lz: Localizer, op: Operation) -> None:
    """reduce_window / select_and_scatter compute locally when every sharded dim of the windowed
    operand is a pass-through: no padding, and a window of 1 or a stride of at least the window."""
    m = lz.mapping(op.operand(0))
    if not _replicated(m):
        assert m is not None
        window = attr(op, "window_dimensions") or ()
        strides = attr(op, "window_strides") or ()
        padding = attr(op, "padding") or ()
        for d in range(m.rank):
            if m.num_shards(d) <= 1:
                continue
            ok = not padding or tuple(padding[d]) == (0, 0)
            w = window[d] if window else None
            s = strides[d] if strides else None
            ok = ok and (s is None or s == 1 or (w is not None and s >= w))
            ok = ok and (w is None or w == 1 or (s is not None and s >= w))
            if not ok:
                raise PassError(f"'{op.name}' op: dimension {d} is sharded but is not a "
                                "pass-through dimension", op.loc)
    generic(lz, op)


def _local_group_count(count: int, axes, mesh) -> int:
    if count <= 1 or not axes:
        return count
    k = min(count, product(axes, mesh))
    return count // k


def convolution(lz: Localizer, op: Operation) -> None:
    """A new local convolution: sharded kernel input-feature/spatial dims must feed one
    matching `sdy.all_reduce`; the group counts shrink by the axes sharding them."""
    lhs, rhs = op.operand(0), op.operand(1)
    ml, mr, mo = lz.mapping(lhs), lz.mapping(rhs), op.results[0].mapping
    if _replicated(ml) and _replicated(mr) and _replicated(mo):
        return generic(lz, op)
    mesh = next(m.mesh for m in (ml, mr, mo) if m is not None)
    axes: list = []
    if mr is not None:
        for d in (attr(op, "kernel_input_feature_dimension"),
                  *attr(op, "kernel_spatial_dimensions")):
            axes += [a for a in mr.dims[d].axes if a not in axes]
    if axes:
        _check_reduced_by_user(op, merge_set(axes, mesh))
    attrs = {k: v for k, v in op.attributes.items() if k in OPS[op.name].attrs}
    out_feature = attr(op, "kernel_output_feature_dimension")
    batch = attr(op, "input_batch_dimension")
    attrs["feature_group_count"] = _local_group_count(
        attr(op, "feature_group_count") or 1, mr.dims[out_feature].axes if mr else (), mesh)
    attrs["batch_group_count"] = _local_group_count(
        attr(op, "batch_group_count") or 1, ml.dims[batch].axes if ml else (), mesh)
    lz.localize(op.results[0], op)
    r = op.results[0]
    lz.replace(op, lz.emit("convolution", [lhs, rhs], attrs, r.type.shape, r.type.dtype))
