"""`per-instruction-partitioning` (Shardy's `sdy-per-instruction-partitioning`): partition some
instructions one at a time and leave the rest of the program global.

    shardc opt model.mlir -p 'sdy-per-instruction-partitioning{filter=dot,reshard}'
    shardc opt model.mlir -p "sdy-per-instruction-partitioning{filter='selectLow=0, selectHigh=3'}"

Each selected op is copied alone into a function `outlined_op` of a scratch module (the op's
operand and result shardings on its arguments and results), Shardy's partitioner sub-pipeline
runs on it (`resolve-permutation-factors`, `insert-explicit-reshards{enable-full-version=true}`,
`reshard-to-collectives`, `pad-for-divisibility`, `convert-global-to-local`,
`drop-sharding-and-mesh`: the passes shardc has, not copies of them) and the device-local
function that comes out becomes the body of an `sdy.manual_computation` over every mesh axis
the op's shardings use, in their order of appearance (operands first), that replaces the op:

    %0 = stablehlo.dot %a, %b {sdy.sharding = <@m, [{"x"}, {"y"}]>} : ... -> tensor<8x16xf32>
 -> %0 = sdy.manual_computation(%a, %b) in_shardings=[<@m, [{"x"}, {}]>, <@m, [{}, {"y"}]>]
         out_shardings=[<@m, [{"x"}, {"y"}]>] manual_axes={"x", "y"}
         (%l: tensor<4x32xf32>, %r: tensor<32x8xf32>) {
      %d = stablehlo.dot %l, %r : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
      sdy.return %d : tensor<4x8xf32>
    } : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>

A value without a sharding counts as closed and replicated on the op's mesh; the result
shardings lose their unreduced axes (the sub-pipeline reduces them). An operand whose sharded dims
do not divide is padded with zeros at the high end first (a `sdy.reshard`'s operand and result
share the larger padded type) and a result that needed padding is sliced back after the manual
computation; a padded `slice` or `pad` grows its limit or high padding to match.

Candidates are the ops of each function's top level (not those in regions, as in Shardy) with a
sharded (not fully replicated) operand or result, other than terminators, collectives, data-flow
edges, manual computations, propagation barriers, sharding constraints and groups and `Sharding`
custom calls. `filter` (Shardy's syntax, quotes optional): empty selects every candidate; else a
comma-separated list of op-name substrings (`dot`, `add`: an op matches if its MLIR name, e.g.
`stablehlo.dot_general`, contains one) and `selectLow=N` / `selectHigh=N`, bounds on the
candidate's position (0-based, counted over candidates in module order). `enable-halo-exchange`,
`replica-count` and `partition-count` go to the sub-pipeline. An op that names region functions
(`while`, `case`, a named computation) is not supported: a located error says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import COLLECTIVE, get_op_def
from shardc.ir.ops.data_flow import _SDY_OPS
from shardc.ir.ops.manual import fill_values
from shardc.ir.symbols import SymbolTable, region_symbols
from shardc.ir.types import DistributedTensorType, TensorType
from shardc.ir.verifier import verify_function
from shardc.passes.manager import (
    Pass,
    PassContext,
    PassManager,
    parse_pipeline,
    register_alias,
    register_pass,
)
from shardc.passes.reshard.halo_exchange import pad_high, slice_to
from shardc.passes.spmd.pad_for_divisibility import padded_type

_SKIPPED = frozenset({"return", "data_flow_edge", "manual_computation", "propagation_barrier",
                      "sharding_constraint", "sharding_group"})
_SHARDING_TARGETS = ("Sharding", "mhlo.sharding")


@dataclass
class Filter:
    """Shardy's `FilterConfig`: which candidates to partition."""

    select_all: bool = False
    low: int = -1
    high: int = -1
    names: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Filter:
        """Shardy's `parseFilter`: tokens in any order; a bound that is not an integer is
        ignored, as Shardy ignores it."""
        text = text.strip()
        if not text:
            return cls(select_all=True)
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1].strip()
        config = cls()
        for token in (t.strip() for t in text.split(",")):
            if not token:
                continue
            for key in ("selectLow=", "selectHigh="):
                if token.startswith(key):
                    value = token[len(key):].strip()
                    if re.fullmatch(r"-?\d+", value):
                        setattr(config, "low" if key == "selectLow=" else "high", int(value))
                    break
            else:
                config.names.append(token)
        return config

    def matches(self, mlir_name: str, seq_id: int) -> bool:
        if self.select_all:
            return True
        if self.low >= 0 and seq_id < self.low:
            return False
        if 0 <= self.high < seq_id:
            return False
        return not self.names or any(n in mlir_name for n in self.names)


def mlir_name(op: Operation) -> str:
    """The op's MLIR name (`stablehlo.dot_general`, `sdy.reshard`), as Shardy's filter reads it."""
    name = op.name
    if name in _SDY_OPS or name in ("manual_computation", "named_computation"):
        return f"sdy.{name}"
    if name in ("call", "return"):
        return f"func.{name}"
    return f"stablehlo.{name.removeprefix('xla.')}"


