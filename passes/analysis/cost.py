"""The cost report: what every collective moves, and the peak live memory per device.

    collective_report(module) -> {
        "collectives": [{"kind", "axes", "global_shape", "local_shape", "dtype",
                         "bytes_per_device", "ring_bytes_per_device", "group_size", "groups",
                         "value", "function", "steps"}, ...],
        "total_comm_bytes", "total_ring_bytes", "by_kind", "by_axis",
        "peak_memory_bytes_per_device",
    }
    issued_report(spmd_module) -> {"count", "bytes", "ring_bytes", "combined", "by_kind",
                                   "collectives": [...]}      # what the per-device program runs

The keys are CLI.md's (`shardc compile --report json` adds mesh, values, warnings and timings);
the cost model and every field are documented in docs/cost.md. Per-collective numbers come from
the planner's own step costs (`shardc.passes.analysis.collectives.steps`), so a plan's cost
and the report agree.
Pure: reads the module, changes nothing.
"""

from __future__ import annotations

import math
from typing import Any

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import GLOBAL_COLLECTIVES, attr
from shardc.ir.ops.control import region_functions
from shardc.ir.ops.manual import manual_computations
from shardc.ir.ops.spmd import group_size
from shardc.ir.printer import Namer
from shardc.ir.types import element_bytes, shard_shape
from shardc.passes.analysis.collectives import CollectivePermute
from shardc.passes.analysis.collectives.op_steps import issued_steps, op_steps, steps_input
from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    ReduceScatter,
    Step,
)

COLLECTIVES = frozenset(GLOBAL_COLLECTIVES)


def local_bytes(v: Value) -> int:
    """Bytes one device holds for `v`: its padded local shard (ceil(n/k) per split dim)."""
    t = v.type
    return math.prod(shard_shape(t.shape, t.mapping)) * element_bytes(t.dtype)


def _permuted_axes(op: Operation) -> list[str]:
    """The mesh axes whose place in the layout a collective_permute changes."""
    src, dst = op.operand(0).mapping, op.result.mapping
    assert src is not None and dst is not None
    names: list[str] = []
    for a, b in zip(src.dims, dst.dims, strict=True):
        if a.axes != b.axes:
            for ref in (*a.axes, *b.axes):
                if ref.name not in names:
                    names.append(ref.name)
    order = src.mesh.axis_names
    return sorted(names, key=order.index)


def collective_entry(op: Operation, name: str) -> dict[str, Any]:
    """One collective's report entry (CLI.md's fields, plus `function`). An all_to_all with
    several parameters is one entry whose bytes add up its moves; sharded/replicated_to_unreduced
    move no data (zero bytes)."""
    v = op.operand(0)
    steps = op_steps(op)
    shape, dtype, mapping = v.type.shape, v.type.dtype, steps_input(op)
    if not steps:
        entry = {
            "kind": op.name, "axes": [], "global_shape": list(shape),
            "local_shape": list(shard_shape(shape, mapping)), "dtype": dtype,
            "bytes_per_device": 0, "ring_bytes_per_device": 0, "group_size": 1, "groups": [],
        }
    elif len(steps) > 1:
        entry = steps[0].report_entry(shape, dtype, mapping)
        entry["bytes_per_device"] = entry["ring_bytes_per_device"] = 0
        entry["axes"] = []
        for step in steps:
            part = step.report_entry(shape, dtype, mapping)
            for key in ("bytes_per_device", "ring_bytes_per_device", "axes"):
                entry[key] += part[key]
            mapping = step.apply(mapping)
    elif not isinstance((step := steps[0]), CollectivePermute):
        entry = step.report_entry(shape, dtype, mapping)
    else:
        # NOTE: `CollectivePermute.report_entry` asks its base for groups, which a permute does
        # not have; its fields are assembled here, with (source, target) pairs as its groups.
        entry = {
            "kind": step.kind,
            "axes": _permuted_axes(op),
            "global_shape": list(shape),
            "local_shape": list(shard_shape(shape, mapping)),
            "dtype": dtype,
            "bytes_per_device": step.bytes_per_device(shape, dtype, mapping),
            "ring_bytes_per_device": step.ring_bytes(shape, dtype, mapping),
            "group_size": 2,
            "groups": [list(p) for p in step.pairs(mapping)],
        }
    entry["steps"] = _issued(steps, shape, dtype, steps_input(op))
    entry["value"] = name
    return entry


def _issued(steps: tuple[Step, ...], shape, dtype: str, mapping: NamedMapping) -> list[dict]:
    """What a backend issues for `steps` (from `mapping`): one collective per dim of a step over
    several dims (`issued_steps`), each with its own kind, axes, local input shape and bytes."""
    out: list[dict[str, Any]] = []
    for step in steps:
        for one in issued_steps(step):
            if isinstance(one, CollectivePermute):
                entry = {"kind": one.kind, "axes": [], "local_shape":
                         list(shard_shape(shape, mapping)),
                         "bytes_per_device": one.bytes_per_device(shape, dtype, mapping),
                         "ring_bytes_per_device": one.ring_bytes(shape, dtype, mapping),
                         "group_size": 2}
            else:
                full = one.report_entry(shape, dtype, mapping)
                entry = {k: full[k] for k in ("kind", "axes", "local_shape", "bytes_per_device",
                                              "ring_bytes_per_device", "group_size")}
            out.append(entry)
            mapping = one.apply(mapping)
    return out


