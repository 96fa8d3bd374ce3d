"""The per-device collectives: what the `spmd` pass emits, and what the body of a
`manual_computation` (jax.shard_map) is written with.

Types are local (one device's padded block); each op is one JAX collective under `shard_map`:

    %1 = spmd.all_gather %0 {axes = ["x"], dim = 0, groups = [[0, 1], [2, 3]]} : tensor<8x4xf32>
         # lax.all_gather(x, "x", axis=0, tiled=True)
    %2 = spmd.all_slice %0 {axes = ["x"], dim = 1, groups = [[0, 1], [2, 3]]} : tensor<4x2xf32>
         # lax.dynamic_slice_in_dim(x, lax.axis_index("x") * 2, 2, axis=1)
    %3 = spmd.all_to_all %0 {axes = ["x"], split_dim = 1, concat_dim = 0, groups = ...}
         # lax.all_to_all(x, "x", split_axis=1, concat_axis=0, tiled=True)
    %4 = spmd.all_reduce %0 {axes = ["x", "y"], kind = add, groups = ...}
         # lax.psum(x, ("x", "y")); kind maximum/minimum: pmax/pmin; multiply: a product
    %5 = spmd.reduce_scatter %0 {axes = ["x"], dim = 0, groups = ...}
         # lax.psum_scatter(x, "x", scatter_dimension=0, tiled=True)
    %6 = spmd.collective_permute %0 {pairs = [[0, 1], [1, 0]]} : ...
         # lax.ppermute(x, all mesh axes, perm) with device ids turned into mesh positions
    %7 = spmd.axis_index {axes = ["x", "y"]} : tensor<i32>
         # lax.axis_index(("x", "y")): the linear index over the axes, the first one major

`spmd.all_reduce`, `spmd.all_gather` and `spmd.reduce_scatter` may take several operands (one
result each, same attributes): a *combined* collective, one launch for all of them, as XLA's
combiners make (`combine-collectives`, passes/spmd/combine_collectives.py)::

    %8, %9 = spmd.all_reduce %3, %5 {axes = ["dp"], kind = add, groups = [[0, 1]]}
             : tensor<64xf32>, tensor<64x64xf32>       # lax.psum((x, y), "dp")

Combined collectives appear only in SPMD programs (the pass runs after `spmd`), not in the body
of a manual_computation.

`axes` may hold sub-axes (`"x":(1)2`). `groups` are the device ids that communicate together
(`shardc.passes.analysis.collectives.groups.device_groups(mesh, axes)`): a member's position in its
group is its linear index over `axes`, which orders concatenation and slicing. `pairs` are
`[source, target]` device ids. The data semantics are exactly JAX's: the gathered/sliced dims
must divide evenly (the `spmd` pass pads and slices around these ops for uneven shards).

They may appear only where code is per-device: in an SPMD function (one carrying `in_shapes`,
which the `spmd` pass writes) or in the body of a `manual_computation` (ir/ops/manual.py, which
also checks that they communicate over manual axes only); anywhere else they are an error.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.manual_bodies import is_manual_body
from shardc.ir.ops.registry import COLLECTIVE, OpDef, attr, op_error, register, req
from shardc.ir.types import TensorType

ALL_REDUCE_KINDS = ("add", "maximum", "minimum", "multiply", "and", "or")


def group_size(op: Operation) -> int:
    """Members per group of a grouped spmd collective."""
    return len(attr(op, "groups")[0])


def _verify_placement(op: Operation) -> None:
    """Per-device code only: an SPMD function or a manual_computation body."""
    func = op.function
    module = func.module if func is not None else None
    if func is None or module is None or "in_shapes" in func.attributes:
        return
    if not is_manual_body(module, func.name):
        raise op_error(
            op,
            f"is a per-device collective, but @{func.name} is neither the body of a "
            "manual_computation nor an SPMD program; use the global collectives (all_gather, "
            "all_reduce, ...) or put the per-device code in a manual_computation",
        )


def _check_groups(op: Operation) -> int:
    groups = attr(op, "groups")
    if not groups or not groups[0]:
        raise op_error(op, "needs at least one non-empty device group")
    size = len(groups[0])
    seen: set[int] = set()
    for g in groups:
        if len(g) != size:
            raise op_error(op, f"groups must all have {size} members, got {list(g)}")
        for d in g:
            if d in seen or d < 0:
                raise op_error(op, f"device {d} appears in two groups (or is negative)")
            seen.add(d)
    return size


def _check_dim(op: Operation, key: str, rank: int) -> int:
    d = attr(op, key)
    if not 0 <= d < rank:
        raise op_error(op, f"{key} {d} is out of range for rank {rank}")
    return d


def _resized(t: TensorType, changes: dict[int, int]) -> TensorType:
    shape = list(t.shape)
    for d, n in changes.items():
        shape[d] = n
    return TensorType(tuple(shape), t.dtype)


def _divide(op: Operation, t: TensorType, d: int, g: int) -> int:
    if t.shape[d] % g:
        raise op_error(op, f"dim {d} of size {t.shape[d]} does not split into {g} equal parts")
    return t.shape[d] // g


def _each(op: Operation, infer) -> list[TensorType]:
    """A combinable collective: result i is `infer(operand i)`; several operands only in an
    SPMD program."""
    if op.num_operands < 1 or len(op.results) != op.num_operands:
        raise op_error(op, f"has {op.num_operands} operands but {len(op.results)} results; a "
                       "combined collective has one result per operand")
    if op.num_operands > 1:
        func = op.function
        module = func.module if func is not None else None
        if module is not None and is_manual_body(module, func.name):
            raise op_error(op, "combines several operands in the body of a manual_computation; "
                           "combined collectives belong to SPMD programs (combine-collectives)")
    return [infer(v.type) for v in op.operands]


def _infer_all_gather(op: Operation) -> list[TensorType]:
    g = _check_groups(op)

    def one(t: TensorType) -> TensorType:
        d = _check_dim(op, "dim", t.rank)
        return _resized(t, {d: t.shape[d] * g})

    return _each(op, one)


def _infer_split(op: Operation) -> list[TensorType]:
    """all_slice and reduce_scatter: dim `dim` becomes one of `group size` equal parts."""
    g = _check_groups(op)

    def one(t: TensorType) -> TensorType:
        d = _check_dim(op, "dim", t.rank)
        return _resized(t, {d: _divide(op, t, d, g)})

    if op.name == "spmd.all_slice":
        return [one(op.operand(0).type)]
    return _each(op, one)


def _infer_all_to_all(op: Operation) -> list[TensorType]:
    t = op.operand(0).type
    g = _check_groups(op)
    s = _check_dim(op, "split_dim", t.rank)
    c = _check_dim(op, "concat_dim", t.rank)
    if s == c:
        raise op_error(op, f"split_dim and concat_dim must differ (both {s})")
    return [_resized(t, {s: _divide(op, t, s, g), c: t.shape[c] * g})]


def _infer_same(op: Operation) -> list[TensorType]:
    t = op.operand(0).type
    return [TensorType(t.shape, t.dtype)]


def _infer_all_reduce(op: Operation) -> list[TensorType]:
    _check_groups(op)
    return _each(op, lambda t: TensorType(t.shape, t.dtype))


def _verify_pairs(op: Operation) -> None:
    _verify_placement(op)
    sources: set[int] = set()
    targets: set[int] = set()
    for pair in attr(op, "pairs"):
        if len(pair) != 2:
            raise op_error(op, f"pairs must be [source, target], got {list(pair)}")
        s, t = pair
        if s in sources or t in targets:
            raise op_error(op, f"pair [{s}, {t}] repeats a source or a target")
        sources.add(s)
        targets.add(t)


def _infer_axis_index(op: Operation) -> list[TensorType]:
    if not attr(op, "axes"):
        raise op_error(op, "needs at least one axis")
    return [TensorType((), "i32")]


_C = frozenset({COLLECTIVE})
_GROUPED = {"axes": req("axes"), "groups": req("int_groups")}


def _collective(name: str, attrs: dict, infer, verify=_verify_placement, n: int | None = 1
                ) -> None:
    register(OpDef(name, n, n, attrs, infer, verify, _C))


_collective("spmd.all_gather", {**_GROUPED, "dim": req("int")}, _infer_all_gather, n=None)
_collective("spmd.all_slice", {**_GROUPED, "dim": req("int")}, _infer_split)
_collective(
    "spmd.all_to_all",
    {**_GROUPED, "split_dim": req("int"), "concat_dim": req("int")},
    _infer_all_to_all,
)
_collective(
    "spmd.all_reduce", {**_GROUPED, "kind": req("keyword", *ALL_REDUCE_KINDS)}, _infer_all_reduce,
    n=None,
)
_collective("spmd.reduce_scatter", {**_GROUPED, "dim": req("int")}, _infer_split, n=None)
_collective("spmd.collective_permute", {"pairs": req("int_groups")}, _infer_same, _verify_pairs)
register(
    OpDef("spmd.axis_index", 0, 1, {"axes": req("axes")}, _infer_axis_index, _verify_placement)
)

# The collectives that may combine several operands (one launch for all of them).
COMBINABLE = ("spmd.all_reduce", "spmd.all_gather", "spmd.reduce_scatter")

SPMD_OPS = (
    "spmd.all_gather",
    "spmd.all_slice",
    "spmd.all_to_all",
    "spmd.all_reduce",
    "spmd.reduce_scatter",
    "spmd.collective_permute",
    "spmd.axis_index",
)
