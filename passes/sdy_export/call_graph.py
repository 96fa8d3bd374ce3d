"""Calls and functions as Shardy's call-graph passes see them.

- `calls(module)`: every `call` in the order of MLIR's post-order walk of the module (functions in
  module order; the calls inside an op's region functions before the op).
- `original_name(func)`: the `sdy.original_func_name` a copy made by Shardy's import keeps
  (else the function's own name); `manual_axes_text(func)`: its `sdy.func_manual_axes`.
- `arg_shardings` / `result_shardings`: Shardy's `getFuncArgShardings`/`getFuncResultShardings`:
  None when no argument (result) has a sharding on a non-maximal mesh, else one per argument,
  fully open where one is missing.
"""

from __future__ import annotations

from collections.abc import Iterator

from shardc.ir.attributes import OpaqueAttr, Symbol
from shardc.ir.core import Function, Module, Operation
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType

ORIGINAL_NAME = "sdy.original_func_name"
FUNC_MANUAL_AXES = "sdy.func_manual_axes"


def region_function_names(module: Module) -> set[str]:
    """Functions that stand for an op's regions (named by an op attribute other than a call's
    callee)."""
    out: set[str] = set()
    for func in module.functions.values():
        for op in func.body:
            if op.name in ("call", "composite"):
                continue
            for value in op.attributes.values():
                out.update(_symbols(value))
    return {n for n in out if n in module.functions}


def _symbols(value) -> list[str]:
    if isinstance(value, Symbol):
        return [value.name]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _symbols(v)]
    return []


def calls(module: Module) -> Iterator[Operation]:
    regions = region_function_names(module)

    def walk(func: Function) -> Iterator[Operation]:
        for op in list(func.body):
            if op.name != "call":
                for name in _symbols(list(op.attributes.values())):
                    if name in regions:
                        yield from walk(module.functions[name])
            if op.name == "call" and op.parent is not None:
                yield op

    for func in list(module.functions.values()):
        if func.name not in regions:
            yield from walk(func)


def callee(module: Module, op: Operation) -> Function:
    func = module.lookup_function(op.attr("callee").name)
    assert func is not None, "the verifier checks callees exist"
    return func


def _string(attr) -> str | None:
    if isinstance(attr, str):
        return attr
    if isinstance(attr, OpaqueAttr) and attr.text.startswith('"') and attr.text.endswith('"'):
        return attr.text[1:-1]
    return None


def original_name(func: Function) -> str:
    name = _string(func.attributes.get(ORIGINAL_NAME))
    return name if name is not None else func.name


def manual_axes_text(func: Function) -> str | None:
    attr = func.attributes.get(FUNC_MANUAL_AXES)
    return None if attr is None else str(getattr(attr, "text", attr))


def _maximal(m: NamedMapping) -> bool:
    return bool(getattr(m.mesh, "is_maximal", False))


def _per_value(mappings: list[NamedMapping | None], ranks: list[int]) -> (
    tuple[NamedMapping, ...] | None
):
    mesh = next((m.mesh for m in mappings if m is not None and not _maximal(m)), None)
    if mesh is None:
        return None
    return tuple(m if m is not None else NamedMapping.fully_open(mesh, r)
                 for m, r in zip(mappings, ranks, strict=True))


def arg_shardings(func: Function) -> tuple[NamedMapping, ...] | None:
    return _per_value([a.mapping for a in func.args], [a.type.rank for a in func.args])


def result_shardings(func: Function) -> tuple[NamedMapping, ...] | None:
    return _per_value(
        [t.mapping if isinstance(t, DistributedTensorType) else None for t in func.result_types],
        [t.rank for t in func.result_types],
    )
