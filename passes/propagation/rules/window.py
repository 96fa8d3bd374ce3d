"""Rules for convolution, reduce_window and the dynamic slices (Shardy's
op_sharding_rule_registry.cc, same factor order as the Shardy that made the JAX corpus).

convolution 8x16x16x4, 3x3x4x16 NHWC/HWIO
    ([i, j, k, l], [n, o, l, m])->([i, j, k, m]) {i=8, j=16, k=16, l=4, m=16, n=1, o=1}
    reduction={l} permutation={j, k}
reduce_window 8x16x16x16 -> 8x8x8x16, window [1, 2, 2, 1]
    ([i, j, k, l], [])->([i, j, k, l]) {i=8, j=8, k=8, l=16} permutation={j, k}
dynamic_slice 16x32 -> 4x32
    ([i, j], [], [])->([i, j]) {i=16, j=32} need_replication={i} blocked_propagation={i}
dynamic_update_slice 16x32, update 4x32
    ([i, k], [j, k], [], [])->([i, k]) {i=16, j=4, k=32} need_replication={j}

The rules insert-reshards and spmd lower window ops under (`tiled_reduce_window`,
`tiled_select_and_scatter`) say more than Shardy's: a dim whose windows tile it (no padding, no
base dilation, each window within its stride, size = windows x stride) is the windows factor
(major) then the within-stride factor, so its windows stay sharded with no communication::

reduce_window 8x16x16x16 -> 8x8x8x16, window = stride = [1, 2, 2, 1]
    ([i, jk, lm, n], [])->([i, j, l, n]) {i=8, j=8, k=2, l=8, m=2, n=16} need_replication={k, m}
"""

from __future__ import annotations

from shardc.ir.ops.window import CONV_DIMS
from shardc.passes.propagation.rules.builder import NULL, RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

CONV_ATTRS = (*CONV_DIMS, "feature_group_count", "batch_group_count")
REDUCE_WINDOW_ATTRS = (
    "window_dimensions",
    "window_strides",
    "base_dilations",
    "window_dilations",
    "padding",
)


def convolution(q: RuleQuery) -> OpShardingRule:
    """Batch groups, per-group batch, per spatial dim the number of windows (permutation) and the
    window size (reduction) larger first, feature groups, per-group input features (reduction),
    per-group output features. Under conservative propagation spatial dims get no factor."""
    lhs, rhs = q.operands
    (out,) = q.results
    a = q.attr
    bgc, fgc = a("batch_group_count"), a("feature_group_count")
    b = RuleBuilder(q.operands, q.results)
    if bgc > 1:
        b.add_factor(
            (a("input_batch_dimension"), a("kernel_output_feature_dimension")),
            (a("output_feature_dimension"),),
            bgc,
        )
    b.add_factor(
        (a("input_batch_dimension"), NULL),
        (a("output_batch_dimension"),),
        out[a("output_batch_dimension")],
    )
    if not a("conservative"):
        for lhs_dim, rhs_dim, out_dim in zip(
            a("input_spatial_dimensions"),
            a("kernel_spatial_dimensions"),
            a("output_spatial_dimensions"),
        ):
            remaining = lhs[lhs_dim]

            def spatial(size: int, contracting: bool, lhs_dim=lhs_dim, rhs_dim=rhs_dim,
                        out_dim=out_dim) -> None:
                nonlocal remaining
                size = min(remaining, size)
                if size > 1:
                    b.add_factor(
                        (lhs_dim, rhs_dim if contracting else NULL),
                        (NULL if contracting else out_dim,),
                        size,
                        FactorKind.REDUCTION if contracting else FactorKind.PERMUTATION,
                    )
                    remaining //= size

            windows, window = out[out_dim], rhs[rhs_dim]
            if windows >= window:
                spatial(windows, False)
                spatial(window, True)
            else:
                spatial(window, True)
                spatial(windows, False)
    if fgc > 1:
        b.add_factor(
            (a("input_feature_dimension"), a("kernel_output_feature_dimension")),
            (a("output_feature_dimension"),),
            fgc,
        )
    b.add_factor(
        (a("input_feature_dimension"), a("kernel_input_feature_dimension")),
        (NULL,),
        rhs[a("kernel_input_feature_dimension")],
        FactorKind.REDUCTION,
    )
    per_group = out[a("output_feature_dimension")] // (bgc * fgc)
    if per_group > 1:
        b.add_factor(
            (NULL, a("kernel_output_feature_dimension")), (a("output_feature_dimension"),),
            per_group,
        )
    return b.build()


def window_passthrough(q: RuleQuery, dim: int) -> bool:
    """Shardy's `isWindowPassthroughDim`: window size 1, stride 1 and no padding along `dim`
    (dilations are not looked at), so operand and result correspond one to one."""
    padding = q.attr("padding")
    if padding is not None and tuple(padding[dim]) != (0, 0):
        return False
    return all(q.attr(key) is None or q.attr(key)[dim] == 1
               for key in ("window_dimensions", "window_strides"))


