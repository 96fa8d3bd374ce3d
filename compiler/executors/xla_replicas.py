"""The per-device program compiled by XLA as N replicas of one program, without the SPMD
partitioner, and called on the program's global `jax.Array`s. The module comes from shardc's
own printing of the program (replica_text.py: `compile_text`) or, for a program that needs it,
from JAX's trace: `jax.shard_map`'s lowering, its manual body made the entry function of an
N-replica module (`replica_executable`).

    executable = compile_text(jax, text, devices, arguments, out_shardings, out_types)
    executable = replica_executable(jax, lowered, in_shardings, out_shardings, out_types)
    if executable is None: ...              # the program does not fit (see `why_not`)
    outs = executable(*arrays)              # arrays already in `in_shardings`
    payload = executable.serialize()        # for the persistent cache: `load_replicas`

Why: shardc's per-device program is partitioned already (every value a device's block, every
collective explicit), so the partitioned compile `jax.jit` asks of XLA (Shardy's import and
export, then the SPMD partitioner over a module that is manual throughout) is work with
nothing to do. As replicas, each device runs the body on its own blocks: a collective's
replica groups are the same ids (the device assignment is the same order), `partition_id`
becomes `replica_id`, and the body's collectives lose their channel (a channel id makes XLA
read them as cross-partition ones). docs/jax.md, "What the first call costs", has the
figures.

A program is compiled this way when its lowering is one manual computation over every mesh
axis, fed by the function's arguments and constants, whose results are the function's; in one
process; without host callbacks, send/recv or sharding custom calls; with every boundary
sharding on the same devices in the same order. Otherwise (`None`) the caller compiles the
partitioned module as `jax.jit` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

# Ops whose meaning depends on the partitioned form, or on channels between programs.
_UNSUPPORTED = ("stablehlo.send", "stablehlo.recv", "stablehlo.replica_id", "stablehlo.infeed",
                "stablehlo.outfeed")
_SHARDING_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")
_DONATION = ("tf.aliasing_output", "jax.buffer_donor")
OutTypes = Sequence[tuple[tuple[int, ...], Any]]  # each result's global shape and dtype
_MAGIC = b"shardc: XLA executable of N replicas\n"  # a serialized `ReplicaExecutable`
# an axis name in `#sdy.mesh<["a"=2, ...]>` and `#sdy<manual_axes{"a", ...}>`
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_MESH_REF = re.compile(r"<@([\w$.\-]+)")  # the mesh a `#sdy.sharding<@mesh, ...>` is on


class ReplicaExecutable:
    """An XLA executable of N replicas called on global arrays, as a `jax.stages.Compiled` is
    (`executable(*arrays)`); its arguments must be `jax.Array`s in the boundary shardings."""

    def __init__(self, loaded: Any, handlers: Sequence[Any]):
        self.loaded = loaded
        self.handlers = list(handlers)

    def __call__(self, *args: Any) -> list[Any]:
        return self.loaded.execute_sharded(args).consume_with_handlers(self.handlers)

    def as_text(self) -> str:
        """The optimized HLO of the per-device program, as `jax.stages.Compiled.as_text`."""
        return "\n".join(m.to_string() for m in self.loaded.hlo_modules())

    def serialize(self) -> bytes:
        """The executable as bytes `load_replicas` reads back (the persistent cache's)."""
        return _MAGIC + self.loaded.serialize()


def replica_executable(jax: Any, lowered: Any, in_shardings: Sequence[Any],
                       out_shardings: Sequence[Any],
                       out_types: OutTypes) -> ReplicaExecutable | None:
    """`lowered` (the `jax.stages.Lowered` of the per-device program's `jax.jit`) compiled as
    replicas, or None when the program does not fit (`why_not` says why). `out_types`: the
    global shape and dtype of each result."""
    if why_not(jax, lowered, in_shardings, out_shardings) is not None:
        return None
    from jax._src import compiler

    devices = tuple(in_shardings[0]._device_assignment)
    module = _as_replicas(lowered.compiler_ir(), len(devices))
    if module is None:
        return None
    # (through JAX's own compile function: its error handlers, and what profiles see)
    loaded = compiler.backend_compile_and_load(
        devices[0].client, module, _device_list(devices), _options(devices), [])
    return ReplicaExecutable(loaded, _handlers(jax, out_shardings, out_types))


def compile_text(jax: Any, text: str, devices: Sequence[Any], arguments: int,
                 out_shardings: Sequence[Any], out_types: OutTypes,
                 parsed: Any = None) -> ReplicaExecutable | None:
    """The replicas' module as text (replica_text.py) compiled for `devices` (replica i on
    the i-th); None when MLIR cannot read it, XLA rejects it or it does not take `arguments`
    arguments and give `out_types` results (the caller then traces the program). `parsed()`
    is called once the text is read."""
    from jax._src import compiler

    devices = tuple(devices)
    module = _parse(text)
    if module is None:
        return None
    if parsed is not None:
        parsed()
    try:
        loaded = compiler.backend_compile_and_load(
            devices[0].client, module, _device_list(devices), _options(devices), [])
    except jax.errors.JaxRuntimeError:
        return None  # (what XLA rejects in shardc's printing, the trace's module may not)
    # An executable called with other arguments than it takes does not fail cleanly.
    if (len(loaded.get_parameter_layouts()), len(loaded.get_output_layouts())) != (
            arguments, len(out_types)):
        return None
    return ReplicaExecutable(loaded, _handlers(jax, out_shardings, out_types))


def _parse(text: str) -> Any:
    """`text` read by MLIR in a context of JAX's dialects (None: it cannot be read)."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    try:
        with mlir.make_ir_context():
            return ir.Module.parse(text)
    except Exception:  # noqa: BLE001 - MLIR's parse errors have no common type
        return None


def load_replicas(jax: Any, payload: bytes, in_shardings: Sequence[Any],
                  out_shardings: Sequence[Any],
                  out_types: OutTypes) -> ReplicaExecutable | None:
    """The executable `ReplicaExecutable.serialize` wrote, for these devices (None: `payload`
    is not one)."""
    if not payload.startswith(_MAGIC) or not in_shardings:
        return None
    devices = tuple(in_shardings[0]._device_assignment)
    loaded = devices[0].client.deserialize_executable(
        payload[len(_MAGIC):], _device_list(devices), _options(devices))
    return ReplicaExecutable(loaded, _handlers(jax, out_shardings, out_types))


def _device_list(devices: tuple[Any, ...]) -> Any:
    from jax._src.lib import xla_client

    return xla_client.DeviceList(devices)


def _options(devices: tuple[Any, ...]) -> Any:
    """XLA's compile options as `jax.jit` sets them, for N replicas of one partition, the
    SPMD partitioner (and Shardy's) off."""
    from jax._src import compiler

    options = compiler.get_compile_options(
        len(devices), 1, device_assignment=[[d] for d in devices], backend=devices[0].client)
    build = options.executable_build_options
    build.use_spmd_partitioning = False
    build.use_shardy_partitioner = False
    return options


def _handlers(jax: Any, out_shardings: Sequence[Any], out_types: OutTypes) -> list[Any]:
    """JAX's handlers that make each result's per-device buffers one global `jax.Array`."""
    from jax._src.interpreters import pxla

    avals = [jax.core.ShapedArray(shape, dtype) for shape, dtype in out_types]
    return pxla.global_avals_to_results_handler(avals, list(out_shardings), True).handlers


def why_not(jax: Any, lowered: Any, in_shardings: Sequence[Any],
            out_shardings: Sequence[Any]) -> str | None:
    """Why the program cannot be compiled as replicas (None: it can), before looking at its
    module: the boundary's devices and the process."""
    if not in_shardings:
        return "it takes no arguments (which name the devices a call runs on)"
    shardings = [*in_shardings, *out_shardings]
    assignments = {tuple(s._device_assignment) for s in shardings}
    if len(assignments) != 1:
        return "its arguments and results are on different devices"
    (devices,) = assignments
    if any(d.process_index != jax.process_index() for d in devices):
        return "it spans processes"
    compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", {})
    if compile_args.get("host_callbacks"):
        return "it has host callbacks"
    return None


def _as_replicas(lowered: Any, replicas: int) -> Any:
    """A new module: `lowered` (a module of one manual computation: JAX caches it, so it is
    left as it is) as an N-replica program of its manual body; None when it has another
    shape."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import func

    with lowered.context, ir.Location.unknown():
        module = ir.Module.create()
        body = module.body
        for op in lowered.body.operations:
            op.clone(ir.InsertionPoint(body))
        given = lowered.operation.attributes
        for i in range(len(given)):
            module.operation.attributes[given[i].name] = given[i].attr
        main = next((op for op in body.operations if op.operation.name == "func.func"
                     and ir.StringAttr(op.attributes["sym_name"]).value == "main"), None)
        if main is None:
            return None
        manual = _manual_computation(main)
        if manual is None or not _all_axes_manual(body, manual):
            return None
        entry = main.regions[0].blocks[0]
        inner = manual.regions[0].blocks[0]
        done = list(inner.operations)[-1]  # sdy.return
        results = []
        for value in list(entry.operations)[-1].operands:  # func.return
            if value.owner != manual.operation:
                return None
            results.append(done.operands[value.result_number])
        types = [None] * len(entry.arguments)
        for operand, arg in zip(manual.operands, inner.arguments):
            if isinstance(operand.owner, ir.Block):
                types[operand.arg_number] = arg.type
        if any(t is None for t in types):
            return None  # an argument the body does not take (its local type unknown)
        new = func.FuncOp("main", ir.FunctionType.get(types, [v.type for v in results]),
                          ip=ir.InsertionPoint(main))
        if "arg_attrs" in main.attributes:
            new.attributes["arg_attrs"] = ir.ArrayAttr.get([
                ir.DictAttr.get({a.name: a.attr for a in ir.DictAttr(d) if a.name in _DONATION})
                for d in ir.ArrayAttr(main.attributes["arg_attrs"])])
        block = new.add_entry_block()
        made = []  # what each of the body's arguments is in the new function
        for operand, arg in zip(manual.operands, inner.arguments):
            if isinstance(operand.owner, ir.Block):
                made.append(block.arguments[operand.arg_number])
            else:  # a constant JAX passed in: made inside
                made.append(operand.owner.clone(ir.InsertionPoint(block)).result)
            arg.replace_all_uses_with(made[-1])
        # (a result that is an argument of the body, e.g. state passed through, is the new one)
        results = [made[v.arg_number] if isinstance(v.owner, ir.Block) else v for v in results]
        for op in list(inner.operations)[:-1]:
            block.append(op)
        with ir.InsertionPoint(block):
            func.ReturnOp(results)
        main.erase()
        for op in list(body.operations):
            if op.operation.name == "sdy.mesh":
                op.erase()
        if not _per_replica_ops(module.operation):
            return None
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, replicas)
        return module


def _manual_computation(main: Any) -> Any:
    """The one `sdy.manual_computation` of `main`, when `main` is constants, it and a return;
    constants and arguments are all it takes."""
    from jax._src.lib.mlir import ir

    ops = list(main.regions[0].blocks[0].operations)
    manual = [op for op in ops if op.operation.name == "sdy.manual_computation"]
    if len(manual) != 1 or ops[-1].operation.name != "func.return":
        return None
    if any(op.operation.name != "stablehlo.constant" for op in ops[:-1] if op != manual[0]):
        return None
    for operand in manual[0].operands:
        if not isinstance(operand.owner, ir.Block) and \
                operand.owner.name != "stablehlo.constant":
            return None
    return manual[0]


def _all_axes_manual(body: Any, manual: Any) -> bool:
    """Whether the manual computation is manual over every axis of its mesh."""
    manual_axes = set(_QUOTED.findall(str(manual.attributes["manual_axes"])))
    names = {m for key in ("in_shardings", "out_shardings") if key in manual.attributes
             for m in _MESH_REF.findall(str(manual.attributes[key]))}
    if len(names) != 1:
        return False
    for op in body.operations:
        if op.operation.name == "sdy.mesh" and \
                str(op.attributes["sym_name"]).strip('"') in names:
            return set(_QUOTED.findall(str(op.attributes["mesh"]))) <= manual_axes
    return False


def _per_replica_ops(module: Any) -> bool:
    """Rewrite the body's ops for replicas (False: an op that cannot be): `partition_id` ->
    `replica_id`; collectives without their channel (ids then count replicas)."""
    from jax._src.lib.mlir import ir

    ids: list[Any] = []
    ok = [True]

    def visit(op: Any) -> Any:
        name = op.name
        if name.startswith("sdy.") or name in _UNSUPPORTED or (
                name == "stablehlo.custom_call"
                and ir.StringAttr(op.attributes["call_target_name"]).value in _SHARDING_CALLS):
            ok[0] = False
            return ir.WalkResult.INTERRUPT
        if name == "stablehlo.partition_id":
            ids.append(op)
        attributes = op.attributes
        if "channel_handle" in attributes:
            del attributes["channel_handle"]
            if "use_global_device_ids" in attributes:
                del attributes["use_global_device_ids"]
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in ids:
        replica = ir.Operation.create("stablehlo.replica_id", results=[op.result.type],
                                      ip=ir.InsertionPoint(op))
        op.result.replace_all_uses_with(replica.result)
        op.erase()
    return ok[0]
