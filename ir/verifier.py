"""Module-level verification: every op against its definition, SSA order, meshes, terminators."""

from __future__ import annotations

from collections.abc import Container

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.ops import verify_operation
from shardc.ir.ops.manual_bodies import bodies_fixed
from shardc.ir.ops.registry import ATTRIBUTE_VERIFIERS, ELEMENTWISE, OPS


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


# Ops whose checks read the op alone (its name, operand and result types, attributes; no callee,
# region, use or enclosing function): the element-wise ops and these. Such an op passes if one
# with the same name, types and attribute objects passed.
_LOCAL_STRUCTURAL = frozenset({
    "constant", "bitcast_convert", "iota", "broadcast_in_dim", "reshape", "transpose",
    "concatenate", "slice", "pad", "reverse", "dot_general",
})
_local: frozenset[str] | None = None


def _local_ops() -> frozenset[str]:
    global _local
    if _local is None:
        elementwise = {name for name, d in OPS.items() if d.has(ELEMENTWISE)}
        _local = frozenset(elementwise | _LOCAL_STRUCTURAL)
    return _local


def _local_key(op: Operation, operands: tuple[Value, ...]) -> tuple:
    """What an op of `_local_ops` is verified on. Attributes by identity: within one walk every
    op (so every attribute value) stays alive, so equal ids are the same object, and the key
    taken after `verify_operation` holds the values as coerced (an op whose value coerces to a
    new object is verified afresh). An attribute with a verifier of its own (a foreign one,
    `ATTRIBUTE_VERIFIERS`) makes a key no other op shares: that verifier is not known to read
    the op alone."""
    attrs = op.attributes
    if not attrs:
        return (op.name, tuple([v.type for v in operands]), tuple([r.type for r in op.results]))
    if not ATTRIBUTE_VERIFIERS.keys().isdisjoint(attrs):
        return (op,)
    return (op.name, tuple([v.type for v in operands]), tuple([r.type for r in op.results]),
            tuple(attrs), tuple(map(id, attrs.values())))


def verify_function(func: Function, verified: Container[Operation] = (),
                    passed: set[tuple] | None = None) -> None:
    """Raise `VerifyError` (located) on the first problem. `verified`: ops known to pass
    every check here (their operands defined before them, their own checks, their results'
    meshes declared): the StableHLO line reader's repeats of an op it verified. `passed`: the
    `_local_key`s of ops of `func.module` that passed (shared by its functions' walks)."""
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
    local = _local_ops()
    if passed is None:
        passed = set()
    op = func.body.first  # (the linked list walked directly: this runs once per op imported)
    while op is not None:
        last = op
        if op in verified:
            for r in op.results:
                define(r)
            op = op.next
            continue
        operands = op.operands
        if not defined.issuperset(operands):
            i = next(i for i, v in enumerate(operands) if v not in defined)
            raise VerifyError(
                f"'{op.name}' op operand {i} is used before it is defined (or comes from "
                "another function)",
                op.loc,
            )
        if op.name not in local:
            verify_operation(op)
            if module is not None:
                check_result_meshes(module, op)
        elif _local_key(op, operands) not in passed:
            # (an op like one verified before in this walk passes: ~9 in 10 ops of a model's
            # layers repeat one; `_local_key` says what "like" takes)
            verify_operation(op)
            if module is not None:
                check_result_meshes(module, op)
            passed.add(_local_key(op, operands))  # (as coerced: see `_local_key`)
        defined.update(op.results)
        op = op.next
    if last is None or last.name != "return":
        raise VerifyError(f"function @{func.name} must end with a 'return' op", func.loc)


def verify_module(module: Module, verified: Container[Operation] = ()) -> None:
    """Raise `VerifyError` (located) on the first problem (`verified`: see verify_function)."""
    with bodies_fixed(module):  # (verifying changes no manual_computation)
        passed: set[tuple] = set()
        for func in module.functions.values():
            verify_function(func, verified, passed)
