"""`sdy-propagation-pipeline`: jaxlib's Shardy pipeline — import, propagation and export — so
that `shardc opt X.mlir -p sdy-propagation-pipeline` prints what Shardy prints.

    shardc opt model.mlir -p sdy-propagation-pipeline

It is `propagation-pipeline` (the constant copies placed where Shardy's splitter puts them) followed
by the export steps of Shardy's pipeline (`tests/data/stablehlo/generate.py: expanded_pipeline()`),
each a small function below: the constant merger, constraints to reshards, non-divisible and
sub-axis argument/result shardings, closing, explicit reshards around a disagreeing `concatenate`,
`sdy.constant`, and the function order of Shardy's call-graph export. On the JAX corpus
(`tests/data/stablehlo/`) the output is byte-identical to jaxlib 0.10.2's for all 31 cases
(tests/propagation/test_sdy_propagation_pipeline.py); several steps follow what Shardy was observed
to do there rather than all of its logic (see docs/interop.md).

The native `propagation-pipeline{close=true}` (what `shardc compile` runs) is unchanged.

`debug-sharding-origins` and `debug-propagation-edge-sharding` are Shardy's `PropagationOptions`
of the same names (jaxlib sets them from XLA's debug flags): applying constraints and propagating
record Shardy's debugging attributes (shardy_debug.py), each data-flow op carrying those of its
edges as `sdy-sink-data-flow-edges` leaves them. Shardy dumps the module with them after
propagation and removes them at the end of its export; shardc writes no dumps, so they stay in
the module it prints.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.builder import Builder
from shardc.ir.core import Function, Module, Operation
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.ops.manual import fill_all, manual_computations, sync_all
from shardc.ir.ops.manual import normalize as normalize_manual
from shardc.ir.types import DistributedTensorType
from shardc.passes.ingest.split_constants import _is_scalar_expansion, mark_sdy_constants
from shardc.passes.manager import Pass, PassContext, register_pass, run_passes
from shardc.passes.propagation.layouts import close, evenly_sharded, per_mapping
from shardc.passes.propagation.propagate import (
    PropagationOptions,
    export_call_sites,
    import_call_sites,
    run_propagation,
)
from shardc.passes.propagation.shardy_debug import ShardyDebugInfo
from shardc.passes.propagation.shardy_debug_saving import save as save_debug_info


def constraints_to_reshards(module: Module) -> None:
    """Shardy's `sdy-sharding-constraint-to-reshard`: unconditionally. The constraint JAX puts
    on the reducer of a partially manual `all_reduce` (kept as text on the imported
    `spmd.all_reduce`) first gives the reducer's scalar its sharding, as Shardy's
    `sdy-apply-sharding-constraints` does, then becomes a reshard too."""
    builder = Builder(module)
    for func in module.functions.values():
        for op in list(func.body):
            if op.name == "spmd.all_reduce":
                _reducer_constraint_to_reshard(op)
            if op.name != "sharding_constraint":
                continue
            with builder.insertion_point(before=op):
                new = builder.reshard(op.operand(0), op.result.mapping)
            new.name_hint = op.result.name_hint
            for k, v in op.attributes.items():
                new.defining_op.attributes.setdefault(k, v)  # type: ignore[union-attr]
            op.result.replace_all_uses_with(new)
            op.erase()


def _reducer_constraint_to_reshard(op: Operation) -> None:
    constraint = op.attributes.get("reducer_constraint")
    prefix = "sdy.sharding_constraint "
    if constraint is None or not constraint.text.startswith(prefix):
        return
    sharding = constraint.text[len(prefix):]
    if not sharding.startswith("<") or not sharding.endswith(">") or "?" in sharding:
        return  # attributes on the constraint, or an open sharding: left as imported
    if "reducer_attrs" not in op.attributes:
        op.attributes["reducer_attrs"] = OpaqueAttr(
            "{sdy.sharding = #sdy.sharding_per_value<[" + sharding + "]>}"
        )
    op.attributes["reducer_constraint"] = OpaqueAttr("sdy.reshard " + sharding)


def _without_sub_axes(m: NamedMapping) -> NamedMapping:
    """An open dim keeps its major axes up to the first sub-axis; a closed dim keeps all."""
    dims = []
    for d in m.dims:
        axes = []
        for a in d.axes:
            if a.is_sub_axis and not d.is_closed:
                break
            axes.append(a)
        same = len(axes) == len(d.axes)
        dims.append(d if same else DimSharding(tuple(axes), d.is_closed, d.priority))
    return m.with_dims(dims)


def remove_io_sub_axes(module: Module) -> None:
    """Shardy's `sdy-remove-sub-axes-in-input-output-shardings`, on the main function only (as
    jaxlib 0.10.2 runs it: Shardy 3eb1b54d; private functions keep their sub-axes)."""
    without = per_mapping(_without_sub_axes)
    func = module.main
    for a in func.args:
        if a.mapping is not None:
            a.set_mapping(without(a.mapping))
    _map_results(func, without)


def divisible_io_shardings(module: Module) -> None:
    """Shardy's `sdy-update-non-divisible-input-output-shardings`: a function argument/result
    dim keeps only the axes that split it evenly."""
    done: dict = {}
    for func in module.functions.values():
        for a in func.args:
            m = a.mapping
            if m is not None:
                key = (m, a.type.shape)
                new = done.get(key)
                if new is None:
                    new = done[key] = evenly_sharded(m, a.type.shape)
                a.set_mapping(new)
        for i, t in enumerate(func.result_types):
            if isinstance(t, DistributedTensorType) and t.mapping is not None:
                func.result_types[i] = DistributedTensorType(
                    t.shape, t.dtype, evenly_sharded(t.mapping, t.shape)
                )


def _map_results(func: Function, fn) -> None:
    for i, t in enumerate(func.result_types):
        if isinstance(t, DistributedTensorType) and t.mapping is not None:
            new = fn(t.mapping)
            if new is not t.mapping:
                func.result_types[i] = DistributedTensorType(t.shape, t.dtype, new)


def _close(m: NamedMapping) -> NamedMapping:
    m = close(m)
    return dataclasses.replace(m, replicated=()) if m.replicated else m


def close_existing(module: Module) -> None:
    """Shardy's `sdy-close-shardings`: close every sharding there is (and drop its replicated
    axes); add none."""
    closed = per_mapping(_close)
    for op in manual_computations(module):
        for key in ("in_shardings", "out_shardings"):
            op.attributes[key] = tuple(closed(m) for m in op.attributes[key])
    fill_all(module)
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(closed(a.mapping))
        for op in func.body:
            results = op.results
            if len(results) == 1:  # the common case, without the search for a mesh
                r = results[0]
                if r.type.mapping is not None:
                    r.set_mapping(closed(r.type.mapping))
                continue
            mesh = next((r.mapping.mesh for r in results if r.mapping is not None), None)
            for r in results:
                if r.mapping is not None:
                    r.set_mapping(closed(r.mapping))
                elif mesh is not None:
                    # an op's shardings are one attribute: a result without one is open ({?})
                    # there, and closing makes it replicated
                    r.set_mapping(NamedMapping.fully_replicated(mesh, r.type.rank))
        _map_results(func, closed)
    sync_all(module)


def merge_constants(func: Function) -> None:
    """Shardy's `sdy-constant-or-scalar-merger`: identical constants, and identical broadcasts
    of the same scalar, with the same shardings become one (the first). Nothing else merges:
    copies of an iota, or of an op computed from constants, stay apart, as in jaxlib."""
    seen: dict[tuple, Operation] = {}
    # id(attribute value) -> (its repr, the value, kept alive so that its id stays its own):
    # the copies of a constant share their attribute values, and a dense value's repr is long
    texts: dict[int, tuple[str, object]] = {}
    for op in list(func.body):
        if op.name != "constant" and not _is_scalar_expansion(op):
            continue
        attrs = []
        for k, value in op.attributes.items():
            text = texts.get(id(value))
            if text is None:
                text = texts[id(value)] = (repr(value), value)
            attrs.append((k, text[0]))
        attrs.sort()  # keys are distinct: only they are compared
        key = (
            op.name,
            tuple([id(v) for v in op.operands]),
            tuple(attrs),
            tuple([(r.type.shape, r.type.dtype, r.type.mapping) for r in op.results]),
        )
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.erase()


def restore_order(func: Function, order: dict[int, int], sources: dict[int, Operation]) -> None:
    """Put every op back at its place in the imported program, a constant copy that survived the
    merge at the place of the op it copies (Shardy's splitter keeps the original for one user)."""
    ops = list(func.body)
    keys, last, in_order = [], -1, True
    for op in ops:
        key = order.get(id(sources.get(id(op), op)))
        if key is not None:
            in_order = in_order and key >= last
            last = key
        keys.append(last)
    if in_order:
        return  # the stable sort would change nothing
    ranked = [op for _, _, op in sorted(zip(keys, range(len(ops)), ops), key=lambda t: t[:2])]
    if ranked == ops:
        return
    for op in ops:
        func.body._unlink(op)
        op.parent = op.prev = op.next = None
    for op in ranked:
        func.body.append(op)


def _concat_target(op: Operation) -> NamedMapping | None:
    """The sharding Shardy's non-full explicit-reshard step gives a concatenate whose operands do
    not agree with its result: the result's sharding with the concatenated dim replicated, its
    axes (the result's, else the first operand's that has some) appended to the first other dim
    they divide evenly (dropped if none). Found by running jaxlib's pass on small programs."""
    target = op.result.mapping
    dim = op.attributes["dimension"]
    mesh = target.mesh
    moved: tuple = ()
    for m in [target, *(v.mapping for v in op.operands)]:
        if m is not None and m.dims[dim].axes:
            moved = m.dims[dim].axes
            break
    size = math.prod(a.axis_size(mesh) for a in moved)
    dims = [DimSharding(d.axes, True) for d in target.dims]
    dims[dim] = DimSharding((), True)
    for i, d in enumerate(dims):
        if i == dim or not moved:
            continue
        have = math.prod(a.axis_size(mesh) for a in d.axes)
        if op.result.type.shape[i] % (have * size) == 0:
            dims[i] = DimSharding(d.axes + tuple(moved), True)
            break
    return target.with_dims(dims)


def concatenate_reshards(module: Module) -> None:
    """Shardy's `sdy-insert-explicit-reshards{enable-full-version=false}` as it acts on the
    corpus: a `concatenate` whose operands are not all sharded as its result computes under
    `_concat_target`; operands are resharded to it and the result back to what propagation
    decided. (The full version is `insert-reshards`.)"""
    builder = Builder(module)
    for func in list(module.functions.values()):
        for op in list(func.body):
            if op.name != "concatenate" or op.result.mapping is None:
                continue
            target = op.result.mapping
            if all(v.mapping is not None and v.mapping.dims == target.dims for v in op.operands):
                continue
            new = _concat_target(op)
            for i, v in enumerate(op.operands):
                if v.mapping is None or v.mapping.dims != new.dims:
                    with builder.insertion_point(before=op):
                        op.set_operand(i, builder.reshard(v, new))
            if new.dims != target.dims:
                users = list(op.result.uses)
                op.result.set_mapping(new)
                with builder.insertion_point(after=op):
                    back = builder.reshard(op.result, target)
                for u in users:
                    u.op.set_operand(u.index, back)


def remove_sharding_groups(module: Module) -> None:
    """Shardy's `sdy-remove-sharding-groups`: groups only matter to propagation."""
    for func in module.functions.values():
        for op in list(func.body):
            if op.name == "sharding_group":
                op.erase()


@register_pass("sdy-propagation-pipeline")
@dataclass(frozen=True)
class SdyPropagationPipeline(Pass):
    """jaxlib's `sdy-propagation-pipeline`: `propagation-pipeline` then Shardy's export steps."""

    strategy: str = "aggressive"
    debug_sharding_origins: bool = False
    debug_propagation_edge_sharding: bool = False

    def _debug(self, module: Module) -> ShardyDebugInfo | None:
        if not (self.debug_sharding_origins or self.debug_propagation_edge_sharding):
            return None
        return ShardyDebugInfo(
            module, self.debug_sharding_origins, self.debug_propagation_edge_sharding
        )

    def run(self, module: Module, ctx: PassContext) -> None:
        from shardc.passes.ingest.lift_inlined_meshes import (
            lift_inlined_meshes,
            stablehlo_mesh_attrs,
        )
        from shardc.passes.ingest.pre_order_funcs import pre_order_funcs
        from shardc.passes.ingest.propagate_sharding_from_func_to_call import (
            propagate_sharding_from_func_to_call,
        )
        from shardc.passes.ingest.remove_size_one_axes import remove_size_one_axes
        from shardc.passes.ingest.sink_data_flow_edges import sink_data_flow_edges
        from shardc.passes.ingest.split_constants import split_module
        from shardc.passes.propagation.apply_sharding_constraints import apply_constraints

        # propagation-pipeline, with the constant copies where Shardy's splitter puts them; as
        # in jaxlib, the splitter runs before the call graph is flattened and imported (a call
        # of a constant function is a constant expression, copied per user)
        lift_inlined_meshes(module)
        sink_data_flow_edges(module)
        remove_size_one_axes(module)
        normalize_manual(module)
        propagate_sharding_from_func_to_call(module)
        order: dict[int, int] = {}
        sources: dict[int, Operation] = {}
        for func in module.functions.values():
            order.update((id(op), i) for i, op in enumerate(func.body))
        imported = [op for func in module.functions.values() for op in func.body]
        split_module(module, at_original=True, sources=sources)
        # The ops `order` and `sources` name by id (the originals and every copy) are kept alive
        # until the order is restored: symbol-dce and the call-graph import drop functions, and
        # a freed op's id may come back as the id of an op made later.
        imported += [op for func in module.functions.values() for op in func.body]
        run_passes("symbol-dce", module, ctx)  # as Shardy's pipeline, right after its splitter
        calls = import_call_sites(module)
        debug = self._debug(module)
        apply_constraints(module, debug)
        if debug is not None:
            save_debug_info(debug)
        pre_order_funcs(module)
        debug = self._debug(module)
        run_propagation(module, ctx, PropagationOptions(self.strategy), debug)
        if debug is not None:
            save_debug_info(debug)
            ctx.data["shardy_debug"] = debug
        for func in module.functions.values():
            merge_constants(func)
            restore_order(func, order, sources)
        del imported
        if calls:
            export_call_sites(module)
        constraints_to_reshards(module)
        divisible_io_shardings(module)
        remove_io_sub_axes(module)
        close_existing(module)
        concatenate_reshards(module)
        mark_sdy_constants(module)
        remove_sharding_groups(module)
        stablehlo_mesh_attrs(module)  # the rest of sdy-lift-inlined-meshes, as jaxlib prints it
