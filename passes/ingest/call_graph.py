"""The call graph as Shardy's call-graph passes walk it (`walkCalls`, `cloneFuncRecursively`).

A function's *region functions* (the outlined bodies of its `while`, `case`, named computations,
...) are part of it: MLIR keeps them inline, so a call inside a loop body is a call of the
function that holds the loop. `post_order` lists the other functions callees first (MLIR's
`CallGraph` in post order, as `walkCalls` iterates it); `calls_in` lists a function's calls in
the order a walk of its regions meets them; `calls` lists every call of the module in the order
of MLIR's post-order walk (the calls inside an op's region functions before the op).
"""

from __future__ import annotations

from collections.abc import Iterator

from shardc.ir.attributes import OpaqueAttr, Symbol
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.symbols import (
    SymbolTable,
    callee_name,
    clone_with_regions,
    region_symbols,
)
from shardc.ir.types import DistributedTensorType

# The attribute Shardy's call-graph passes put on a function copy: the name it was copied from.
ORIGINAL_NAME = "sdy.original_func_name"
# The manual axes of a function outlined from a manual computation's body.
FUNC_MANUAL_AXES = "sdy.func_manual_axes"


def original_name(func: Function) -> str:
    """`sdy.original_func_name` if the function has one, else its name."""
    value = func.attributes.get(ORIGINAL_NAME)
    if isinstance(value, OpaqueAttr):
        text = value.text
        return text[1:-1] if text.startswith('"') and text.endswith('"') else text
    return value if isinstance(value, str) else func.name


def manual_axes_text(func: Function) -> str | None:
    """The function's `sdy.func_manual_axes` as text (None without one)."""
    value = func.attributes.get(FUNC_MANUAL_AXES)
    return None if value is None else str(getattr(value, "text", value))


def open_filled(mappings: list[NamedMapping | None], ranks: list[int]) -> tuple | None:
    """Shardy's per-value sharding lists: None when no entry has a sharding on a non-maximal
    mesh, else every missing entry fully open on the first such entry's mesh."""
    mesh = next((m.mesh for m in mappings if m is not None and not m.mesh.is_maximal), None)
    if mesh is None:
        return None
    return tuple(
        m if m is not None else NamedMapping.fully_open(mesh, r) for m, r in zip(mappings, ranks)
    )


def arg_shardings(func: Function) -> list | None:
    """Shardy's `getFuncArgShardings`: the arguments' shardings (`open_filled`)."""
    return open_filled([a.mapping for a in func.args], [a.type.rank for a in func.args])


def result_shardings(func: Function) -> list | None:
    """Shardy's `getFuncResultShardings`: the declared results' shardings (`open_filled`)."""
    return open_filled(
        [t.mapping if isinstance(t, DistributedTensorType) else None for t in func.result_types],
        [t.rank for t in func.result_types],
    )


def region_functions(module: Module) -> set[str]:
    """Functions some op runs as a region or body (not by `call`)."""
    out: set[str] = set()
    functions = module.functions
    for func in functions.values():
        for op in func.body:
            if op.attributes:  # (most ops have none: this walk runs several times a pipeline)
                for name in region_symbols(op):
                    if name in functions:
                        out.add(name)
    return out


def ops_in(module: Module, func: Function) -> list[Operation]:
    """`func`'s ops with its region functions' ops where their op stands (pre-order)."""
    out: list[Operation] = []

    def walk(f: Function, active: set[str]) -> None:
        for op in f.body:
            out.append(op)
            if not op.attributes:
                continue  # (no region: most ops have no attribute)
            for name in region_symbols(op):
                region = module.functions.get(name)
                if region is not None and name not in active:
                    walk(region, active | {name})

    walk(func, {func.name})
    return out


def calls_in(module: Module, func: Function) -> list[Operation]:
    return [op for op in ops_in(module, func) if op.name == "call"]


def calls(module: Module) -> Iterator[Operation]:
    """Every call of the module, in MLIR's post-order walk: functions in module order, the
    calls inside an op's region functions before the op."""
    regions = region_functions(module)

    def walk(func: Function) -> Iterator[Operation]:
        for op in list(func.body):
            if op.name == "call":
                if op.parent is not None:
                    yield op
                continue
            if not op.attributes:
                continue  # (no region)
            for name in region_symbols(op):
                if name in regions:
                    yield from walk(module.functions[name])

    for func in list(module.functions.values()):
        if func.name not in regions:
            yield from walk(func)


