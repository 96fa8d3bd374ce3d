"""The per-device program printed as XLA's N-replica StableHLO module, from shardc's own IR: the
module xla_replicas.py makes from JAX's trace of the program, without the trace.

    text = replica_text(program)        # None: the program needs JAX's trace (see `why_not`)

The program's function is printed by the StableHLO exporter with its per-device types and no
shardings; each `spmd.*` collective as the replica-group StableHLO collective (its groups as
replica ids: replica i runs on the i-th device of the executor's mesh) and each device index
(`spmd.axis_index`, `spmd.all_slice`'s block start) read from a table by `replica_id`.
Combined all-gathers and reduce-scatters pack their operands into one buffer exactly as the JAX
executor's trace does (jax_collectives.py), so XLA compiles the same kernels.

What it leaves to the trace (`None`): a boundary that pads an uneven dim or carries unreduced
values, 64-bit types JAX traces with 64-bit mode on, host callbacks, several processes, device
ids read in the program (`partition_id`, `replica_id`) or replica-group collectives written in
it (a user's shard_map body), all-reduces other than sums, maxima and minima, and any op the
exporter cannot print.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from shardc.executors.host_callbacks import is_host_callback
from shardc.executors.replica_groups import DEVICE_IDS
from shardc.ir.core import Function, Operation
from shardc.ir.ops.registry import attr
from shardc.ir.ops.replica_collectives import REPLICA_COLLECTIVES
from shardc.passes.analysis.collectives.groups import device_groups
from shardc.stablehlo.inlining import region_only_functions
from shardc.stablehlo.mlir_text import ExportError
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.names import Names
from shardc.stablehlo.ops.replica_collectives import dense_groups
from shardc.stablehlo.printer import Printer
from shardc.stablehlo.reducers import reducer_lines

_REDUCTIONS = ("add", "maximum", "minimum")  # the all-reduce kinds printed as they are


class _Unprintable(Exception):
    """An op the replicas' text does not print (the trace does)."""


def replica_text(program: Any) -> str | None:
    """The StableHLO text of `program` (a `JaxArrayProgram`) as N replicas, or None."""
    if why_not(program) is not None:
        return None
    try:
        return _ReplicaPrinter(program).print()
    except (_Unprintable, ExportError):
        return None


def why_not(program: Any) -> str | None:
    """Why `program` is left to JAX's trace, before printing it (None: it is not)."""
    ex = program.executor
    if program.multi_process:
        return "it spans processes"
    if ex.host_callbacks:
        return "it has host callbacks"
    if ex.wide:
        return "it has 64-bit values"
    for m, shape in (*zip(program.in_mappings, program.in_shapes),
                     *zip(program.out_mappings, program.out_shapes)):
        if m.unreduced or any(n % c for n, c in zip(shape, m.shard_counts())):
            return "its boundary pads or reduces values"
    order = tuple(ex.mesh.devices.flat)
    if any(tuple(s._device_assignment) != order
           for s in (*program.in_shardings, *program.out_shardings)):
        return "its arguments and results are on the devices in another order"
    return None