def _sharded(v: Value) -> bool:
    m = v.mapping
    return m is not None and not m.is_fully_replicated


def is_candidate(op: Operation) -> bool:
    """Shardy's candidate test: a sharded operand or result, not an op it skips."""
    op_def = get_op_def(op.name)
    if op.name in _SKIPPED or (op_def is not None and op_def.has(COLLECTIVE)):
        return False
    if op.name == "custom_call" and op.attributes.get("call_target_name") in _SHARDING_TARGETS:
        return False
    return any(_sharded(v) for v in (*op.operands, *op.results))


def common_mesh(op: Operation) -> DeviceMesh | None:
    """Shardy's `getCommonMeshOrRef` (device ids compared): the mesh every sharding of the op
    shares, meshes without axes aside; None when two differ."""
    mesh: DeviceMesh | None = None
    for v in (*op.operands, *op.results):
        m = v.mapping
        if m is None:
            continue
        if mesh is None or not mesh.axes:
            mesh = m.mesh
        elif m.mesh.axes and not m.mesh.same_devices(mesh):
            return None
    return mesh


def mesh_symbol(module: Module, mesh: DeviceMesh) -> DeviceMesh:
    """Shardy's `getOrCreateMeshSymbol`: `mesh` if declared, else a declared mesh equal to it,
    else a new declaration `@mesh` (`@mesh_0`, ... when taken)."""
    if not mesh.inline:
        return mesh
    for declared in module.meshes.values():
        if declared.same_devices(mesh):
            return declared
    name, n = "mesh", 0
    while name in module.meshes:
        name, n = f"mesh_{n}", n + 1
    return module.add_mesh(DeviceMesh(name, mesh.axes, mesh.device_ids))


def _on_mesh(m: NamedMapping | None, mesh: DeviceMesh, rank: int, clear_unreduced: bool
             ) -> NamedMapping:
    if m is None:
        return NamedMapping.fully_replicated(mesh, rank)
    if clear_unreduced:
        m = m.replace(unreduced=())
    return m if m.mesh is mesh else m.replace(mesh=mesh)


def manual_axes(shardings: list[NamedMapping]) -> tuple[AxisRef, ...]:
    """Every axis name the shardings use (dims, replicated, unreduced), first use first."""
    names: dict[str, None] = {}
    for m in shardings:
        for ref in (*(a for d in m.dims for a in d.axes), *m.replicated, *m.unreduced):
            names.setdefault(ref.name, None)
    return tuple(AxisRef(n) for n in names)


def sub_pipeline(p: PerInstructionPartitioning) -> str:
    """Shardy's `runPartitionerPipeline`, in shardc's pass names."""
    return ",".join([
        f"resolve-permutation-factors{{enable-halo-exchange={str(p.enable_halo_exchange).lower()}}}",
        "insert-explicit-reshards{enable-full-version=true}",
        "reshard-to-collectives",
        "pad-for-divisibility",
        f"convert-global-to-local{{replica-count={p.replica_count} "
        f"partition-count={p.partition_count}}}",
        "drop-sharding-and-mesh",
    ])


def _grow(op: Operation, orig: TensorType, padded: TensorType) -> None:
    """A padded `slice` keeps its start and grows its limit; a padded `pad` its high padding."""
    extra = tuple(b - a for a, b in zip(orig.shape, padded.shape, strict=True))
    key = {"slice": "limit_indices", "pad": "edge_padding_high"}.get(op.name)
    if key is not None:
        op.attributes[key] = tuple(x + e for x, e in zip(op.attributes[key], extra))