def callee(module: Module, op: Operation) -> Function:
    """The function a `call` calls (the verifier checks it exists)."""
    func = module.lookup_function(callee_name(op) or "")
    assert func is not None, "the verifier checks callees exist"
    return func


def post_order(module: Module) -> list[Function]:
    """The functions that are not region functions, every callee before its callers: MLIR's
    `CallGraph` in post order. Its external node leads to every function that is public or
    that no call names, in module order; the walk goes depth first along calls in the order
    they are met. Functions on a call cycle are listed once."""
    return _call_graph(module)[0]


def _call_graph(module: Module) -> tuple[list[Function], dict[str, list[Operation]]]:
    """`post_order`, and `calls_in` of each function it lists (one walk of the module's ops:
    the pass that checks the graph for cycles reads both, and walks made per pass were a
    tenth of the compile pipeline's time on a 3,000-op program)."""
    functions = module.functions
    # Per function, its calls and the region functions its ops run, in op order (a call
    # before the regions it names besides its callee, as `ops_in` meets them).
    steps: dict[str, list[Operation | str]] = {}
    regions: set[str] = set()
    for func in functions.values():
        seq: list[Operation | str] = []
        for op in func.body:
            if op.name == "call":
                seq.append(op)
            if not op.attributes:
                continue  # (no region: most ops have no attribute)
            for name in region_symbols(op):
                if name in functions:
                    regions.add(name)
                    seq.append(name)
        steps[func.name] = seq

    def calls_of_func(func: Function) -> list[Operation]:
        out: list[Operation] = []

        def walk(name: str, active: set[str]) -> None:
            for step in steps[name]:
                if step.__class__ is str:
                    if step not in active:
                        walk(step, active | {step})  # type: ignore[arg-type]
                else:
                    out.append(step)  # type: ignore[arg-type]

        walk(func.name, {func.name})
        return out

    nodes = [f for f in functions.values() if f.name not in regions]
    calls_of = {f.name: calls_of_func(f) for f in nodes}
    called = {callee_name(call) for f in nodes for call in calls_of[f.name]}
    roots = [f for f in nodes if not f.is_private or f.name not in called]
    out: list[Function] = []
    seen: set[str] = set()

    def visit(f: Function) -> None:
        seen.add(f.name)
        if f.name not in calls_of:
            calls_of[f.name] = calls_in(module, f)
        for call in calls_of[f.name]:
            callee = functions.get(callee_name(call) or "")
            if callee is not None and callee.name not in seen:
                visit(callee)
        out.append(f)

    for f in roots + nodes:
        if f.name not in seen:
            visit(f)
    return out, calls_of


def clone_recursively(
    module: Module, func: Function, table: SymbolTable, regions: SymbolTable
) -> str:
    """Shardy's `cloneFuncRecursively`: a copy of `func` (marked with its original name) whose
    calls call copies of their callees, made the same way; each copy is inserted through
    `table` after the copies it calls. Returns the copy's name."""
    copy = clone_with_regions(module, func, func.name, regions)
    copy.attributes[ORIGINAL_NAME] = original_name(func)
    for call in calls_in(module, copy):
        callee = module.functions.get(callee_name(call) or "")
        if callee is not None:
            call.attributes["callee"] = Symbol(clone_recursively(module, callee, table, regions))
    return table.insert(copy)


def check_acyclic(module: Module) -> list[Function]:
    """A recursive call (a function reaching itself through calls) cannot be given a copy per
    call site: a located error at the call that closes the cycle. Returns `post_order`."""
    return checked_call_graph(module)[0]


def checked_call_graph(module: Module) -> tuple[list[Function], dict[str, list[Operation]]]:
    """`check_acyclic`, and `calls_in` of each function of the post order (by name): what the
    passes that give call sites their own copies walk, from one walk of the module."""
    order, calls_of = _call_graph(module)
    state: dict[str, int] = {}  # 1: on the stack, 2: done

    def visit(f: Function) -> None:
        state[f.name] = 1
        if f.name not in calls_of:
            calls_of[f.name] = calls_in(module, f)
        for call in calls_of[f.name]:
            callee = module.functions.get(callee_name(call) or "")
            if callee is None:
                continue
            if state.get(callee.name) == 1:
                raise PassError(
                    f"@{f.name} calls @{callee.name} recursively; a call graph with cycles cannot "
                    "be flattened into one copy per call site",
                    call.loc,
                )
            if callee.name not in state:
                visit(callee)
        state[f.name] = 2

    for f in order:
        if f.name not in state:
            visit(f)
    return order, calls_of
