"""The ops `sdy-convert-global-to-local` rewrites beyond their types, as Shardy does:

- `sdy.constant`: a `stablehlo.constant` of the local type (a splat, or an unsharded value), or
  the global constant and a `dynamic_slice` at this device's offsets;
- `iota` sharded along its dim: a local iota plus this device's offset;
- `slice` of a sharded dim: only the whole dim (the local block) slices without communication;
- `concatenate`: only along a replicated dim, the other dims sharded alike;
- `dot` / `dot_general` with a sharded contracting dim: the partial sums must be reduced by the
  one `sdy.all_reduce` over those axes that uses the result;
- `manual_computation`: its (converted) body inlined where it stands.
Every other op keeps its attributes and sharding and takes local types (`generic`).
"""

from __future__ import annotations

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.registry import attr
from shardc.passes.global_to_local.state import Localizer


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
    src, r = op.operand(0), op.results[0]
    m_in, m_out = lz.mapping(src), r.mapping
    if _replicated(m_in) and _replicated(m_out):
        return generic(lz, op)
    starts, limits = list(attr(op, "start_indices")), list(attr(op, "limit_indices"))
    for d in range(len(starts)):
        _mismatch(op, d, m_in, m_out)
        if m_in is not None and m_in.dims[d].axes:
            if starts[d] != 0 or limits[d] != global_in[d]:
                raise PassError(
                    f"'slice' op: dimension {d} is sharded but the slice is not a full slice "
                    "and requires device communication", op.loc)
            limits[d] = src.type.shape[d]
    op.attributes["limit_indices"] = tuple(limits)
    generic(lz, op)


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
            users = op.results[0].uses
            user = users[0].op if len(users) == 1 else None
            if user is None or user.name != "all_reduce":
                raise PassError(f"'{op.name}' op: a sharded contracting dim needs the result's "
                                "one user to be an sdy.all_reduce", op.loc)
            if tuple(attr(user, "reduction_axes")) != tuple(axes):
                raise PassError(f"'{op.name}' op: the sdy.all_reduce of its result must reduce "
                                "the axes of its sharded contracting dims", op.loc)
    generic(lz, op)


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
