"""Module-level verification: every op against its definition, SSA order, meshes, terminators."""

from __future__ import annotations

from collections.abc import Container

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.ops import verify_operation
from shardc.ir.ops.manual_bodies import bodies_fixed


def _check_mapping_mesh(module: Module, mapping, loc, what: str) -> None:
    if mapping is None or mapping.mesh.inline:
        return
    declared = module.meshes.get(mapping.mesh.name)
    if declared is None:
        raise VerifyError(f"{what} uses mesh @{mapping.mesh.name}, which is not declared", loc)
    if declared != mapping.mesh:
        raise VerifyError(
            f"{what} uses a mesh named @{mapping.mesh.name} that differs from the declared one", loc
        )


def _check_token_mapping(mapping, dtype: str, loc, what: str) -> None:
    """A token has no dims: its sharding names no replicated or unreduced axes (Shardy)."""
    if dtype == "token" and mapping is not None and (mapping.replicated or mapping.unreduced):
        raise VerifyError(f"'func.func' op {what} - non-shaped tensors can only have a sharding "
                          "with rank 0 and no replicated or unreduced axes", loc)


def check_result_meshes(module: Module, op: Operation) -> None:
    """Raise `VerifyError` at `op` if a result's sharding names an undeclared mesh."""
    meshes = module.meshes
    for r in op.results:
        m = r.mapping
        if m is None or meshes.get(m.mesh.name) is m.mesh:
            continue  # (the common case, without building the message: once per op verified)
        _check_mapping_mesh(module, m, op.loc, f"result of '{op.name}'")


def verify_function(func: Function, verified: Container[Operation] = ()) -> None:
    """Raise `VerifyError` (located) on the first problem. `verified`: ops known to pass
    every check here (their operands defined before them, their own checks, their results'
    meshes declared): the StableHLO line reader's repeats of an op it verified."""
    module = func.module
    defined: set[Value] = set(func.args)  # (values hash by identity)
    for i, a in enumerate(func.args):
        _check_token_mapping(a.mapping, a.type.dtype, func.loc, f"arg {i}")
    for i, t in enumerate(func.result_types):
        _check_token_mapping(getattr(t, "mapping", None), t.dtype, func.loc, f"result {i}")
    if module is not None:
        for i, a in enumerate(func.args):
            _check_mapping_mesh(module, a.mapping, func.loc, f"argument {i} of @{func.name}")
        for i, t in enumerate(func.result_types):
            _check_mapping_mesh(
                module, getattr(t, "mapping", None), func.loc, f"result {i} of @{func.name}"
            )
    last: Operation | None = None
    define = defined.add
    op = func.body.first  # (the linked list walked directly: this runs once per op imported)
    while op is not None:
        last = op
        if op in verified:
            for r in op.results:
                define(r)
            op = op.next
            continue
        for i, v in enumerate(op.operands):
            if v not in defined:
                raise VerifyError(
                    f"'{op.name}' op operand {i} is used before it is defined (or comes from "
                    "another function)",
                    op.loc,
                )
        verify_operation(op)
        if module is not None:
            check_result_meshes(module, op)
        defined.update(op.results)
        op = op.next
    if last is None or last.name != "return":
        raise VerifyError(f"function @{func.name} must end with a 'return' op", func.loc)


def verify_module(module: Module, verified: Container[Operation] = ()) -> None:
    """Raise `VerifyError` (located) on the first problem (`verified`: see verify_function)."""
    with bodies_fixed(module):  # (verifying changes no manual_computation)
        for func in module.functions.values():
            verify_function(func, verified)
