"""Ops whose StableHLO region is a scalar body, outlined into a private function by symbol.

    %s0, %s1 = sort %k, %v {comparator = @main_sort_cmp, dimension = 1, is_stable = true}
               : tensor<16x32xf32>, tensor<16x32xi32>
    %m, %i = reduce %x, %iota, %init_x, %init_i {body = @main_reduce_body, dimensions = [1]}
             : tensor<16xf32>, tensor<16xi32>

`sort`: the comparator takes the scalars `(lhs0, rhs0, lhs1, rhs1, ...)`, one pair per operand,
and returns `tensor<i1>` ("lhs sorts before rhs"). `reduce` with `body` (instead of `kind`):
operands are the inputs then one scalar init per input; the body takes the accumulators then
the inputs' elements `(acc0, acc1, ..., x0, x1, ...)` (StableHLO's block argument order) and
returns the new accumulators. The body functions are ordinary private functions; they are not
called with tensors, so they are no data-flow edges (propagation leaves their scalars alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from shardc.ir.core import Function, Operation
from shardc.ir.ops.registry import OpDef, attr, op_error, opt, register, req
from shardc.ir.types import TensorType, is_float


def body_function(op: Operation, key: str) -> Function | None:
    """The function `op`'s symbol attribute `key` names (None: `op` is in no module)."""
    func = op.function
    module = func.module if func is not None else None
    if module is None:
        return None
    name = attr(op, key).name
    body = module.lookup_function(name)
    if body is None:
        raise op_error(op, f"{key} @{name} is not defined in this module")
    return body


def check_scalar_signature(
    op: Operation, key: str, args: Sequence[str], results: Sequence[str], order: str
) -> None:
    """The function of attribute `key` takes scalars of `args` dtypes and returns scalars of
    `results` dtypes (`order` describes the arguments for the error message)."""
    body = body_function(op, key)
    if body is None:
        return
    want_args = [TensorType((), d).tensor for d in args]
    want_results = [TensorType((), d).tensor for d in results]
    got_args = [a.type.tensor for a in body.args]
    got_results = [t.tensor for t in body.result_types]
    if got_args != want_args or got_results != want_results:

        def sig(a: list, r: list) -> str:
            return f"({', '.join(map(str, a))}) -> ({', '.join(map(str, r))})"

        raise op_error(
            op,
            f"{key} @{body.name} has signature {sig(got_args, got_results)}, expected "
            f"{sig(want_args, want_results)} {order}",
        )


# ----- sort -----------------------------------------------------------------------------------


def _infer_sort(op: Operation) -> list[TensorType]:
    if op.num_operands == 0:
        raise op_error(op, "takes at least one operand")
    shape = op.operand(0).type.shape
    for i, v in enumerate(op.operands):
        if v.type.shape != shape:
            raise op_error(
                op, f"operand {i} has shape {list(v.type.shape)}, operand 0 {list(shape)}"
            )
    d = attr(op, "dimension")
    if not -len(shape) <= d < len(shape) or not shape:
        raise op_error(op, f"dimension {d} is out of range for rank {len(shape)}")
    return [TensorType(shape, v.type.dtype) for v in op.operands]


def sort_dimension(op: Operation) -> int:
    """The sort dimension, non-negative."""
    d = attr(op, "dimension")
    return d + op.operand(0).type.rank if d < 0 else d


def _verify_sort(op: Operation) -> None:
    if len(op.results) != op.num_operands:
        raise op_error(op, f"has {op.num_operands} operands but {len(op.results)} results")
    dtypes = [v.type.dtype for v in op.operands]
    pairs = [d for d in dtypes for _ in (0, 1)]
    check_scalar_signature(op, "comparator", pairs, ["i1"], "(lhs0, rhs0, lhs1, rhs1, ...)")


register(
    OpDef(
        "sort",
        None,
        None,
        {"comparator": req("symbol"), "dimension": opt("int", -1), "is_stable": opt("bool", False)},
        _infer_sort,
        _verify_sort,
        summary="sort operands along `dimension` by a comparator function",
    )
)


# ----- reduce with a body ---------------------------------------------------------------------


def reduce_inputs(op: Operation) -> tuple[list, list]:
    """`(inputs, inits)` of a `reduce` (one of each for `kind`, n of each for `body`)."""
    n = op.num_operands // 2
    return list(op.operands[:n]), list(op.operands[n:])


