"""Vectorised evaluation of scalar body functions: `sort` comparators and `reduce` bodies.

A body function is written over scalars (`tensor<f32>`), but its ops are element-wise, so it is
called ONCE per step with whole arrays in place of the scalars (numpy broadcasting does the
rest); there is no Python loop per element:

- `reduce` with `body`: the reduced dims are flattened into one trailing axis, which is folded
  as a pairwise tree (`body(x[0::2], x[1::2])`, an odd last element carried) in
  ceil(log2 n) calls, then combined once with the init values: `body(init, tree)`;
- `sort`: per slice, the n x n matrix `less[i, j] = comparator(x[i], x[j])` in one call; an
  element's position is the number of elements that sort before it plus the number of equal
  (neither less) elements before it in the input -- the stable order, which is also a valid
  unstable one. Slices longer than `MATRIX_MAX_N` use a vectorised merge sort instead
  (O(log^2 n) calls, O(n) memory per slice), with the same stable result.

Both work on numpy and on `jax.numpy` (pass `xp`), so the numpy executors and the JAX executor
share them. `evaluate_body` runs a body function with a kernel table (`kernels[op.name](op,
*arrays)`); scalar `broadcast_in_dim`/`reshape` inside a body are the identity on the arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shardc.ir.core import Function, Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import sort_dimension

Body = Callable[..., tuple[Any, ...]]

# Ops that only reshape a scalar: the identity on broadcast arrays.
_SCALAR_IDENTITY = ("broadcast_in_dim", "reshape")


def body_of(op: Operation, key: str) -> Function:
    """The function `op`'s attribute `key` (`body`, `comparator`) names."""
    func = op.function
    module = func.module if func is not None else None
    body = module.lookup_function(attr(op, key).name) if module is not None else None
    if body is None:
        raise ExecutionError(f"'{op.name}' op: {key} function not found", op.loc)
    return body


def evaluate_body(func: Function, kernels: Mapping[str, Callable[..., Any]]) -> Body:
    """`func` as a function of arrays (broadcast in place of its scalar arguments)."""

    def run(*args: Any) -> tuple[Any, ...]:
        env: dict[int, Any] = {id(a): x for a, x in zip(func.args, args, strict=True)}
        for op in func.body:
            xs = [env[id(v)] for v in op.operands]
            if op.name == "return":
                return tuple(xs)
            if op.name in _SCALAR_IDENTITY and all(r.type.rank == 0 for r in op.results):
                out = xs[0]
            elif op.name == "call":  # JAX calls helpers (`@_where`) from bodies
                out = evaluate_body(body_of(op, "callee"), kernels)(*xs)
                out = out[0] if len(op.results) == 1 else out
            else:
                kernel = kernels.get(op.name)
                if kernel is None:
                    raise ExecutionError(
                        f"'{op.name}' op in @{func.name} cannot run in a vectorised body", op.loc
                    )
                out = kernel(op, *xs)
            if len(op.results) == 1:
                env[id(op.results[0])] = out
            else:
                for r, v in zip(op.results, out, strict=True):
                    env[id(r)] = v
        raise ExecutionError(f"function @{func.name} has no return", func.loc)

    return run


def reduce_with_body(
    op: Operation, body: Body, arrays: Sequence[Any], xp: Any, lead: int = 0
) -> tuple[Any, ...]:
    """`reduce` with a body on `arrays` (inputs then inits). `lead` leading dims are batch
    dims in front of every operand (the numpy SPMD executor's device dims; inits have only
    those). The tree keeps the elements' order, so it equals a left-to-right fold for any
    associative body (commutativity is not needed)."""
    n = len(arrays) // 2
    xs, inits = list(xp.broadcast_arrays(*arrays[:n])), list(arrays[n:])
    dims = [lead + d for d in attr(op, "dimensions")]
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    out_shape = tuple(xs[0].shape[d] for d in kept)
    size = 1
    for d in dims:
        size *= xs[0].shape[d]
    xs = [xp.reshape(xp.transpose(x, kept + dims), (*out_shape, size)) for x in xs]
    return fold_last_axis(body, xs, inits, out_shape, xp)