class Partitioner:
    """Partitions the selected ops of one module, one op at a time."""

    def __init__(self, module: Module, options: PerInstructionPartitioning, ctx: PassContext):
        self.module, self.options, self.ctx = module, options, ctx
        self.symbols = SymbolTable(module)
        # One manager for every op: the sub-pipeline is the same for all of them.
        self.sub = PassManager(parse_pipeline(sub_pipeline(options)), verify_each=ctx.verify_each)

    def selected(self) -> list[Operation]:
        config = Filter.parse(self.options.filter)
        regions = {n for f in self.module.functions.values() for op in f.body
                   for n in region_symbols(op)}
        ops, seq = [], 0
        for func in list(self.module.functions.values()):
            if func.name in regions or func.return_op is None:
                continue
            for op in func.body:
                if not is_candidate(op):
                    continue
                if config.matches(mlir_name(op), seq):
                    ops.append(op)
                seq += 1
        return ops

    def partition(self, op: Operation) -> None:
        if region_symbols(op):
            raise PassError(f"'{mlir_name(op)}' op: partitioning an op with regions is not "
                            "supported", op.loc)
        found = common_mesh(op)
        if found is None:
            raise PassError(f"'{mlir_name(op)}' op: its operands and results are on different "
                            "meshes", op.loc)
        mesh = mesh_symbol(self.module, found)
        ins = [_on_mesh(v.mapping, mesh, v.type.rank, False) for v in op.operands]
        outs = [_on_mesh(v.mapping, mesh, v.type.rank, True) for v in op.results]
        axes = manual_axes(ins + outs)
        for i, m in enumerate(ins):
            if m.unreduced:
                raise PassError(f"'{mlir_name(op)}' op: operand {i} is unreduced on "
                                f"{m.unreduced[0]}, which would be a manual axis; a "
                                "manual_computation's manual axes cannot be unreduced", op.loc)
        in_types = [padded_type(v.type, m) for v, m in zip(op.operands, ins)]
        out_types = [padded_type(v.type, m) for v, m in zip(op.results, outs)]
        if op.name == "reshard":
            # Shardy's unified padded type: the operand and the result share the larger shape.
            shape = tuple(max(a, b) for a, b in zip(in_types[0].shape, out_types[0].shape))
            in_types = [TensorType(shape, op.operand(0).type.dtype)]
            out_types = [TensorType(shape, op.result.type.dtype)]
        operands = [v if t.shape == v.type.shape else pad_high(op, v, t.shape, m)
                    for v, t, m in zip(op.operands, in_types, ins)]
        body = self.outline(op, ins, outs, in_types, out_types)
        manual = Operation.at(op, "manual_computation", operands, [
            DistributedTensorType(t.shape, t.dtype, m) for t, m in zip(out_types, outs)
        ], {"body": Symbol(body.name), "in_shardings": tuple(ins), "manual_axes": axes,
            "out_shardings": tuple(outs)})
        assert op.parent is not None
        op.parent.insert_before(op, manual)
        fill_values(manual)
        for old, new, m in zip(op.results, manual.results, outs):
            if new.type.shape != old.type.shape:
                new = slice_to(manual, new, old.type.shape, m)
            old.replace_all_uses_with(new)
        op.erase()

    def outline(self, op: Operation, ins: list[NamedMapping], outs: list[NamedMapping],
                in_types: list[TensorType], out_types: list[TensorType]) -> Function:
        """Shardy's `outlineInstruction` and `runPartitionerPipeline`: `op` alone in a scratch
        module, partitioned; the device-local function, added to the module under a fresh
        name."""
        scratch = Module()
        scratch.meshes = dict(self.module.meshes)
        scratch.mesh_locs = dict(self.module.mesh_locs)
        func = Function("outlined_op",
                        [DistributedTensorType(t.shape, t.dtype, m) for t, m in zip(in_types, ins)],
                        [DistributedTensorType(t.shape, t.dtype, m)
                         for t, m in zip(out_types, outs)],
                        visibility="private", loc=op.loc)
        scratch.add_function(func)
        copy = func.body.append(op.clone(func.args))
        mesh = outs[0].mesh if outs else None
        for r, old, t in zip(copy.results, op.results, out_types):
            m = old.mapping
            if m is not None and mesh is not None and m.mesh is not mesh and m.mesh.same_devices(
                    mesh):
                m = m.replace(mesh=mesh)  # an inline mesh: the declared one, as Shardy names it
            if t.shape != old.type.shape:
                _grow(copy, old.type, t)
            r.type = DistributedTensorType(t.shape, t.dtype, m)
        func.body.append(Operation.at(op, "return", list(copy.results), [], {}))
        try:
            verify_function(func)
        except ShardcError as e:
            # Shardy pads the operands and the results apart, each for its own sharding.
            raise PassError(f"'{mlir_name(op)}' op: with its operands and results padded for "
                            f"their indivisible shardings the op is invalid: {e.message}",
                            op.loc) from None
        self.sub.run(scratch, self.ctx)
        if len(scratch.functions) != 1:
            extra = sorted(set(scratch.functions) - {"outlined_op"})
            raise PassError(f"'{mlir_name(op)}' op: partitioning it left functions "
                            f"{extra} besides its own, which this pass cannot move", op.loc)
        assert op.function is not None
        func.name = f"{op.function.name}_manual"
        func.module = None
        self.symbols.insert(func)
        return func


@register_pass("per-instruction-partitioning")
@dataclass(frozen=True)
class PerInstructionPartitioning(Pass):
    """Partition selected ops alone, each wrapped in a manual computation over its mesh axes
    (sdy-per-instruction-partitioning)."""

    filter: str = ""
    enable_halo_exchange: bool = True
    replica_count: int = 1
    partition_count: int = 1

    def run(self, module: Module, ctx: PassContext) -> None:
        partitioner = Partitioner(module, self, ctx)
        for op in partitioner.selected():
            partitioner.partition(op)


register_alias("sdy-per-instruction-partitioning", "per-instruction-partitioning")
