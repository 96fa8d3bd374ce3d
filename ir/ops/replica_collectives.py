"""StableHLO's own collectives in a global program (outside a manual_computation): XLA's
device-level collectives by replica groups.

%g0, %g1 = xla.all_gather %a, %b {all_gather_dim = 1, replica_groups = [[0, 1]]}
           : tensor<2x4xi64>, tensor<2x4xi64>
%t = xla.all_to_all %a {split_dimension = 1, concat_dimension = 0, split_count = 2,
                        replica_groups = [[0, 1]]} : tensor<4x2xi64>
%s = xla.reduce_scatter %a {scatter_dimension = 0, replica_groups = [[0, 1]], kind = add}
%r = xla.all_reduce %a {replica_groups = [[0, 1]], kind = add} : tensor<8xf32>
%p = xla.collective_permute %a {source_target_pairs = [[0, 1], [1, 0]]} : tensor<8xf32>
%i = partition_id : tensor<ui32>            (this device's id: `replica_id` likewise)

Each group member is one replica (or, with `use_global_device_ids`, one device) running its own
copy of the whole program, so a global program that holds them describes one member of a group.
shardc keeps them as written and propagates through them as Shardy does (their gathered,
scattered and split dims need replication, the rest is element-wise); its executors run one
copy of the program, so they run these only when every group has one member (the identity:
`all_gather` and `all_to_all` of a single member). In per-device code (a manual_computation's
body, an SPMD program) `xla.collective_permute` runs between the devices: its pairs are device
ids of the mesh, and a device no pair targets receives zeros. See docs/interop.md.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.compute import REDUCE_KINDS
from shardc.ir.ops.registry import COLLECTIVE, OpDef, attr, op_error, opt, register, req
from shardc.ir.ops.scalar_bodies import check_combiner
from shardc.ir.types import TensorType

REPLICA_COLLECTIVES = (
    "xla.all_gather", "xla.all_to_all", "xla.reduce_scatter", "xla.all_reduce",
    "xla.collective_permute",
)


def group_size(op: Operation) -> int:
    groups = attr(op, "replica_groups")
    return len(groups[0]) if groups and groups[0] else 1


def _check_groups(op: Operation) -> int:
    groups = attr(op, "replica_groups")
    sizes = {len(g) for g in groups}
    if len(sizes) > 1:
        shown = [list(g) for g in groups]
        raise op_error(op, f"replica groups must all have one size, got {shown}")
    _check_unique(op, [i for g in groups for i in g], "replica_groups")
    return group_size(op)


def _check_unique(op: Operation, ids: list[int], what: str) -> None:
    """StableHLO's verifier: ids are >= 0 and none appears twice."""
    seen: set[int] = set()
    for i in ids:
        if i < 0:
            raise op_error(op, f"{what} has a negative id {i}")
        if i in seen:
            raise op_error(op, f"{what} names id {i} more than once")
        seen.add(i)


def _dim(op: Operation, key: str, rank: int) -> int:
    d = attr(op, key)
    if not 0 <= d < rank:
        raise op_error(op, f"{key} {d} is out of range for rank {rank}")
    return d


def _resized(t: TensorType, d: int, n: int) -> TensorType:
    return TensorType(tuple(n if i == d else s for i, s in enumerate(t.shape)), t.dtype)


def _infer_all_gather(op: Operation) -> list[TensorType]:
    g = _check_groups(op)
    out = []
    for v in op.operands:
        d = _dim(op, "all_gather_dim", v.type.rank)
        out.append(_resized(v.type, d, v.type.shape[d] * g))
    return out


def _infer_all_to_all(op: Operation) -> list[TensorType]:
    _check_groups(op)
    n = attr(op, "split_count")
    out = []
    for v in op.operands:
        s = _dim(op, "split_dimension", v.type.rank)
        c = _dim(op, "concat_dimension", v.type.rank)
        if v.type.shape[s] % n:
            raise op_error(op, f"split dim {s} of size {v.type.shape[s]} does not split {n} ways")
        t = _resized(v.type, s, v.type.shape[s] // n)
        out.append(_resized(t, c, t.shape[c] * n))
    return out


def _infer_reduce_scatter(op: Operation) -> list[TensorType]:
    g = _check_groups(op)
    t = op.operand(0).type
    d = _dim(op, "scatter_dimension", t.rank)
    if t.shape[d] % g:
        raise op_error(op, f"scatter dim {d} of size {t.shape[d]} does not split {g} ways")
    return [_resized(t, d, t.shape[d] // g)]


def _infer_same(op: Operation) -> list[TensorType]:
    _check_groups(op)
    return [v.type.tensor for v in op.operands]


def _verify_reduction(op: Operation) -> None:
    check_combiner(op, [v.type.dtype for v in op.operands],
                   "(acc0, ..., x0, ...) -> (acc0, ...)")


def _infer_permute(op: Operation) -> list[TensorType]:
    for pair in attr(op, "source_target_pairs"):
        if len(pair) != 2:
            raise op_error(op, f"source_target_pairs must be [source, target], got {list(pair)}")
    pairs = attr(op, "source_target_pairs")
    _check_unique(op, [p[0] for p in pairs], "source_target_pairs (sources)")
    _check_unique(op, [p[1] for p in pairs], "source_target_pairs (targets)")
    return [v.type.tensor for v in op.operands]


_C = frozenset({COLLECTIVE})
_GROUPS = {
    "replica_groups": opt("int_groups", ()),
    # The same groups written as mesh axes (StableHLO's replica_group_mesh_axes), printed in
    # place of the device ids: `#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>`.
    "replica_group_mesh_axes": opt("any", None),
    "channel_handle": opt("any", None),
    "use_global_device_ids": opt("bool", False),
}
_REDUCTION = {"kind": opt("keyword", None, *REDUCE_KINDS), "body": opt("symbol", None)}
register(OpDef("xla.all_gather", None, None, {**_GROUPS, "all_gather_dim": req("int")},
               _infer_all_gather, traits=_C))
register(OpDef("xla.all_to_all", None, None,
               {**_GROUPS, "split_dimension": req("int"), "concat_dimension": req("int"),
                "split_count": req("int")}, _infer_all_to_all, traits=_C))
register(OpDef("xla.reduce_scatter", 1, 1, {**_GROUPS, **_REDUCTION,
                                            "scatter_dimension": req("int")},
               _infer_reduce_scatter, _verify_reduction, traits=_C))
register(OpDef("xla.all_reduce", None, None, {**_GROUPS, **_REDUCTION}, _infer_same,
               _verify_reduction, traits=_C))
register(OpDef("xla.collective_permute", 1, 1,
               {"source_target_pairs": req("int_groups"), "channel_handle": opt("any", None)},
               _infer_permute, traits=_C))


def _infer_device_id(op: Operation) -> list[TensorType]:
    return [TensorType((), "ui32")]


# The id of the device (partition) or replica running this copy of the program: what a
# per-device program indexes its tables by (sdy-convert-global-to-local emits them).
register(OpDef("partition_id", 0, 1, {}, _infer_device_id))
register(OpDef("replica_id", 0, 1, {}, _infer_device_id))