def fold_last_axis(
    body: Body, xs: Sequence[Any], inits: Sequence[Any], out_shape: tuple[int, ...], xp: Any
) -> tuple[Any, ...]:
    """`body` folded over the last axis of every `xs[i]` (shape `out_shape + (size,)`), then
    combined once with the init values (broadcast against `out_shape`): a pairwise tree in
    ceil(log2 size) calls that keeps the elements' order (reduce and reduce_window bodies)."""
    xs = list(xs)
    size = xs[0].shape[-1]
    inits = [xp.reshape(i, tuple(i.shape) + (1,) * (len(out_shape) - i.ndim)) for i in inits]
    if size == 0:
        return tuple(xp.broadcast_to(i, out_shape) for i in inits)
    m = size
    while m > 1:
        half = m // 2
        lhs = [x[..., 0 : 2 * half : 2] for x in xs]
        rhs = [x[..., 1 : 2 * half : 2] for x in xs]
        pairs = [_full(p, lhs[0].shape, xp) for p in body(*lhs, *rhs)]
        if m % 2:  # the last element waits for the next round, still last
            pairs = [xp.concatenate([p, x[..., m - 1 :]], axis=-1) for p, x in zip(pairs, xs)]
        xs, m = pairs, half + m % 2
    return tuple(_full(v, out_shape, xp) for v in body(*inits, *[x[..., 0] for x in xs]))


def _full(v: Any, shape: tuple[int, ...], xp: Any) -> Any:
    """`v` broadcast to `shape` (a body may return a scalar constant)."""
    return v if tuple(v.shape) == tuple(shape) else xp.broadcast_to(v, shape)


def _argsort(xp: Any, a: Any) -> Any:
    if xp.__name__ == "numpy":
        return xp.argsort(a, axis=-1, kind="stable")
    return xp.argsort(a, axis=-1, stable=True)


