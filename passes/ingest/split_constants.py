"""`split-constants`: give every user its own copy of a constant sub-computation.

A constant expression is a `constant` or `iota`, or a pure broadcast/reshape/slice/element-wise
op whose operands are all constant expressions. Shared constants would otherwise carry a
sharding from one user to an unrelated other; Shardy splits them before propagating
(`sdy-constant-or-scalar-splitter`) and so does shardc. Broadcasts of scalars are split too;
scalars themselves are never sharded and stay shared.

A `call` is a constant expression too when all its operands are and its callee is a *constant
function*: one whose every op maps constants to constants (a constant expression, a shape or
element-wise op, a call of a constant function; `return` aside). A RoPE table or a causal mask
built in a helper (`jax.jit` nested, or JAX hoisting a loop invariant into `call @_where`) is
such a call. Each user then gets its own call of its own copy of the callee (`@rope_table_0`,
`@rope_table_1`, ...: copies of its callees too, marked `sdy.original_func_name`, named as MLIR's
symbol table names them), as jaxlib 0.10.2's module-level splitter does: functions are visited
callees first, so a function's constness is known before its calls are met, and a copy of a
function that is not constant makes the original not constant either (by original name). The
originals left without a caller stay; pipelines drop them with `symbol-dce` as Shardy's does.

    %c = constant {value = dense<1.0>} : tensor<8xf32>
    %a = add %x, %c : tensor<8xf32>
    %b = multiply %y, %c : tensor<8xf32>
  becomes
    %c = constant {value = dense<1.0>} : tensor<8xf32>
    %a = add %x, %c : tensor<8xf32>
    %0 = constant {value = dense<1.0>} : tensor<8xf32>
    %b = multiply %y, %0 : tensor<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops import ELEMENTWISE, get_op_def
from shardc.ir.symbols import SymbolTable, callee_name, region_symbols
from shardc.passes.ingest.call_graph import clone_recursively, ops_in, original_name, post_order
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

_PRESERVING = ("broadcast_in_dim", "reshape", "slice")
# Every constant sub-computation starts at one of these (a broadcast of a scalar is split too).
_SOURCES = frozenset({"constant", "iota", "broadcast_in_dim"})


def _is_constant_expression(
    op: Operation, constants: set[int], calls: _Calls | None = None
) -> bool:
    """A constant or iota, or an op mapping constants to constants whose operands are all in
    `constants` (a call only with `calls`: the module's constant functions)."""
    if op.name in ("constant", "iota"):
        return True
    return _is_preserving(op, calls) and all(
        v.defining_op is not None and id(v.defining_op) in constants for v in op.operands
    )


def _is_preserving(op: Operation, calls: _Calls | None) -> bool:
    """`op` maps constant operands to constant results (Shardy's `isConstantPreserving`)."""
    if op.name == "call":
        return calls is not None and calls.is_constant(op)
    if op.name in _PRESERVING:
        return True
    op_def = get_op_def(op.name)
    return op_def is not None and op_def.has(ELEMENTWISE)


@dataclass
class _Calls:
    """The module-level state of one split: which functions are not constant (by original
    name), and the symbol tables that name the callees' copies."""

    module: Module
    non_constant: set[str] = field(default_factory=set)
    table: SymbolTable | None = None
    regions: SymbolTable | None = None
    copies: int = 0

    def __post_init__(self) -> None:
        self.table, self.regions = SymbolTable(self.module), SymbolTable(self.module)

    def is_constant(self, call: Operation) -> bool:
        callee = self.module.functions.get(callee_name(call) or "")
        return callee is not None and original_name(callee) not in self.non_constant

    def taint(self, op: Operation, func: Function, constants: set[int]) -> None:
        """`func` is not constant once it holds an op that maps constants to other values."""
        if op.name in ("return", "sharding_group") or id(op) in constants:
            return
        if not _is_preserving(op, self):
            self.non_constant.add(original_name(func))

    def retarget(self, copy: Operation) -> None:
        """A copied call calls a copy of its callee (Shardy's `cloneFuncRecursively`)."""
        callee = self.module.functions[callee_name(copy) or ""]
        assert self.table is not None and self.regions is not None
        copy.attributes["callee"] = Symbol(
            clone_recursively(self.module, callee, self.table, self.regions)
        )
        self.copies += 1


def _is_scalar_expansion(op: Operation) -> bool:
    return op.name == "broadcast_in_dim" and op.operand(0).type.rank == 0


def _clone_tree(
    v: Value,
    before: Operation | None,
    mapping: dict[int, Value],
    sources: dict[int, Operation] | None = None,
    calls: _Calls | None = None,
) -> Value:
    """Clone the sub-computation producing `v` right before `before`, or with `before=None`
    each op right before the op it copies (as Shardy does; scalars stay shared). A copied call
    calls a copy of its callee."""
    if v.type.rank == 0 or id(v) in mapping:
        return mapping.get(id(v), v)
    op = v.defining_op
    assert op is not None
    operands = [
        _clone_tree(o, before, mapping, sources, calls) if o.defining_op is not None else o
        for o in op.operands
    ]
    copy = op.clone(operands)
    if op.name == "call" and calls is not None:
        calls.retarget(copy)
    if sources is not None:
        sources[id(copy)] = sources.get(id(op), op)
    anchor = op if before is None else before
    anchor.parent.insert_before(anchor, copy)  # type: ignore[union-attr]
    for old, new in zip(op.results, copy.results):
        mapping[id(old)] = new
    for old, new in zip(op.results, copy.results):  # the copy joins the original's groups
        for group in [u.op for u in old.uses if u.op.name == "sharding_group"]:
            anchor.parent.insert_before(anchor, group.clone([new]))  # type: ignore[union-attr]
    return mapping[id(v)]


def _one_use(op: Operation) -> bool:
    """`op` has a single use and is no call (a copied call calls a copy of its callee: not the
    same op)."""
    if op.name == "call":
        return False
    uses = 0
    for r in op.results:
        uses += len(r.uses)
    return uses == 1


def _sole_user_copy(op: Operation, constants: set[int], expansions: set[int]) -> bool:
    """`op` has one use and no operand to copy with it (nothing but scalars or values from
    outside the constant sub-computations): its copy for that use, right before it, would be
    the same op in the same place, and `op` would be erased."""
    if not _one_use(op):
        return False
    for o in op.operands:
        d = o.defining_op
        if d is not None and o.type.rank > 0 and (id(d) in constants or id(d) in expansions):
            return False
    return True


def _sole_user_tree(v: Value, out: list[Operation]) -> bool:
    """Whether the sub-computation `_clone_tree` would copy for `v` is used by nothing but its
    one user: each of its ops has a single use and is no call (`_one_use`). Its ops go into
    `out` in the order `_clone_tree` makes their copies."""
    op = v.defining_op
    assert op is not None
    if not _one_use(op):
        return False
    for o in op.operands:
        if o.defining_op is not None and o.type.rank > 0 and not _sole_user_tree(o, out):
            return False
    out.append(op)
    return True


def _move_before(ops: list[Operation], user: Operation) -> None:
    """Move a sub-computation only `user` uses right before it: what copying it there and
    erasing it (as `_clone_tree` and `split_function` would) leaves, without the copies (858 of
    the 1,402 sub-computations the 32-layer Llama step's split copied, 1,721 of 14,617 ops)."""
    block = user.parent
    assert block is not None
    for op in ops:
        op.parent._unlink(op)  # type: ignore[union-attr]
        block.insert_before(user, op)
        _rename_as_copy(op)


def _rename_as_copy(op: Operation) -> None:
    """The result names `Operation.clone` gives a copy (numbered names are dropped)."""
    for r in op.results:
        if (r.name_hint or "").isdigit():
            r.name_hint = None


def split_function(
    func: Function,
    at_original: bool = False,
    sources: dict[int, Operation] | None = None,
    calls: _Calls | None = None,
    within: Function | None = None,
) -> int:
    """Clone every shared constant sub-computation per user; the clones go right before their
    user, or with `at_original` each right before the op it copies (where Shardy's
    `sdy-constant-or-scalar-splitter` puts them, so that merging them back restores the order
    of the program). `sources`, if given, maps each clone (by id) to the op it copies. With
    `calls` (see `split_module`) calls of constant functions are constant expressions and
    `within` (default `func`) is the function whose constness `func`'s ops decide."""
    if calls is None and not any(op.name in _SOURCES for op in func.body):
        return 0  # no constant, iota or broadcast: nothing to split (a walk over names only)
    constants: set[int] = set()
    expansions: set[int] = set()
    members: list[Operation] = []
    tree_ops: list[Operation] = []
    clones = 0
    for op in list(func.body):
        if op.name == "sharding_group":
            continue
        if _is_constant_expression(op, constants, calls):
            constants.add(id(op))
            members.append(op)
            continue
        if calls is not None:
            calls.taint(op, within or func, constants)
        if _is_scalar_expansion(op):
            expansions.add(id(op))
            members.append(op)
            continue
        for i, v in enumerate(op.operands):
            d = v.defining_op
            if d is not None and (id(d) in constants or id(d) in expansions) and v.type.rank > 0:
                tree_ops.clear()
                if at_original and _sole_user_copy(d, constants, expansions):
                    _rename_as_copy(d)  # the copy would be `d` itself, at `d`'s place
                elif not at_original and sources is None and _sole_user_tree(v, tree_ops):
                    _move_before(tree_ops, op)
                else:
                    tree = _clone_tree(v, None if at_original else op, {}, sources, calls)
                    op.set_operand(i, tree)
                clones += 1
        if calls is not None and op.attributes:  # region functions are part of `func`
            for name in region_symbols(op):  # (MLIR's pre-order walk)
                region = calls.module.functions.get(name)
                if region is not None:
                    clones += split_function(region, at_original, sources, calls, within or func)
    for op in reversed(members):
        if all(u.op.name == "sharding_group" for r in op.results for u in r.uses):
            for r in op.results:
                for use in list(r.uses):
                    use.op.erase()
            op.erase()
    return clones


def split_module(
    module: Module, at_original: bool = False, sources: dict[int, Operation] | None = None
) -> int:
    """`split_function` over the module, calls of constant functions included: functions
    callees first (their region functions with them). Returns how many calls were copied (their
    originals may be left without a caller)."""
    calls = _Calls(module)
    for func in post_order(module):
        split_function(func, at_original, sources, calls)
    return calls.copies


def constant_functions(module: Module) -> set[str]:
    """The functions whose every op maps constants to constants (their calls with constant
    operands are constant expressions), as `split_module` decides it; nothing is changed."""
    calls = _Calls(module)
    for func in post_order(module):
        constants: set[int] = set()
        for op in ops_in(module, func):  # its region functions' ops are part of it
            if _is_constant_expression(op, constants, calls):
                constants.add(id(op))
            else:
                calls.taint(op, func, constants)
    return {f.name for f in post_order(module) if original_name(f) not in calls.non_constant}


# Marks a native `constant` printed as `sdy.constant` (Shardy's splitter turns every
# `stablehlo.constant` into one, which no folding merges; the StableHLO printer reads it).
SDY_CONSTANT_MARKER = "sdy.constant"


def mark_sdy_constants(module: Module) -> None:
    for func in module.functions.values():
        for op in func.body:
            if op.name == "constant":
                op.attributes[SDY_CONSTANT_MARKER] = True


@register_pass("split-constants")
@dataclass(frozen=True)
class SplitConstants(Pass):
    """Clone constant sub-computations per user so they do not link unrelated shardings.
    `at-original`: the clones go right before what they copy (as Shardy places them);
    `sdy-constants`: every constant becomes an `sdy.constant`."""

    at_original: bool = False
    sdy_constants: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        split_module(module, at_original=self.at_original)
        if self.sdy_constants:
            mark_sdy_constants(module)


register_alias(
    "sdy-constant-or-scalar-splitter", "split-constants", at_original="true", sdy_constants="true"
)
