"""An op placed on one device, as Shardy's `sdy-insert-explicit-reshards` handles it.

A result sharded on a maximal mesh (`<[], device_ids=[3]>`, a "single-device sharding") puts
its op on that one device: every operand is brought there and every result is sent back to the
module's global mesh (the first mesh with axes that is not maximal), so the ops around it keep
computing on the global mesh:

    %0 = stablehlo.custom_call @f(%arg0) {sdy.sharding = <[<@dev1, []>]>}   (%arg0 on {"x"})
 -> %r = sdy.reshard %arg0 <@mesh, [{}, {}]>          tiled -> replicated on the global mesh
    %s = sdy.reshard %r <@dev1, []>                   -> on the device
    %0 = stablehlo.custom_call @f(%s) {sdy.sharding = <[<@dev1, []>]>}
    %1 = sdy.reshard %0 <@mesh, [{}, {}]>             back to the global mesh, replicated
    (users read %1; a result whose written sharding was not single-device gets one more reshard
    to it)

An operand already replicated on the global mesh goes to the device in one reshard; one already
on the device is left alone. Tokens move nowhere: a token result is replicated on the global
mesh. Results on two different devices are an error, as in Shardy, and so is a function argument
or result on one device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.passes.reshard.reshards.insertion import Cursor, dims_replicated, equivalent
from shardc.passes.reshard.reshards.provenance import ReshardReason, mark_split

SINGLE = ReshardReason.SINGLE_DEVICE


def is_single_device(m: NamedMapping | None) -> bool:
    """Shardy's `isSingleDeviceSharding`: a sharding on a maximal mesh."""
    return m is not None and m.mesh.is_maximal


def single_device_mesh(op: Operation, outs: Sequence[NamedMapping | None]) -> DeviceMesh | None:
    """The maximal mesh the op's results put it on (Shardy's `getSingleDeviceMeshInfo`), None
    when no result is single-device; results on two devices are an error."""
    mesh: DeviceMesh | None = None
    for m in outs:
        if not is_single_device(m):
            continue
        assert m is not None
        if mesh is not None and m.mesh.device_id(0) != mesh.device_id(0):
            raise PassError(f"'{op.name}' op has conflicting single-device result shardings",
                            op.loc)
        mesh = m.mesh
    return mesh


def no_single_device_signature(func: Function) -> None:
    """Shardy places a function's arguments and results on its mesh's devices: a single-device
    sharding on one is an error."""
    values = [("argument", i, a.mapping) for i, a in enumerate(func.args)]
    values += [("result", i, getattr(t, "mapping", None)) for i, t in enumerate(func.result_types)]
    for kind, i, m in values:
        if is_single_device(m):
            raise PassError(f"'func.func' op function {kind} {i} cannot have a single-device "
                            "(maximal) sharding attribute", func.loc)


def global_mesh(module: Module) -> DeviceMesh | None:
    """Shardy's `getGlobalMeshOp`: the module's first mesh that has axes and is not maximal."""
    for mesh in module.meshes.values():
        if mesh.axes and not mesh.is_maximal:
            return mesh
    return None


def _is_token(v: Value) -> bool:
    return v.type.dtype == "token"


def place_on_one_device(
    module: Module,
    op: Operation,
    device: DeviceMesh,
    outs: Sequence[NamedMapping | None],
    sharding: Callable[[Value], NamedMapping | None],
) -> None:
    """Reshard `op`'s operands onto `device` and its results back to the global mesh (the module
    docstring); `sharding(v)` reads an operand's sharding (through barriers)."""
    mesh = global_mesh(module)
    if mesh is None:
        return
    single = NamedMapping(device, ())
    cursor = Cursor.before(op)
    for i, v in enumerate(op.operands):
        if _is_token(v):
            continue
        source = sharding(v) or NamedMapping.fully_replicated(mesh, v.type.rank)
        if source.mesh.name == device.name and equivalent(source, single):
            continue
        x = v
        if not (dims_replicated(source) and source.mesh.name == mesh.name):
            x = mark_split(cursor.create(
                "reshard", x, NamedMapping.fully_replicated(mesh, v.type.rank), {}, op
            ), op, SINGLE)
        op.set_operand(i, mark_split(cursor.create("reshard", x, single, {}, op), op, SINGLE))
    last = op
    for j, r in enumerate(op.results):
        if _is_token(r):
            continue
        replicated = NamedMapping.fully_replicated(mesh, r.type.rank)
        target = outs[j] if outs[j] is not None and not is_single_device(outs[j]) else replicated
        last = _reshard_users(r, replicated, last)
        if target != replicated:
            last = _reshard_users(last.result, target, last)
    for r in op.results:
        r.set_mapping(NamedMapping.fully_replicated(mesh, 0) if _is_token(r) else single)


def _reshard_users(v: Value, mapping: NamedMapping, after: Operation) -> Operation:
    """A reshard of `v` to `mapping` right after `after`, read by every other user of `v`."""
    new = Cursor.after(after).create("reshard", v, mapping, {}, after)
    mark_split(new, after, SINGLE)
    reshard = new.defining_op
    assert reshard is not None
    v.replace_uses_if(new, lambda use: use.op is not reshard)
    return reshard


def replicate_single_device(module: Module, warn: Callable[[str, object], None]) -> None:
    """shardc's per-device programs run every op on every device: a value placed on one device
    (a maximal mesh) is computed replicated on the global mesh instead (the same values, each
    device holding the whole tensor), said once per maximal mesh with `warn(message, loc)`. A
    module without a global mesh is left as it is."""
    mesh = global_mesh(module)
    if mesh is None:
        return
    said: set[str] = set()

    def replicate(m: NamedMapping, rank: int, loc: object) -> NamedMapping:
        if m.mesh.name not in said:
            said.add(m.mesh.name)
            warn(f"values placed on one device (@{m.mesh.name}) are computed replicated on "
                 f"every device of @{mesh.name}: shardc's per-device programs have no "
                 "single-device ops (the values are the same)", loc)
        return NamedMapping.fully_replicated(mesh, rank)

    for func in module.functions.values():
        for a in func.args:
            if is_single_device(a.mapping):
                a.set_mapping(replicate(a.mapping, a.type.rank, func.loc))
        for op in func.body:
            for r in op.results:
                if is_single_device(r.mapping):
                    r.set_mapping(replicate(r.mapping, r.type.rank, op.loc))
        for i, t in enumerate(func.result_types):
            m = getattr(t, "mapping", None)
            if is_single_device(m):
                func.result_types[i] = t.with_mapping(replicate(m, t.rank, func.loc))