def _per_device_step(op: Operation) -> tuple[Step, tuple[int, ...], NamedMapping] | None:
    """A per-device collective of a manual_computation body as the global collective it is over
    its group: (step, shape, sharding before), the body's block seen as the group's tensor."""
    if op.num_operands != 1 or "axes" not in op.attributes:
        return None  # spmd.axis_index, spmd.collective_permute
    v, r = op.operand(0), op.result
    mesh = (v.mapping or r.mapping).mesh if (v.mapping or r.mapping) else None
    if mesh is None:
        return None
    before = v.mapping or NamedMapping.fully_replicated(mesh, v.type.rank)
    after = r.mapping or NamedMapping.fully_replicated(mesh, r.type.rank)
    axes = attr(op, "axes")
    rank = v.type.rank

    def on(d: int) -> tuple[tuple, ...]:
        return tuple(axes if i == d else () for i in range(rank))

    def grown(m: NamedMapping, d: int) -> NamedMapping:
        return m.with_dim(d, m.dims[d].with_axes(m.dims[d].axes + tuple(axes)))

    name, shape = op.name, v.type.shape
    if name == "spmd.all_reduce" and attr(op, "kind").word == "add":
        return AllReduce(axes), shape, before.replace(unreduced=tuple(axes))
    if name == "spmd.reduce_scatter":
        return ReduceScatter(on(attr(op, "dim"))), shape, before.replace(unreduced=tuple(axes))
    if name == "spmd.all_slice":
        return AllSlice(on(attr(op, "dim"))), shape, before
    if name == "spmd.all_gather":
        d = attr(op, "dim")
        return AllGather(on(d)), r.type.shape, grown(after, d)
    if name == "spmd.all_to_all":
        s, c = attr(op, "split_dim"), attr(op, "concat_dim")
        group = r.type.shape[c] // v.type.shape[c]
        full = tuple(n * group if i == c else n for i, n in enumerate(shape))
        return AllToAll(axes, c, s), full, grown(before, c)
    return None  # max/min/product all_reduce, collective_permute: not in the cost model yet


def _axis_names(entry: dict[str, Any]) -> list[str]:
    """Mesh axis names of an entry's axes (a sub-axis `x:(1)2` counts for `x`)."""
    names: list[str] = []
    for a in entry["axes"]:
        name = a.split(":", 1)[0]
        if name not in names:
            names.append(name)
    return names


def collective_report(module: Module) -> dict[str, Any]:
    """CLI.md's collective and memory keys for `module` (see the module docstring)."""
    collectives: list[dict[str, Any]] = []
    bodies = {attr(op, "body").name for op in manual_computations(module)}
    for func in module.functions.values():
        namer = Namer(func)
        for op in func.body:
            if op.name in COLLECTIVES:
                entry = collective_entry(op, namer(op.result))
            elif func.name in bodies and op.name.startswith("spmd."):
                found = _per_device_step(op)
                if found is None:
                    continue
                step, shape, before = found
                entry = step.report_entry(shape, op.result.type.dtype, before)
                entry["steps"] = _issued((step,), shape, op.result.type.dtype, before)
                entry["value"] = namer(op.result)
            else:
                continue
            entry["function"] = func.name
            collectives.append(entry)
    by_kind: dict[str, dict[str, int]] = {}
    by_axis: dict[str, int] = {}
    for e in collectives:
        kind = by_kind.setdefault(e["kind"], {"count": 0, "bytes": 0})
        kind["count"] += 1
        kind["bytes"] += e["bytes_per_device"]
        for name in _axis_names(e):
            by_axis[name] = by_axis.get(name, 0) + e["bytes_per_device"]
    main = _entry_function(module)
    return {
        "collectives": collectives,
        "total_comm_bytes": sum(e["bytes_per_device"] for e in collectives),
        "total_ring_bytes": sum(e["ring_bytes_per_device"] for e in collectives),
        "by_kind": by_kind,
        "by_axis": by_axis,
        "peak_memory_bytes_per_device": 0 if main is None else peak_memory(module, main),
    }


def _entry_function(module: Module) -> Function | None:
    if not module.functions:
        return None
    try:
        return module.main
    except VerifyError:  # only private functions: report the first one
        return next(iter(module.functions.values()))