class _ReplicaPrinter(Printer):
    """The exporter's printer for one device's program run as N replicas."""

    def __init__(self, program: Any):
        ex = program.executor
        super().__init__(ex.module, debug_info=False, shardings=False)
        self.program = program
        self.mesh = ex.layout.mesh
        self.position = ex.position  # device id -> replica id
        self.replicas = ex.mesh.devices.size
        self.fresh = 0
        self.donors = _donors(program)

    # ----- the module ---------------------------------------------------------------------------

    def print(self) -> str:
        name = self.module.attributes.get("sym_name") or "shardc_replicas"
        self.lines.append(f"module @{name} attributes {{mhlo.num_partitions = 1 : i32, "
                          f"mhlo.num_replicas = {self.replicas} : i32}} {{")
        main = self.program.executor.func
        if main.name != "main":
            raise _Unprintable(f"a program whose function is @{main.name}")
        inlined = region_only_functions(self.module)  # (printed as the regions of their ops)
        for func in self.module.functions.values():
            if func.name not in inlined:
                self.function(func)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def function_attrs(self, func: Function) -> dict[str, Any]:
        return {}  # (an SPMD function's own: its global shapes and shardings)

    def arg_attrs(self, func: Function, i: int) -> dict[str, Any]:
        attrs = dict(func.arg_attrs[i])
        if func.name == "main" and i in self.donors:
            attrs.update(self.donors[i])
        return attrs

    def op_text(self, op: Operation, n: Names, indent: str) -> list[str]:
        name = op.name
        if name in _SPMD:
            return _SPMD[name](self, op, n, indent)
        if name in DEVICE_IDS or name in REPLICA_COLLECTIVES or name in _NEEDS_TRACE or \
                is_host_callback(op):  # (a callback index names the lowering's functions)
            raise _Unprintable(name)
        return super().op_text(op, n, indent)

    # ----- what the collectives share ---------------------------------------------------------

    def name(self) -> str:
        self.fresh += 1
        return f"%replicas_{self.fresh}"

    def groups(self, op: Operation) -> str:
        """The op's device groups as replica ids, in MLIR's dense text."""
        return dense_groups([[self.position[d] for d in g] for g in attr(op, "groups")])

    def device_index(self, axes: Sequence[Any], scale: int, indent: str,
                     define: str) -> list[str]:
        """`define` (`%7 = `) this device's linear index over `axes` (the first major) times
        `scale`: an i32 scalar read from a table by `replica_id`."""
        table = [0] * self.replicas
        for group in device_groups(self.mesh, tuple(axes)):
            for k, d in enumerate(group):
                table[self.position[d]] = k * scale
        rid, tbl, one = self.name(), self.name(), self.name()
        n = self.replicas
        return [
            f"{indent}{rid} = stablehlo.replica_id : tensor<ui32>",
            f"{indent}{tbl} = stablehlo.constant dense<[{', '.join(map(str, table))}]> : "
            f"tensor<{n}xi32>",
            f"{indent}{one} = stablehlo.dynamic_slice {tbl}, {rid}, sizes = [1] : "
            f"(tensor<{n}xi32>, tensor<ui32>) -> tensor<1xi32>",
            _reshape(indent, define.removesuffix(" = "), one, "tensor<1xi32>", "tensor<i32>"),
        ]

# Ops whose per-device meaning the JAX executor gives them (host callbacks are checked above).
_NEEDS_TRACE = frozenset({"sdy.manual_computation", "manual_computation"})


def _donors(program: Any) -> dict[int, dict[str, Any]]:
    """The donated arguments' attributes, as JAX marks them: aliased to the first result of the
    same type and sharding not yet taken (`tf.aliasing_output`), else a buffer donor."""
    from shardc.ir.attributes import OpaqueAttr

    func = program.executor.func
    taken: set[int] = set()
    out: dict[int, dict[str, Any]] = {}
    for i, given in enumerate(program.donate):
        if not given:
            continue
        t, s = func.args[i].type, program.in_shardings[i]
        for j, (r, o) in enumerate(zip(func.result_types, program.out_shardings)):
            if j not in taken and _ty(r) == _ty(t) and o == s:
                taken.add(j)
                out[i] = {"tf.aliasing_output": OpaqueAttr(f"{j} : i32")}
                break
        else:
            out[i] = {"jax.buffer_donor": OpaqueAttr("true")}
    return out


# ----- the spmd collectives ---------------------------------------------------------------------


