"""`manual_computation` (jax.shard_map) in the per-device program: its body, lowered on its own,
is inlined where the op stands."""

from __future__ import annotations

from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.ops.manual import body_of, manual_names, manual_shards
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering, closed_layout, is_spmd


def inline_manual(low: FunctionLowering, op: Operation) -> None:
    """Inline the (already lowered) body where the op stands. The body is per-device code over the
    manual axes already; its free-axis shardings are lowered like any function's (spmd.py lowers
    the body first, on its own), so each device's block of an operand (laid out by its
    in_sharding) is exactly the body argument's block, and the body's results are the blocks of
    the op's results."""
    body = body_of(op)
    assert body is not None and is_spmd(body), "spmd.py lowers the body first"
    manual = manual_names(op)
    for i, (v, m, a) in enumerate(zip(op.operands, attr(op, "in_shardings"), body.args)):
        have = low.mapping(v)
        layout = closed_layout(have) if have is not None else closed_layout(m).with_dims(
            [DimSharding() for _ in m.dims]
        )
        if not same_layout(layout, closed_layout(m)):
            raise PassError(
                f"'manual_computation' op operand {i} is laid out as {layout}, not as its "
                f"in_sharding {m}; run insert-reshards before spmd",
                op.loc,
            )
        _check_free_axes_divide(op, f"in_shardings[{i}]", m, low.global_shape(v), manual)
        assert low.local_shape(v) == a.type.shape, (low.local_shape(v), a.type)
    values: dict[int, Value] = {id(a): v for a, v in zip(body.args, op.operands)}
    returned: list[Value] = []
    for inner_op in body.body:
        if inner_op.name == "return":
            returned = [values[id(x)] for x in inner_op.operands]
            break
        copy = inner_op.clone([values[id(x)] for x in inner_op.operands])
        low.anchor.parent.insert_before(low.anchor, copy)  # type: ignore[union-attr]
        for old, new in zip(inner_op.results, copy.results):
            values[id(old)] = new
            low.new.add(id(new))
    taken: set[int] = set()
    for j, (r, m) in enumerate(zip(op.results, attr(op, "out_shardings"))):
        _check_free_axes_divide(op, f"out_shardings[{j}]", m, r.type.shape, manual)
        v = returned[j]
        if id(v) not in low.new or id(v) in taken:
            # A body argument (or a value returned twice) stands for another global tensor
            # here: give the result a value of its own.
            v = low.emit("reshape", [v], {}, low.local_shape(v), v.type.dtype)
        taken.add(id(v))
        r.replace_all_uses_with(v)
        low.replaced[id(v)] = r
    op.erase()


def _check_free_axes_divide(
    op: Operation, what: str, m: NamedMapping, shape: tuple[int, ...], manual: tuple[str, ...]
) -> None:
    """Inside a manual block, the free axes must split it evenly: the body pads its own blocks,
    which would not sit where the global layout puts them otherwise."""
    for d, (n, k) in enumerate(zip(shape, manual_shards(m, manual))):
        free = m.num_shards(d) // k
        if free > 1 and (n // k) % free:
            raise PassError(
                f"'manual_computation' op {what} {m}: the free axes of dim {d} split its "
                f"per-block size {n // k} into {free} uneven parts, which the SPMD program "
                "cannot lay out like the global tensor; shard that dim of the body evenly",
                op.loc,
            )
