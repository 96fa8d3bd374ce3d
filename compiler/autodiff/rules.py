"""Reverse-mode rules: for an op and the cotangents of its results, the cotangents of its
operands, emitted with the builder at its insertion point (JAX's transpose/VJP rules).

    %y = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}
    # dy -> dx = dot_general dy, w (contract the output's w-dims with w's free dims), transposed
    #       dw = dot_general dy, x (...), transposed to w's layout

A rule returns one entry per operand: a value, or None where the operand gets no gradient
(indices, predicates, integer values). `RULES` names every op the zoo's models differentiate
through; `NO_GRADIENT` the ops whose results carry none (comparisons, iotas, constants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shardc.ir.attributes import Keyword
from shardc.ir.builder import Builder
from shardc.ir.core import Operation, Value
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr
from shardc.ir.types import is_float

Cotangents = list[Value | None]
Rule = Callable[[Builder, Operation, Value], Cotangents]


def full(b: Builder, value: float, like: Value) -> Value:
    """`value` broadcast to the shape and element type of `like`."""
    return b.broadcast(b.constant(value, like.type.dtype), like.type.shape, ())


def _scale(b: Builder, g: Value, factor: float) -> Value:
    return b.multiply(g, full(b, factor, g))


def _transposed(b: Builder, x: Value, perm: Sequence[int]) -> Value:
    return x if list(perm) == list(range(len(perm))) else b.transpose(x, tuple(perm))


def sum_to_operand(b: Builder, g: Value, operand: Value, dims: Sequence[int]) -> Value:
    """The cotangent of `broadcast_in_dim operand {broadcast_dimensions = dims}`: `g` summed over
    the dims the broadcast added or expanded, laid out like the operand."""
    shape, out = operand.type.shape, g.type.shape
    reduced = [d for d in range(len(out)) if d not in dims]
    reduced += [dims[i] for i, n in enumerate(shape) if n == 1 and out[dims[i]] != 1]
    x = b.reduce(g, tuple(sorted(reduced)), "add") if reduced else g
    kept = [i for i in range(len(shape)) if dims[i] not in reduced]  # operand dims x holds
    order = sorted(range(len(kept)), key=lambda j: dims[kept[j]])  # x's dims by result dim
    perm = [order.index(j) for j in range(len(kept))]
    x = _transposed(b, x, perm)
    return x if x.type.shape == shape else b.reshape(x, shape)


# ----- element-wise ----------------------------------------------------------------------------


def _add(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [g, g]


def _subtract(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [g, b.negate(g)]


def _multiply(b: Builder, op: Operation, g: Value) -> Cotangents:
    x, y = op.operands
    return [b.multiply(g, y), b.multiply(g, x)]


def _divide(b: Builder, op: Operation, g: Value) -> Cotangents:
    x, y = op.operands
    gx = b.divide(g, y)
    return [gx, b.negate(b.multiply(gx, op.result))]  # d(x/y)/dy = -(x/y)/y


def _negate(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [b.negate(g)]


def _chooser(b: Builder, op: Operation, g: Value) -> Cotangents:
    """maximum/minimum: the chosen operand gets the cotangent; a tie splits it in half (JAX)."""
    x, y = op.operands
    direction = "GT" if op.name == "maximum" else "LT"
    wins = b.select(b.compare(x, y, direction), full(b, 1.0, x), full(b, 0.0, x))
    share = b.select(b.compare(x, y, "EQ"), full(b, 0.5, x), wins)
    gx = b.multiply(g, share)
    return [gx, b.subtract(g, gx)]


def _exponential(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [b.multiply(g, op.result)]


def _log(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [b.divide(g, op.operand(0))]


def _rsqrt(b: Builder, op: Operation, g: Value) -> Cotangents:
    y = op.result  # d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
    return [b.multiply(g, _scale(b, b.multiply(y, b.multiply(y, y)), -0.5))]


def _sqrt(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [b.divide(_scale(b, g, 0.5), op.result)]


def _tanh(b: Builder, op: Operation, g: Value) -> Cotangents:
    y = op.result
    return [b.multiply(g, b.subtract(full(b, 1.0, y), b.multiply(y, y)))]


def _logistic(b: Builder, op: Operation, g: Value) -> Cotangents:
    y = op.result
    return [b.multiply(g, b.multiply(y, b.subtract(full(b, 1.0, y), y)))]


def _select(b: Builder, op: Operation, g: Value) -> Cotangents:
    pred = op.operand(0)
    zero = full(b, 0.0, g)
    if pred.type.shape != g.type.shape:
        pred = b.broadcast(pred, g.type.shape, ())
    return [None, b.select(pred, g, zero), b.select(pred, zero, g)]


def _convert(b: Builder, op: Operation, g: Value) -> Cotangents:
    x = op.operand(0)
    return [b.convert(g, x.type.dtype) if is_float(x.type.dtype) else None]


# ----- shapes ----------------------------------------------------------------------------------


def _broadcast(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [sum_to_operand(b, g, op.operand(0), attr(op, "broadcast_dimensions"))]


def _reshape(b: Builder, op: Operation, g: Value) -> Cotangents:
    return [b.reshape(g, op.operand(0).type.shape)]


def _transpose(b: Builder, op: Operation, g: Value) -> Cotangents:
    perm = attr(op, "permutation")
    inverse = [perm.index(d) for d in range(len(perm))]
    return [b.transpose(g, tuple(inverse))]


def _constraint(b: Builder, op: Operation, g: Value) -> Cotangents:
    """The cotangent is constrained like the value (JAX's with_sharding_constraint rule)."""
    m = op.result.mapping
    return [g if m is None else b.sharding_constraint(g, m)]


# ----- contractions and reductions -----------------------------------------------------------


def _dot_operand(
    b: Builder, g: Value, other: Value, rank: int, mine: tuple, theirs: tuple, g_first: bool
) -> Value:
    """The cotangent of one dot_general operand (rank `rank`, batching/contracting dims `mine`)
    against the other operand `other` (its dims `theirs`). g's dims: batch, lhs free, rhs free.
    The lhs's is `dot(g, rhs)`, the rhs's `dot(lhs, g)`: each comes out in its operand's dim
    order for a plain matmul, so no transpose follows there."""
    (mb, mc), (tb, tc) = mine, theirs
    nb = len(mb)
    my_free = [d for d in range(rank) if d not in mb and d not in mc]
    their_free = [d for d in range(other.type.rank) if d not in tb and d not in tc]
    start = nb + len(my_free) if g_first else nb  # where g holds the other operand's free dims
    g_their = tuple(range(start, start + len(their_free)))
    batch = tuple(range(nb))
    if g_first:
        y = b.dot_general(g, other, (g_their, tuple(their_free)), (batch, tuple(tb)))
    else:
        y = b.dot_general(other, g, (tuple(their_free), g_their), (tuple(tb), batch))
    # y's dims: batch, then my free dims and my contracting dims (ordered by their partners),
    # the free ones first when g is the lhs
    contracting = [mc[list(tc).index(t)] for t in sorted(tc)]
    rest = my_free + contracting if g_first else contracting + my_free
    pos = {d: k for k, d in enumerate(mb)}
    pos.update({d: nb + k for k, d in enumerate(rest)})
    return _transposed(b, y, [pos[d] for d in range(rank)])


def _dot_general(b: Builder, op: Operation, g: Value) -> Cotangents:
    lhs, rhs = op.operands
    lb, rb, lc, rc = dot_general_dims(op)
    lhs_dims, rhs_dims = (tuple(lb), tuple(lc)), (tuple(rb), tuple(rc))
    return [
        _dot_operand(b, g, rhs, lhs.type.rank, lhs_dims, rhs_dims, True),
        _dot_operand(b, g, lhs, rhs.type.rank, rhs_dims, lhs_dims, False),
    ]


def _reduce(b: Builder, op: Operation, g: Value) -> Cotangents:
    """add: the cotangent broadcast back; maximum/minimum: shared among the elements equal to
    the result (JAX's chooser rule). The init value gets none."""
    if "kind" not in op.attributes:
        raise NotImplementedError("a reduce with a body function has no reverse-mode rule")
    x = op.operand(0)
    dims = attr(op, "dimensions")
    kept = tuple(d for d in range(x.type.rank) if d not in dims)
    back = b.broadcast(g, x.type.shape, kept)
    kind = attr(op, "kind").word
    if kind == "add":
        return [back, None]
    if kind not in ("maximum", "minimum"):
        raise NotImplementedError(f"reduce {kind} has no reverse-mode rule")
    hit = b.compare(x, b.broadcast(op.result, x.type.shape, kept), "EQ")
    ones = b.select(hit, full(b, 1.0, x), full(b, 0.0, x))
    count = b.broadcast(b.reduce(ones, dims, "add"), x.type.shape, kept)
    return [b.divide(b.multiply(back, ones), count), None]


def _gather(b: Builder, op: Operation, g: Value) -> Cotangents:
    """A scatter-add of the cotangent into zeros, with the gather's dims (JAX's rule)."""
    x, indices = op.operands
    attrs = {
        "update_window_dims": attr(op, "offset_dims"),
        "inserted_window_dims": attr(op, "collapsed_slice_dims"),
        "input_batching_dims": attr(op, "operand_batching_dims"),
        "scatter_indices_batching_dims": attr(op, "start_indices_batching_dims"),
        "scatter_dims_to_operand_dims": attr(op, "start_index_map"),
        "index_vector_dim": attr(op, "index_vector_dim"),
        "kind": Keyword("add"),
    }
    return [b.op("scatter", [full(b, 0.0, x), indices, g], attrs), None]


RULES: dict[str, Rule] = {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "negate": _negate,
    "maximum": _chooser,
    "minimum": _chooser,
    "exponential": _exponential,
    "log": _log,
    "rsqrt": _rsqrt,
    "sqrt": _sqrt,
    "tanh": _tanh,
    "logistic": _logistic,
    "select": _select,
    "convert": _convert,
    "broadcast_in_dim": _broadcast,
    "reshape": _reshape,
    "transpose": _transpose,
    "dot_general": _dot_general,
    "reduce": _reduce,
    "gather": _gather,
    "sharding_constraint": _constraint,
}

# Ops whose results carry no gradient to their operands.
NO_GRADIENT = frozenset({"compare", "iota", "constant", "and", "or", "not", "xor"})