def _all_gather(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    d = attr(op, "dim")
    if len(op.operands) > 1:
        return _packed_all_gather(p, op, n, indent, d)
    (x,), (r,) = op.operands, op.results
    return [f'{indent}{n.group(op)}"stablehlo.all_gather"({n(x)}) <{{all_gather_dim = {d} : i64, '
            f"replica_groups = {p.groups(op)}}}> : ({_ty(x.type)}) -> {_ty(r.type)}"]


def _packed_all_gather(p: _ReplicaPrinter, op: Operation, n: Names, indent: str,
                       d: int) -> list[str]:
    """Several operands in one buffer: each flattened, concatenated, one all-gather of rows
    [members, total], each operand's columns cut back and its rows moved to dim `d`."""
    xs = op.operands
    g = len(attr(op, "groups")[0])
    dtype = xs[0].type.dtype
    lines, flats = [], []
    for x in xs:
        flat, size = p.name(), math.prod(x.type.shape)
        lines.append(_reshape(indent, flat, n(x), _ty(x.type), _tensor([size], dtype)))
        flats.append((flat, size))
    total = sum(size for _, size in flats)
    cat, row, rows = p.name(), p.name(), p.name()
    lines.append(f"{indent}{cat} = stablehlo.concatenate {', '.join(f for f, _ in flats)}, "
                 f"dim = 0 : ({', '.join(_tensor([s], dtype) for _, s in flats)}) -> "
                 f"{_tensor([total], dtype)}")
    lines.append(_reshape(indent, row, cat, _tensor([total], dtype), _tensor([1, total], dtype)))
    lines.append(f'{indent}{rows} = "stablehlo.all_gather"({row}) <{{all_gather_dim = 0 : i64, '
                 f"replica_groups = {p.groups(op)}}}> : ({_tensor([1, total], dtype)}) -> "
                 f"{_tensor([g, total], dtype)}")
    start = 0
    for x, r, out in zip(xs, op.results, _result_names(p, n, op)):
        shape, size = list(x.type.shape), math.prod(x.type.shape)
        part, block, moved = p.name(), p.name(), p.name()
        lines.append(f"{indent}{part} = stablehlo.slice {rows} [0:{g}, {start}:{start + size}] "
                     f": ({_tensor([g, total], dtype)}) -> {_tensor([g, size], dtype)}")
        rowed, moved_shape = _tensor([g, *shape], dtype), [*shape[:d], g, *shape[d:]]
        lines.append(_reshape(indent, block, part, _tensor([g, size], dtype), rowed))
        perm = [*range(1, d + 1), 0, *range(d + 1, len(shape) + 1)]
        lines.append(_transpose(indent, moved, block, perm, rowed, _tensor(moved_shape, dtype)))
        lines.append(_reshape(indent, out, moved, _tensor(moved_shape, dtype), _ty(r.type)))
        start += size
    return lines


def _reduce_scatter(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    d = attr(op, "dim")
    dtype = op.operands[0].type.dtype
    if len(op.operands) > 1:
        return _packed_reduce_scatter(p, op, n, indent, d)
    (x,), (r,) = op.operands, op.results
    return [f'{indent}{n.group(op)}"stablehlo.reduce_scatter"({n(x)}) <{{replica_groups = '
            f"{p.groups(op)}, scatter_dimension = {d} : i64}}> ({{",
            *reducer_lines(n, indent, dtype, "add"),
            f"{indent}}}) : ({_ty(x.type)}) -> {_ty(r.type)}"]


def _packed_reduce_scatter(p: _ReplicaPrinter, op: Operation, n: Names, indent: str,
                           d: int) -> list[str]:
    """Several operands in one buffer, built as the JAX executor builds it: each operand
    [size / g, g] (its member index minor), stacked along dim 0, one transpose to rows
    [g, total / g], one reduce-scatter of the rows, each operand's part cut back."""
    xs = op.operands
    g = len(attr(op, "groups")[0])
    dtype = xs[0].type.dtype
    lines, pieces = [], []
    for x in xs:
        shape = list(x.type.shape)
        split = [*shape[:d], g, shape[d] // g, *shape[d + 1:]]
        perm = [i for i in range(len(split)) if i != d] + [d]
        moved_shape = [split[i] for i in perm]
        size = math.prod(shape) // g
        a, b, c = p.name(), p.name(), p.name()
        lines.append(_reshape(indent, a, n(x), _ty(x.type), _tensor(split, dtype)))
        lines.append(_transpose(indent, b, a, perm, _tensor(split, dtype),
                                _tensor(moved_shape, dtype)))
        lines.append(_reshape(indent, c, b, _tensor(moved_shape, dtype), _tensor([size, g], dtype)))
        pieces.append((c, size))
    total = sum(size for _, size in pieces)
    cat, rows, summed, flat = p.name(), p.name(), p.name(), p.name()
    lines.append(f"{indent}{cat} = stablehlo.concatenate {', '.join(c for c, _ in pieces)}, "
                 f"dim = 0 : ({', '.join(_tensor([s, g], dtype) for _, s in pieces)}) -> "
                 f"{_tensor([total, g], dtype)}")
    lines.append(_transpose(indent, rows, cat, [1, 0], _tensor([total, g], dtype),
                            _tensor([g, total], dtype)))
    lines.append(f'{indent}{summed} = "stablehlo.reduce_scatter"({rows}) <{{replica_groups = '
                 f"{p.groups(op)}, scatter_dimension = 0 : i64}}> ({{")
    lines += reducer_lines(n, indent, dtype, "add")
    lines.append(f"{indent}}}) : ({_tensor([g, total], dtype)}) -> {_tensor([1, total], dtype)}")
    lines.append(_reshape(indent, flat, summed, _tensor([1, total], dtype),
                          _tensor([total], dtype)))
    start = 0
    for (_, size), r, out in zip(pieces, op.results, _result_names(p, n, op)):
        part = p.name()
        lines.append(f"{indent}{part} = stablehlo.slice {flat} [{start}:{start + size}] : "
                     f"({_tensor([total], dtype)}) -> {_tensor([size], dtype)}")
        lines.append(_reshape(indent, out, part, _tensor([size], dtype), _ty(r.type)))
        start += size
    return lines


def _all_reduce(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    kind = attr(op, "kind").word
    dtypes = {x.type.dtype for x in op.operands}
    if kind not in _REDUCTIONS or len(dtypes) != 1 or "i1" in dtypes:
        raise _Unprintable(f"an all_reduce of kind {kind}")
    (dtype,) = dtypes
    args = ", ".join(n(x) for x in op.operands)
    ins = ", ".join(_ty(x.type) for x in op.operands)
    outs = ", ".join(_ty(r.type) for r in op.results)
    outs = outs if len(op.results) == 1 else f"({outs})"
    return [f'{indent}{n.group(op)}"stablehlo.all_reduce"({args}) <{{replica_groups = '
            f"{p.groups(op)}}}> ({{", *reducer_lines(n, indent, dtype, kind),
            f"{indent}}}) : ({ins}) -> {outs}"]


def _all_to_all(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    (x,), (r,) = op.operands, op.results
    g = len(attr(op, "groups")[0])
    return [f'{indent}{n.group(op)}"stablehlo.all_to_all"({n(x)}) <{{concat_dimension = '
            f'{attr(op, "concat_dim")} : i64, replica_groups = {p.groups(op)}, split_count = '
            f'{g} : i64, split_dimension = {attr(op, "split_dim")} : i64}}> : ({_ty(x.type)}) '
            f"-> {_ty(r.type)}"]


def _collective_permute(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    (x,), (r,) = op.operands, op.results
    pairs = [(p.position[s], p.position[t]) for s, t in attr(op, "pairs")]
    if not pairs:
        raise _Unprintable("a collective_permute without pairs")
    return [f'{indent}{n.group(op)}"stablehlo.collective_permute"({n(x)}) <{{'
            f"source_target_pairs = {dense_groups(pairs)}}}> : ({_ty(x.type)}) -> "
            f"{_ty(r.type)}"]


def _axis_index(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    (r,) = op.results
    if _ty(r.type) != "tensor<i32>":
        raise _Unprintable(f"an axis_index of type {_ty(r.type)}")
    return p.device_index(attr(op, "axes"), 1, indent, n.group(op))


def _all_slice(p: _ReplicaPrinter, op: Operation, n: Names, indent: str) -> list[str]:
    (x,), (r,) = op.operands, op.results
    d = attr(op, "dim")
    size = r.type.shape[d]
    start = p.name()
    lines = p.device_index(attr(op, "axes"), size, indent, f"{start} = ")
    zero = _zero(p, lines, indent)
    starts = ", ".join(start if i == d else zero for i in range(len(r.type.shape)))
    sizes = ", ".join(map(str, r.type.shape))
    index_types = ", ".join("tensor<i32>" for _ in r.type.shape)
    lines.append(f"{indent}{n.group(op)}stablehlo.dynamic_slice {n(x)}, {starts}, "
                 f"sizes = [{sizes}] : ({_ty(x.type)}, {index_types}) -> {_ty(r.type)}")
    return lines


def _zero(p: _ReplicaPrinter, lines: list[str], indent: str) -> str:
    zero = p.name()
    lines.append(f"{indent}{zero} = stablehlo.constant dense<0> : tensor<i32>")
    return zero


def _reshape(indent: str, out: str, value: str, source: str, target: str) -> str:
    return f"{indent}{out} = stablehlo.reshape {value} : ({source}) -> {target}"


def _transpose(indent: str, out: str, value: str, perm: Sequence[int], source: str,
               target: str) -> str:
    return (f"{indent}{out} = stablehlo.transpose {value}, dims = {list(perm)} : ({source}) "
            f"-> {target}")


def _tensor(shape: Sequence[int], dtype: str) -> str:
    return "tensor<" + "".join(f"{s}x" for s in shape) + dtype + ">"


def _result_names(p: _ReplicaPrinter, n: Names, op: Operation) -> list[str]:
    """Fresh names for `op`'s results, which several ops define one by one (the uses printed
    after it read them from `n`)."""
    names = []
    for r in op.results:
        name = p.name()
        n.names[id(r)] = name[1:]
        names.append(name)
    return names


_SPMD = {
    "spmd.all_gather": _all_gather,
    "spmd.reduce_scatter": _reduce_scatter,
    "spmd.all_reduce": _all_reduce,
    "spmd.all_to_all": _all_to_all,
    "spmd.collective_permute": _collective_permute,
    "spmd.axis_index": _axis_index,
    "spmd.all_slice": _all_slice,
}