def reduce_window(q: RuleQuery) -> OpShardingRule:
    """Pointwise sized like the (first) result; a dim that is not a window pass-through is a
    permutation factor (blocked under conservative propagation). Init values map to `[]`."""
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(q.results[0]):
        if window_passthrough(q, d):
            b.add_factor_all(d, size)
        else:
            b.add_factor_all(d, size, FactorKind.PERMUTATION, q.attr("conservative"))
    return b.build()


def tiled_dims(q: RuleQuery, operand: tuple[int, ...], windows: tuple[int, ...]) -> list[int]:
    """The dims of a window op whose windows tile the operand dim: no padding or base
    dilation, each (dilated) window within its stride, operand size = windows x stride."""
    rank = len(operand)
    written = dict(q.attrs)

    def at(key: str, default: int) -> tuple[int, ...]:
        value = written.get(key)
        return tuple(value) if value is not None else (default,) * rank

    size, stride = at("window_dimensions", 1), at("window_strides", 1)
    base, dilation = at("base_dilations", 1), at("window_dilations", 1)
    padding = q.attr("padding")
    out = []
    for d in range(rank):
        if padding is not None and tuple(padding[d]) != (0, 0):
            continue
        span = (size[d] - 1) * dilation[d] + 1
        if base[d] == 1 and span <= stride[d] and operand[d] == windows[d] * stride[d] > windows[d]:
            out.append(d)
    return out


def tiled_reduce_window(q: RuleQuery) -> OpShardingRule:
    """`reduce_window` for lowering: a tiled dim is windows x within-stride factors (the second
    needs replication); other dims as in `reduce_window`."""
    n = len(q.results)
    ranks = [len(s) for s in q.operands]
    out = q.results[0]
    tiled = tiled_dims(q, q.operands[0], out)
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(out):
        if d in tiled:
            on_inputs = [d if i < n and ranks[i] else NULL for i in range(len(ranks))]
            b.add_factor(on_inputs, (d,) * n, size)
            b.add_factor(on_inputs, (NULL,) * n, q.operands[0][d] // size,
                         FactorKind.NEED_REPLICATION)
        elif window_passthrough(q, d):
            b.add_factor_all(d, size)
        else:
            b.add_factor_all(d, size, FactorKind.PERMUTATION)
    return b.build()


def tiled_select_and_scatter(q: RuleQuery) -> OpShardingRule:
    """`select_and_scatter` for lowering: a tiled dim is the windows factor on operand, source
    and result, then the within-stride factor (needs replication) on operand and result."""
    (out,) = q.results
    source = q.operands[1]
    tiled = tiled_dims(q, out, source)
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(out):
        if d in tiled:
            b.add_factor((d, d, NULL), (d,), source[d])
            b.add_factor((d, NULL, NULL), (d,), size // source[d], FactorKind.NEED_REPLICATION)
        elif window_passthrough(q, d):
            b.add_factor_all(d, size)
        else:
            b.add_factor((NULL, d, NULL), (NULL,), source[d], FactorKind.NEED_REPLICATION)
            b.add_factor((d, NULL, NULL), (d,), size, FactorKind.PERMUTATION)
    return b.build()


def dynamic_slice(q: RuleQuery) -> OpShardingRule:
    """Pointwise sized like the operand; sliced dims need replication and block propagation
    (the start index is only known at run time). Start indices map to `[]`."""
    return (
        RuleBuilder(q.operands, q.results)
        .add_pointwise_with_kind_for_mismatch(
            q.operands[0], q.results[0], FactorKind.NEED_REPLICATION, True
        )
        .build()
    )


def dynamic_update_slice(q: RuleQuery) -> OpShardingRule:
    """Operand and result share every dim; the update shares the dims it covers in full, and a
    dim it covers in part is its own factor, which needs replication unless every start index
    is a constant (Shardy then relies on the partitioner to place the update)."""
    constant = q.attr("constant_indices")
    operand, update = q.operands[0], q.operands[1]
    n = len(q.operands)
    b = RuleBuilder(q.operands, q.results)
    for d, (size, usize) in enumerate(zip(operand, update)):
        dims = [NULL] * n
        dims[0] = d
        if size == usize:
            dims[1] = d
            b.add_factor(dims, (d,), size)
        else:
            b.add_factor(dims, (d,), size)
            only_update = [NULL] * n
            only_update[1] = d
            kind = FactorKind.PASS_THROUGH if constant else FactorKind.NEED_REPLICATION
            b.add_factor(only_update, (NULL,), usize, kind)
    return b.build()


def select_and_scatter(q: RuleQuery) -> OpShardingRule:
    """Per result dim: a window pass-through dim is one factor on operand, source and result;
    otherwise the source dim needs replication and the operand/result dim is a permutation
    (both blocked under conservative propagation)."""
    (out,) = q.results
    source = q.operands[1]
    blocked = q.attr("conservative")
    b = RuleBuilder(q.operands, q.results)
    for d, size in enumerate(out):
        if window_passthrough(q, d):
            b.add_factor_all(d, size)
            continue
        b.add_factor((NULL, d, NULL), (NULL,), source[d], FactorKind.NEED_REPLICATION, blocked)
        b.add_factor((d, NULL, NULL), (d,), size, FactorKind.PERMUTATION, blocked)
    return b.build()