def sort_with_comparator(
    op: Operation, comparator: Body, arrays: Sequence[Any], xp: Any, lead: int = 0
) -> tuple[Any, ...]:
    """`sort` of `arrays` along the op's dimension (shifted by `lead` batch dims) by the
    comparator, stably, through the per-slice n x n comparison matrix (memory: n * n booleans
    per slice)."""
    d = lead + sort_dimension(op)
    moved = [xp.moveaxis(x, d, -1) for x in xp.broadcast_arrays(*arrays)]
    shape = moved[0].shape
    n = shape[-1]
    rows = [xp.reshape(x, (-1, n)) for x in moved]
    step = max(1, _MATRIX_LIMIT // max(n * n, 1))
    if n > MATRIX_MAX_N:
        order = _merge_sort_order(comparator, rows, xp)
    elif xp.__name__ != "numpy" or rows[0].shape[0] <= step:
        order = _argsort(xp, _positions(comparator, rows, xp))
    else:  # bound the n x n matrices' memory: slices in chunks
        order = _argsort(xp, xp.concatenate(
            [_positions(comparator, [r[k : k + step] for r in rows], xp)
             for k in range(0, rows[0].shape[0], step)]
        ))
    return tuple(
        xp.moveaxis(xp.reshape(xp.take_along_axis(r, order, axis=-1), shape), -1, d)
        for r in rows
    )


# Slices longer than this sort by a merge sort (O(log^2 n) comparator calls on the whole
# batch) instead of n x n comparison matrices (one call, n * n booleans per slice).
MATRIX_MAX_N = 64
# Booleans per chunk of comparison matrices (numpy): 16 MiB.
_MATRIX_LIMIT = 1 << 24


def _merge_sort_order(comparator: Body, rows: Sequence[Any], xp: Any) -> Any:
    """[b, k]: index of the k-th element of slice b in stable sorted order, by a bottom-up
    merge sort: merging runs A and B (each sorted), an element of A moves forward by the number
    of B elements that sort before it, one of B by the number of A elements that do not sort
    after it -- both found by a binary search, every step one comparator call on all elements
    of all slices at once. Slices are padded to a power of two with elements that sort last."""
    batch, n = rows[0].shape
    size = 1 << max(0, (n - 1).bit_length())
    perm = xp.broadcast_to(xp.arange(size), (batch, size))

    def less(x: tuple, y: tuple) -> Any:
        """x sorts before y; x, y: (values per operand, is padding)."""
        args = []
        for u, v in zip(x[0], y[0]):
            args += [u, v]
        (lt,) = comparator(*args)
        return xp.where(x[1], False, xp.where(y[1], True, lt))

    def count(run: tuple, elems: tuple, before: Callable[[tuple, tuple], Any]) -> Any:
        """How many elements of each sorted `run` satisfy `before(run elem, elem)` (a prefix)."""
        w = run[1].shape[-1]
        lo = xp.zeros(run[1].shape, dtype=perm.dtype)
        hi = xp.full(run[1].shape, w, dtype=perm.dtype)
        for _ in range(w.bit_length()):
            active = lo < hi
            mid = xp.minimum((lo + hi) // 2, w - 1)
            cand = ([xp.take_along_axis(v, mid, axis=-1) for v in run[0]],
                    xp.take_along_axis(run[1], mid, axis=-1))
            ok = before(cand, elems)
            lo = xp.where(active & ok, mid + 1, lo)
            hi = xp.where(active & ~ok, mid, hi)
        return lo

    w = 1
    while w < size:
        blocks = xp.reshape(perm, (batch, size // (2 * w), 2, w))
        a, b = blocks[:, :, 0, :], blocks[:, :, 1, :]
        ends = []
        for idx in (a, b):
            flat = xp.reshape(xp.minimum(idx, n - 1), (batch, -1))
            values = [xp.reshape(xp.take_along_axis(r, flat, axis=-1), idx.shape) for r in rows]
            ends.append((values, idx >= n))
        at = xp.arange(w)
        pos_a = at + count(ends[1], ends[0], less)  # B elements strictly before
        pos_b = at + count(ends[0], ends[1], lambda x, y: ~less(y, x))  # A elements not after
        merged = xp.concatenate([a, b], axis=-1)
        order = _argsort(xp, xp.concatenate([pos_a, pos_b], axis=-1))
        perm = xp.reshape(xp.take_along_axis(merged, order, axis=-1), (batch, size))
        w *= 2
    return perm[:, :n]


def _positions(comparator: Body, rows: Sequence[Any], xp: Any) -> Any:
    """[b, i]: where element i of slice b goes, stably."""
    n = rows[0].shape[-1]
    args = []
    for x in rows:
        args += [x[:, :, None], x[:, None, :]]
    (less,) = comparator(*args)  # less[b, i, j]: element i sorts before element j
    less = xp.broadcast_to(less, (rows[0].shape[0], n, n))
    before = xp.sum(less, axis=-2)  # [b, i]: how many elements sort before element i
    equal = ~less & ~xp.swapaxes(less, -1, -2)
    earlier = xp.arange(n)[None, :] < xp.arange(n)[:, None]  # [i, j]: j is before i
    return before + xp.sum(equal & earlier, axis=-1)


def body_reduce_kernel(kernels: Mapping[str, Callable[..., Any]], xp: Any, lead: int = 0):
    """A kernel `(op, *arrays)` for `reduce` with a body, over the kernel table `kernels`."""

    def kernel(op: Operation, *arrays: Any) -> Any:
        body = evaluate_body(body_of(op, "body"), kernels)
        out = reduce_with_body(op, body, arrays, xp, lead)
        return out[0] if len(out) == 1 else out

    return kernel


def sort_kernel(kernels: Mapping[str, Callable[..., Any]], xp: Any, lead: int = 0):
    """A kernel `(op, *arrays)` for `sort`, over the kernel table `kernels`."""

    def kernel(op: Operation, *arrays: Any) -> Any:
        comparator = evaluate_body(body_of(op, "comparator"), kernels)
        out = sort_with_comparator(op, comparator, arrays, xp, lead)
        return out[0] if len(out) == 1 else out

    return kernel


__all__ = [
    "body_of",
    "fold_last_axis",
    "body_reduce_kernel",
    "evaluate_body",
    "reduce_with_body",
    "sort_kernel",
    "sort_with_comparator",
]