def infer_body_reduce(op: Operation, check_dims) -> list[TensorType]:
    """Result types of `reduce` with `body`: the inputs' shape without `dimensions`, the
    inits' element types."""
    if op.num_operands < 2 or op.num_operands % 2:
        raise op_error(op, f"takes inputs then one init per input, got {op.num_operands} operands")
    inputs, inits = reduce_inputs(op)
    shape = inputs[0].type.shape
    for i, (x, init) in enumerate(zip(inputs, inits)):
        if x.type.shape != shape:
            raise op_error(op, f"input {i} has shape {list(x.type.shape)}, input 0 {list(shape)}")
        if init.type.rank != 0 or init.type.dtype != x.type.dtype:
            raise op_error(
                op, f"init {i} must be a scalar of {x.type.dtype}, got {init.type.tensor}"
            )
    dims = attr(op, "dimensions")
    check_dims(op, dims, len(shape), "dimension")
    out = tuple(n for d, n in enumerate(shape) if d not in dims)
    return [TensorType(out, init.type.dtype) for init in inits]


def verify_reduce(op: Operation) -> None:
    """Result count; the body function's signature."""
    n = op.num_operands // 2 if "body" in op.attributes else 1
    if len(op.results) != n:
        raise op_error(op, f"has {n} result{'s' if n != 1 else ''}, got {len(op.results)}")
    if "body" not in op.attributes:
        return
    dtypes = [v.type.dtype for v in op.operands[op.num_operands // 2 :]]
    check_scalar_signature(
        op, "body", dtypes + dtypes, dtypes, "(acc0, acc1, ..., x0, x1, ...) -> (acc0, ...)"
    )


def has_body(op: Operation) -> bool:
    """A `reduce` (or other op) whose combiner is a body function, not a `kind`."""
    return "body" in op.attributes


# ----- combiners of scatter and reduce_window ---------------------------------------------------

# The binary ops Shardy treats as a reduction of partial results (`and`/`or` on i1 only).
COMMON_REDUCTIONS = ("add", "multiply", "maximum", "minimum")


def combiner_count(op: Operation) -> int:
    """How many inputs a scatter/reduce_window with `kind` or `body` combines (its results)."""
    return len(op.results)


def check_combiner(op: Operation, dtypes: Sequence[str], order: str) -> None:
    """Exactly one of `kind` (one input) and `body` (a function over the inputs' scalars:
    accumulators then new elements -> accumulators)."""
    has_kind, has_body = "kind" in op.attributes, "body" in op.attributes
    if has_kind == has_body:
        raise op_error(op, "needs exactly one of 'kind' (add, maximum, ...) and 'body' (@f)")
    if has_kind and len(dtypes) != 1:
        raise op_error(op, f"with 'kind' combines one input, got {len(dtypes)}; use 'body'")
    if has_body:
        check_scalar_signature(op, "body", [*dtypes, *dtypes], list(dtypes), order)


def scatter_reduction(op: Operation) -> str | None:
    """The one binary op every input of a scatter combines its updates with (Shardy's
    `getCommonSupportedReductionOp`): add, multiply, maximum or minimum (and/or on i1), the
    same for all inputs, of (input element, update element); else None (e.g. `replace`)."""
    kind = op.attributes.get("kind")
    if kind is not None:
        return kind.word if kind.word in COMMON_REDUCTIONS else None
    body = body_function(op, "body") if "body" in op.attributes else None
    if body is None:
        return None
    ops = list(body.body)
    n = combiner_count(op)
    if not ops or ops[-1].name != "return" or ops[-1].num_operands != n:
        return None
    found: str | None = None
    for i, v in enumerate(ops[-1].operands):
        inner = v.defining_op
        if inner is None or inner.num_operands != 2:
            return None
        logical = v.type.dtype == "i1" and inner.name in ("and", "or")
        if not logical and inner.name not in COMMON_REDUCTIONS:
            return None
        if found is not None and inner.name != found:
            return None
        found = inner.name
        args = {id(body.args[i]), id(body.args[i + n])}
        if {id(x) for x in inner.operands} != args:
            return None
    return found


def is_body_reduce(op: Operation) -> bool:
    return op.name == "reduce" and has_body(op)


def identity_value(kind: str, dtype: str) -> Any:
    """The neutral element of a reduction `kind` on element type `dtype`."""
    if dtype == "i1":
        return kind in ("multiply", "and", "minimum")
    if is_float(dtype):
        return {"add": 0.0, "multiply": 1.0, "maximum": -math.inf, "minimum": math.inf}[kind]
    info = np.iinfo(np.dtype({"i": "int", "u": "uint"}[dtype[0]] + dtype.lstrip("ui")))
    return {
        "add": 0,
        "or": 0,
        "xor": 0,
        "multiply": 1,
        "and": -1 if info.min < 0 else int(info.max),
        "maximum": int(info.min),
        "minimum": int(info.max),
    }[kind]
