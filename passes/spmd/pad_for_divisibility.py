"""`pad-for-divisibility`: give every value whose sharding does not divide its dims a shape that
it divides, padding at the end of the dims (Shardy's `sdy-pad-for-divisibility`).

    %0 = sdy.all_slice [{}, {"y"}] %arg0 out_sharding=<@m, [{}, {"y"}]> : tensor<4x7xf32>
  becomes
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [0, 0], high = [0, 1], interior = [0, 0]
    %1 = sdy.all_slice [{}, {"y"}] %0 out_sharding=<@m, [{}, {"y"}]> : tensor<4x8xf32>

Ops are rewritten in program order, each reading the padded versions of its operands:
- an op that reads or writes a non-divisible value (StableHLO ops, sdy.all_reduce and the
  unreduced conversions) is rebuilt on the padded operands with padded result types;
- `all_slice`, `reduce_scatter` and `all_to_all` pad their operand to what their out sharding
  divides; `all_gather` and `all_to_all` slice the dims they gather back to the original size;
- `dot_general` makes the padding of its contracting dims zero (a `select` on an iota mask)
  unless the value is known to be padded with zeros; `slice` and `pad` grow their limits and
  high padding to the padded size.
The padding a value is known to hold (zero or one, from the `pad` that made it) follows it
through collectives, so a later contraction needs no mask. Function arguments and results must
already be divisible (an error otherwise), so padded values never leave a function.

NOTE: only a function's top-level ops are rewritten; Shardy's conversion also visits ops inside
regions (a `while` body, a manual computation), which shardc leaves as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import DenseElements, Keyword
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.registry import infer_result_types, verify_operation
from shardc.ir.ops.sharding import all_to_all_params
from shardc.ir.types import DistributedTensorType, TensorType, scalar_of
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

ZERO, ONE = 0, 1  # the padding kinds a value can be known to hold

# Ops that are not StableHLO's: legal whatever their types, unless listed below.
_NOT_STABLEHLO = frozenset({
    "return", "call", "manual_computation", "named_computation", "data_flow_edge",
    "sharding_constraint", "reshard", "sharding_group", "propagation_barrier",
    "collective_permute", "all_gather", "all_slice", "all_to_all", "reduce_scatter",
    "all_reduce", "sharded_to_unreduced", "replicated_to_unreduced",
})
# sdy ops rebuilt like StableHLO ops: padded operands in, padded result types out.
_GENERIC_SDY = frozenset({"all_reduce", "sharded_to_unreduced", "replicated_to_unreduced"})


def padded_type(t: TensorType, mapping: NamedMapping | None = None) -> TensorType:
    """`t` with every dim rounded up to a multiple of its shard count under `mapping` (default:
    `t`'s own sharding); `t` itself when every dim divides."""
    mapping = t.mapping if mapping is None else mapping
    if mapping is None or mapping.rank != t.rank:
        return t
    shape = tuple(n if k <= 1 or n % k == 0 else n + k - n % k
                  for n, k in zip(t.shape, mapping.shard_counts()))
    if shape == t.shape:
        return t
    return DistributedTensorType(shape, t.dtype, t.mapping)


def _divisible(t: TensorType, mapping: NamedMapping | None = None) -> bool:
    return padded_type(t, mapping).shape == t.shape


@dataclass
class _FunctionPadder:
    """One function's rewrite: `original` maps a padded value to the type it replaced, `kind`
    the padding a value is known to hold."""

    func: Function

    def __post_init__(self) -> None:
        self.original: dict[int, TensorType] = {}
        self.kind: dict[int, int] = {}
        self.anchor: Operation | None = None

    # ----- building ------------------------------------------------------------------------------

    def emit(self, name: str, operands: list[Value], attrs: dict, t: TensorType) -> Value:
        assert self.anchor is not None and self.anchor.parent is not None
        op = Operation.at(self.anchor, name, operands, [t], attrs)
        self.anchor.parent.insert_before(self.anchor, op)
        return op.result

    def constant(self, value: int, dtype: str) -> Value:
        dense = DenseElements((scalar_of(value, dtype),))
        return self.emit("constant", [], {"value": dense}, DistributedTensorType((), dtype))

    def orig_type(self, v: Value) -> TensorType:
        return self.original.get(id(v), v.type)

    def pad_to(self, v: Value, target: TensorType, fill: int, known: int | None) -> Value:
        """`stablehlo.pad` of `v` with `fill` at the end of every dim up to `target`'s shape."""
        zero = self.constant(fill, v.type.dtype)
        rank = v.type.rank
        attrs = {"edge_padding_low": (0,) * rank,
                 "edge_padding_high": tuple(a - b for a, b in zip(target.shape, v.type.shape)),
                 "interior_padding": (0,) * rank}
        out = self.emit("pad", [v, zero], attrs,
                        DistributedTensorType(target.shape, v.type.dtype, v.type.mapping))
        if known is not None:
            self.kind[id(out)] = known
        return out

    def mask(self, v: Value, orig: TensorType, fill: Value,
             dims: tuple[int, ...] | None = None) -> Value:
        """`v` with its padding (indices past `orig`'s sizes) replaced by the scalar `fill`, on
        `dims` (default: every padded dim): `select(iota < n and ..., v, broadcast(fill))`."""
        shape, mapping = v.type.shape, v.type.mapping
        valid: Value | None = None
        for d, n in enumerate(orig.shape):
            if n == shape[d] or (dims is not None and d not in dims):
                continue
            i32 = DistributedTensorType(shape, "i32", mapping)
            iota = self.emit("iota", [], {"iota_dimension": d}, i32)
            limit = self.emit("constant", [], {"value": DenseElements((n,))},
                              DistributedTensorType((), "i32"))
            limits = self.emit("broadcast_in_dim", [limit], {"broadcast_dimensions": ()}, i32)
            ok = self.emit("compare", [iota, limits], {"comparison_direction": Keyword("LT")},
                           DistributedTensorType(shape, "i1", mapping))
            valid = ok if valid is None else self.emit("and", [valid, ok], {}, ok.type)
        if valid is None:
            return v
        fills = self.emit("broadcast_in_dim", [fill], {"broadcast_dimensions": ()}, v.type)
        return self.emit("select", [valid, v, fills], {}, v.type)

    def ensure_kind(self, v: Value, orig: TensorType, kind: int,
                    dims: tuple[int, ...] | None = None) -> Value:
        """`v` known to hold `kind` in its padding (on `dims`): masked when it is not known to."""
        if v.type.shape == orig.shape or self.kind.get(id(v)) == kind:
            return v
        if all(n == v.type.shape[d] or (dims is not None and d not in dims)
               for d, n in enumerate(orig.shape)):
            return v  # nothing to mask (Shardy then leaves an unused constant behind)
        out = self.mask(v, orig, self.constant(kind, v.type.dtype), dims)
        if dims is None:
            self.kind[id(out)] = kind
        return out

    def trim(self, v: Value, orig: TensorType, dims: tuple[int, ...], kind: int | None) -> Value:
        """`v` sliced back to `orig`'s sizes on `dims`."""
        limits = tuple(o if d in dims and n > o else n
                       for d, (o, n) in enumerate(zip(orig.shape, v.type.shape)))
        if limits == v.type.shape:
            return v
        rank = v.type.rank
        attrs = {"start_indices": (0,) * rank, "limit_indices": limits, "strides": (1,) * rank}
        out = self.emit("slice", [v], attrs,
                        DistributedTensorType(limits, v.type.dtype, v.type.mapping))
        if kind is not None:
            self.kind[id(out)] = kind
        return out

    # ----- the rewrite ---------------------------------------------------------------------------

    def run(self) -> None:
        self.check_boundary()
        for op in list(self.func.body):
            if self.legal(op):
                self.check_no_padded_operand(op)
                continue
            self.anchor = op
            new_results = self.rewrite(op)
            for old, new in zip(op.results, new_results, strict=True):
                if new is not old:
                    new.name_hint = old.name_hint
                    if new.type.shape != old.type.shape:
                        self.original[id(new)] = old.type
                    old.replace_all_uses_with(new)
            op.erase()

    def check_boundary(self) -> None:
        for i, arg in enumerate(self.func.args):
            if not _divisible(arg.type):
                raise PassError(f"'func.func' op argument #{i} has a non-divisible sharding. "
                                "Shardy expects function IO to be divisible.", self.func.loc)
        for i, t in enumerate(self.func.result_types):
            if not _divisible(t):
                raise PassError(f"'func.func' op result #{i} has a non-divisible sharding. "
                                "Shardy expects function IO to be divisible.", self.func.loc)

    def check_no_padded_operand(self, op: Operation) -> None:
        for v in op.operands:
            if id(v) in self.original:
                raise PassError(
                    f"'{op.name}' op reads {v.label}, padded from {self.original[id(v)]} to "
                    f"{v.type.tensor}, but is not one the padding rewrites (Shardy would leave "
                    "an unrealized_conversion_cast here)", op.loc)

    def legal(self, op: Operation) -> bool:
        """Shardy's conversion target: which ops stay as they are."""
        def values_legal(values) -> bool:
            return all(_divisible(self.orig_type(v), v.mapping) for v in values)

        name = op.name
        if name in ("all_slice", "reduce_scatter"):
            return _divisible(self.orig_type(op.operand(0)), op.result.mapping)
        if name == "all_gather":
            return values_legal(op.operands)
        if name == "all_to_all" or name in _GENERIC_SDY or name not in _NOT_STABLEHLO:
            return values_legal(op.operands) and values_legal(op.results)
        return True

    def rewrite(self, op: Operation) -> list[Value]:
        name = op.name
        if name in ("all_slice", "reduce_scatter"):
            return [self.collective(op)]
        if name == "all_to_all":
            return [self.all_to_all(op)]
        if name == "all_gather":
            return [self.all_gather(op)]
        if name == "dot_general":
            return self.dot_general(op)
        if name == "slice":
            return [self.slice(op)]
        if name == "pad":
            return [self.pad(op)]
        if name == "convolution":
            return [self.convolution(op)]
        return self.generic(op, list(op.operands))

    def generic(self, op: Operation, operands: list[Value]) -> list[Value]:
        """`op` on `operands`: each result type is the larger, per dim, of what the operands
        imply and its padded type."""
        try:
            inferred = infer_result_types(op.name, [v.type for v in operands], op.attributes,
                                          [r.type for r in op.results])
        except ShardcError:
            inferred = None
        types = []
        for i, r in enumerate(op.results):
            p = padded_type(r.type)
            if inferred is not None and inferred[i].rank == p.rank:
                p = DistributedTensorType(
                    tuple(max(a, b) for a, b in zip(inferred[i].shape, p.shape)),
                    p.dtype, r.type.mapping)
            types.append(p)
        return self.rebuild(op, operands, types)

    def rebuild(self, op: Operation, operands: list[Value], types: list[TensorType],
                attrs: dict | None = None) -> list[Value]:
        new = Operation.at(op, op.name, operands, types,
                           dict(op.attributes) if attrs is None else attrs)
        assert op.parent is not None
        op.parent.insert_before(op, new)
        verify_operation(new)
        return list(new.results)

    def collective(self, op: Operation) -> Value:
        """all_slice / reduce_scatter (and all_to_all's first half): the operand padded to what
        the out sharding divides, the padding kind carried to the result."""
        v = op.operand(0)
        target = padded_type(v.type, op.result.mapping)
        kind = self.kind.get(id(v))
        padded_before = v.type.shape != self.orig_type(v).shape
        if target.shape != v.type.shape:
            fill = kind if padded_before and kind is not None else ZERO
            known = ZERO if not padded_before else kind
            v = self.pad_to(v, target, fill, known)
            kind = known
        t = DistributedTensorType(target.shape, v.type.dtype, op.result.mapping)
        out = self.rebuild(op, [v], [t])[0]
        if kind is not None:
            self.kind[id(out)] = kind
        return out

    def all_to_all(self, op: Operation) -> Value:
        kind = self.kind.get(id(op.operand(0)))
        orig = self.orig_type(op.operand(0))
        out = self.collective(op)
        return self.trim(out, orig, tuple(s for _, s, _ in all_to_all_params(op)), kind)

    def all_gather(self, op: Operation) -> Value:
        v = op.operand(0)
        t = padded_type(op.result.type)
        shape = tuple(max(a, b) for a, b in zip(v.type.shape, t.shape))
        out = self.rebuild(op, [v], [DistributedTensorType(shape, t.dtype, t.mapping)])[0]
        kind = self.kind.get(id(v))
        if kind is not None:
            self.kind[id(out)] = kind
        gathered = tuple(d for d, axes in enumerate(op.attr("gathering_axes")) if axes)
        return self.trim(out, op.result.type, gathered, kind)

    def dot_general(self, op: Operation) -> list[Value]:
        lhs, rhs = op.operands
        lhs = self.ensure_kind(lhs, self.orig_type(lhs), ZERO,
                               tuple(op.attr("lhs_contracting_dims", ())))
        rhs = self.ensure_kind(rhs, self.orig_type(rhs), ZERO,
                               tuple(op.attr("rhs_contracting_dims", ())))
        return self.generic(op, [lhs, rhs])

    def convolution(self, op: Operation) -> Value:
        """Zero the padding of the feature and spatial dims the window reads, convolve, and slice
        the output's spatial dims back to their padded size."""
        lhs, rhs = op.operands
        a = op.attr
        lhs = self.ensure_kind(lhs, self.orig_type(lhs), ZERO,
                               (a("input_feature_dimension"), *a("input_spatial_dimensions")))
        rhs = self.ensure_kind(rhs, self.orig_type(rhs), ZERO, (
            a("kernel_input_feature_dimension"), *a("kernel_spatial_dimensions")))
        inferred = infer_result_types(op.name, [lhs.type, rhs.type], op.attributes)[0]
        target = padded_type(op.result.type)
        spatial = tuple(a("output_spatial_dimensions"))
        for d in spatial:
            if inferred.shape[d] < target.shape[d]:
                raise PassError(
                    "'convolution' op: inferred convolution output spatial size is smaller than "
                    "the target padded size. Spatial sharding must be resolved by "
                    "resolve-permutation-factors to be divisible or replicated.", op.loc)
        t = DistributedTensorType(inferred.shape, inferred.dtype, op.result.mapping)
        out = self.rebuild(op, [lhs, rhs], [t])[0]
        return self.trim(out, target, spatial, ZERO)

    def slice(self, op: Operation) -> Value:
        t = padded_type(op.result.type)
        if t.shape == op.result.type.shape:
            return self.generic(op, list(op.operands))[0]
        v = op.operand(0)
        start = op.attr("start_indices")
        limits = tuple(s + n for s, n in zip(start, t.shape))
        for d, (new, old) in enumerate(zip(limits, op.attr("limit_indices"))):
            if new != old and not _communication_free_slice_dim(op, d, self.orig_type(v)):
                raise PassError(f"'slice' op: dim {d} cannot grow to its padded size without "
                                "communication", op.loc)
        return self.rebuild(op, [v], [t], {**op.attributes, "limit_indices": limits})[0]

    def pad(self, op: Operation) -> Value:
        v, value = op.operands
        t = padded_type(op.result.type)
        low, high = op.attr("edge_padding_low"), op.attr("edge_padding_high")
        interior = op.attr("interior_padding") or (0,) * t.rank
        new_high = tuple(r - n - lo - max(0, n - 1) * i for r, n, lo, i
                         in zip(t.shape, v.type.shape, low, interior))
        if any(a < b for a, b in zip(new_high, high)):
            # the operand's own padding now stands where high padding was: it must hold `value`
            v = self.mask(v, self.orig_type(op.operand(0)), value)
        attrs = {**op.attributes, "edge_padding_high": new_high,
                 "interior_padding": tuple(interior)}
        return self.rebuild(op, [v, value], [t], attrs)[0]


def _communication_free_slice_dim(op: Operation, d: int, operand: TensorType) -> bool:
    """Shardy's `isCommunicationFreeSliceDim`: slicing dim d keeps every shard where it is."""
    mapping = op.operand(0).mapping
    k = mapping.num_shards(d) if mapping is not None and mapping.rank == operand.rank else 1
    if k <= 1:
        return True
    strides = op.attr("strides") or (1,) * operand.rank
    if op.attr("start_indices")[d] != 0 or strides[d] != 1:
        return False
    return -(-operand.shape[d] // k) == -(-op.result.type.shape[d] // k)


@register_pass("pad-for-divisibility")
@dataclass(frozen=True)
class PadForDivisibility(Pass):
    """Pad every non-divisible value so its sharding divides it (sdy-pad-for-divisibility)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            _FunctionPadder(func).run()


register_alias("sdy-pad-for-divisibility", "pad-for-divisibility")