def peak_memory(module: Module, func: Function, _memo: dict[str, int] | None = None,
                kept: frozenset[int] = frozenset()) -> int:
    """Peak over `func`'s ops of the bytes one device holds for live values.

    Arguments are live from entry, a result from its op; a value dies after its last use
    (returned values live to the end; an unused result dies at once). An argument is donated
    (its buffer reusable after its last use) unless its index is in `kept`: those live to the
    end. While an op runs its
    operands and results are both live. A `call` adds the callee's own peak beyond its arguments,
    a `while`/`case` the largest of its region functions'.
    """
    memo = {} if _memo is None else _memo
    if func.name in memo:
        return memo[func.name]
    memo[func.name] = 0  # recursion guard: a recursive call adds nothing more
    ops = list(func.body)
    last_use: dict[Value, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last_use[v] = i
    for i in kept:
        last_use[func.args[i]] = len(ops)
    live = sum(local_bytes(a) for a in func.args)
    peak = live
    live -= sum(local_bytes(a) for a in func.args if a not in last_use)
    for i, op in enumerate(ops):
        produced = sum(local_bytes(r) for r in op.results)
        transient = produced
        names = [op.attr("callee").name] if op.name == "call" else region_functions(op)
        for name in names:  # a call, or the regions of a while/case
            callee = module.lookup_function(name)
            if callee is not None:
                inner = peak_memory(module, callee, memo) - sum(local_bytes(a) for a in callee.args)
                transient = max(transient, inner)
        peak = max(peak, live + transient)
        live += produced
        dead = {v for v in op.operands if last_use.get(v) == i}
        dead.update(r for r in op.results if not r.uses)
        live -= sum(local_bytes(v) for v in dead)
    memo[func.name] = peak
    return peak


# ----- what the per-device program issues ---------------------------------------------------------


def _local_cost(op: Operation, i: int) -> tuple[int, int]:
    """(bytes_per_device, ring_bytes_per_device) of operand `i` of a per-device collective,
    from its local buffers alone: the same model as the global report (ring_cost.py), with the
    group's tensor rebuilt from the block."""
    x, y = op.operand(i).type, op.results[i].type
    eb = element_bytes(x.dtype)
    ones = (1,) * x.rank
    name = op.name.removeprefix("spmd.")
    if name == "collective_permute":
        return math.prod(x.shape) * eb, math.prod(x.shape) * eb
    g = group_size(op)

    def at(d: int) -> tuple[int, ...]:
        return tuple(g if j == d else 1 for j in range(x.rank))

    if name == "all_gather":
        shape, cin, cout, tgt = y.shape, at(attr(op, "dim")), ones, -1
    elif name in ("reduce_scatter", "all_slice"):
        shape, cin, cout, tgt = x.shape, ones, at(attr(op, "dim")), -1
    elif name == "all_to_all":
        s, c = attr(op, "split_dim"), attr(op, "concat_dim")
        shape = tuple(n * g if j == c else n for j, n in enumerate(x.shape))
        cin, cout, tgt = at(c), at(s), s
    else:  # all_reduce
        shape, cin, cout, tgt = x.shape, ones, ones, -1
    return (buffer_cost(name, shape, eb, cin, cout),
            ring_cost(name, shape, eb, cin, cout, g, tgt))


def issued_report(module: Module) -> dict[str, Any]:
    """The collectives the per-device program issues, one entry per `spmd.*` op that
    communicates (a local `spmd.all_slice` issues nothing): a combined collective is one entry
    over its `operands`, its bytes the sum of theirs. This is what the executors run; beside
    the global report's entries it shows what the `steps` and `combine-collectives` made."""
    entries: list[dict[str, Any]] = []
    for func in module.functions.values():
        if "in_shapes" not in func.attributes:
            continue
        namer = Namer(func)
        for op in func.body:
            if not op.name.startswith("spmd.") or op.name in ("spmd.axis_index",
                                                              "spmd.all_slice"):
                continue
            costs = [_local_cost(op, i) for i in range(op.num_operands)]
            axes = op.attributes.get("axes", ())
            entries.append({
                "kind": op.name.removeprefix("spmd."),
                "operands": op.num_operands,
                "axes": [a.name if not a.is_sub_axis else f"{a.name}:({a.pre}){a.size}"
                         for a in axes],
                "local_shapes": [list(v.type.shape) for v in op.operands],
                "dtypes": [v.type.dtype for v in op.operands],
                "bytes_per_device": sum(b for b, _ in costs),
                "ring_bytes_per_device": sum(r for _, r in costs),
                "group_size": 2 if op.name == "spmd.collective_permute" else group_size(op),
                "values": [namer(r) for r in op.results],
                "function": func.name,
            })
    by_kind: dict[str, dict[str, int]] = {}
    for e in entries:
        kind = by_kind.setdefault(e["kind"], {"count": 0, "bytes": 0})
        kind["count"] += 1
        kind["bytes"] += e["bytes_per_device"]
    return {
        "count": len(entries),
        "bytes": sum(e["bytes_per_device"] for e in entries),
        "ring_bytes": sum(e["ring_bytes_per_device"] for e in entries),
        "combined": sum(1 for e in entries if e["operands"] > 1),
        "by_kind": by_kind,
        "collectives": entries,
    }
