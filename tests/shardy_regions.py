"""Compare shardc's shardings of a native program with outlined regions (`while`, `case`) with
Shardy's shardings of the same program written in StableHLO with inline regions.

Both sides are flattened to the order Shardy prints: a function's ops top-down, a `while`/`case`
followed by the ops of its regions (cond then body; branches in order). Constants, iotas and
returns are left out (tests/shardy_compare.py says why). A sharding with no axes at all that is
open (`[{?}, {?}]`, or `[]` on a scalar) is the same as no sharding: Shardy writes one for every
result of an op once any result of it has a sharding, shardc writes none.
"""

from __future__ import annotations

import re

from shardc.ir.core import Function, Module
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.control import region_functions
from shardc.ir.types import DistributedTensorType

_SKIP = ("constant", "iota", "return")
_NAMES = {"func.call": "call"}


def _norm(text: str | None) -> str | None:
    """None for 'no axes, nothing closed' (`<@m, []>`, `<@m, [{?}, {?}]>`)."""
    if text is None:
        return None
    m = re.fullmatch(r"<@\w+, \[(.*)\]>", text)
    if m is not None and all(d.strip() == "{?}" for d in m.group(1).split(",") if d.strip()):
        return None
    return text


def _text(mapping: NamedMapping | None) -> str | None:
    return _norm(str(mapping)) if mapping is not None else None


def native_flat(module: Module) -> list[tuple[str, list[str | None]]]:
    """(op name, result shardings) in Shardy's print order, plus function signatures. Dead ops
    are left out: Shardy's rewrite driver erases them (passes/propagation/liveness.py)."""
    from shardc.passes.propagation.liveness import dead_ops

    regions = {n for op in module.walk() for n in region_functions(op)}
    out: list[tuple[str, list[str | None]]] = []

    def visit(func: Function) -> None:
        dead = dead_ops(func)
        for op in func.body:
            if id(op) in dead:
                continue
            if op.name not in _SKIP:
                out.append((op.name, [_text(r.mapping) for r in op.results]))
            for name in region_functions(op):
                callee = module.lookup_function(name)
                assert callee is not None
                visit(callee)

    for func in module.functions.values():
        if func.name in regions:
            continue
        out.append((f"@{func.name} args", [_text(a.mapping) for a in func.args]))
        out.append(
            (
                f"@{func.name} results",
                [
                    _text(t.mapping if isinstance(t, DistributedTensorType) else None)
                    for t in func.result_types
                ],
            )
        )
        visit(func)
    return out


def _per_value(attr: str) -> list[str]:
    body = attr[len("#sdy.sharding_per_value<[") : -2]
    return [s if s.startswith("<") else "<" + s for s in re.split(r">, <", body)] if body else []


def _fix(items: list[str]) -> list[str]:
    return [s if s.endswith(">") else s + ">" for s in items]


def shardy_flat(text: str) -> list[tuple[str, list[str | None]]]:
    """The same list for StableHLO text (Shardy's output), read with jaxlib's MLIR bindings."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    out: list[tuple[str, list[str | None]]] = []

    def shardings(attrs, key: str, n: int) -> list[str | None]:
        if key not in attrs:
            return [None] * n
        got = []
        for d in ir.ArrayAttr(attrs[key]):
            entries = ir.DictAttr(d)
            got.append(_norm(str(entries["sdy.sharding"])[len("#sdy.sharding") :]) if "sdy.sharding" in entries else None)
        return got

    def visit(op) -> None:
        name = op.operation.name
        short = _NAMES.get(name, name.split(".", 1)[1])
        short = "sharding_constraint" if short == "reshard" else short
        attrs = op.operation.attributes
        if short not in _SKIP:
            if short in ("sharding_constraint", "reshard"):  # the sharding is the op's own
                values = [_norm(str(attrs["sharding"]).removeprefix("#sdy.sharding"))]
            elif "sdy.sharding" in attrs:
                values = [_norm(s) for s in _fix(_per_value(str(attrs["sdy.sharding"])))]
            else:
                values = [None] * len(op.operation.results)
            out.append((short, values))
        if short in ("while", "case"):
            for region in op.operation.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        visit(inner)

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        for func in module.body.operations:
            if func.operation.name != "func.func":
                continue
            attrs = func.operation.attributes
            name = ir.StringAttr(attrs["sym_name"]).value
            n_args = len(func.operation.regions[0].blocks[0].arguments)
            n_res = len(ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value).results)
            out.append((f"@{name} args", shardings(attrs, "arg_attrs", n_args)))
            out.append((f"@{name} results", shardings(attrs, "res_attrs", n_res)))
            for op in func.operation.regions[0].blocks[0].operations:
                visit(op)
    return out


def compare_flat(ours, theirs) -> tuple[int, list[str]]:
    """(number of values compared, differences); a structural mismatch is one difference."""
    names_a = [n for n, _ in ours]
    names_b = [n for n, _ in theirs]
    if names_a != names_b:
        return 0, [f"op sequences differ:\n  shardc {names_a}\n  shardy {names_b}"]
    compared, diffs = 0, []
    for k, ((name, a), (_, b)) in enumerate(zip(ours, theirs)):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            compared += 1
            if x != y:
                diffs.append(f"{k} {name} #{i}: shardc {x} | shardy {y}")
    return compared, diffs
