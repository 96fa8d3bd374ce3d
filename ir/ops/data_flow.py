"""Shardy's data-flow ops that shardc keeps as ops: named computations and explicit edges.

    %r = named_computation %x, %w {body = @relu, name = "relu"} : tensor<16x256xf32>
    %e = data_flow_edge %r : tensor<16x256xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>

`named_computation` (Shardy's `sdy.named_computation<"name">`, what `sdy-import-func-calls` makes
of each `func.call`) runs its body once on its operands, like a call of a function that only
it calls. The body is outlined into a private function (as `while`/`case` regions are): its
arguments' shardings are the op's `in_shardings`, its declared results' shardings the
`out_shardings`, which are also the shardings of the op's results. Propagation treats it as a
data-flow op: operand k flows into body argument k, body result k into result k.

`data_flow_edge` (Shardy's `sdy.data_flow_edge`) is the identity on its operand, the *owner* of a
data-flow edge (a result of a data-flow op, or a body argument of a named or manual
computation). Its result carries the sharding of the edge's targets while propagation runs
with explicit edges (`sdy-add-data-flow-edges` puts them in, `sdy-sink-data-flow-edges` moves
their shardings back onto the owners and removes them); every use of the owner goes through it.

`func_data_flow_edge` (Shardy's `sdy.func_data_flow_edge`) is the same for the edges between
functions: its operand is an argument of a function (the edge from each call's operand) or a
result of a `call` (the edge from the callee's returned value); `sdy-add-func-data-flow-edges`
and `sdy-sink-func-data-flow-edges` put them in and take them out. Its sharding is written as
any op's, `{sdy.sharding = #sdy.sharding_per_value<[...]>}`.
"""

from __future__ import annotations

from shardc.ir.core import Function, Operation, Value
from shardc.ir.ops.func import check_callee_signature
from shardc.ir.ops.registry import OpDef, attr, op_error, register, req
from shardc.ir.types import DistributedTensorType, TensorType

NAMED = "named_computation"
EDGE = "data_flow_edge"
FUNC_EDGE = "func_data_flow_edge"


def explicit_edge(owner: Value) -> Operation | None:
    """The `data_flow_edge` op standing for `owner`'s edge, if the program has one."""
    for use in owner.uses:
        if use.op.name == EDGE:
            return use.op
    return None


def body_of(op: Operation) -> Function | None:
    """The outlined body of a `named_computation` (None while the op is not in a module)."""
    func = op.function
    module = func.module if func is not None else None
    return module.lookup_function(attr(op, "body").name) if module is not None else None


def sync_body_results(op: Operation, body: Function) -> None:
    """The body's declared results take the op's result shardings (its `out_shardings`)."""
    for j, r in enumerate(op.results):
        t = body.result_types[j]
        m = r.mapping
        plain = TensorType(t.shape, t.dtype)
        body.result_types[j] = plain if m is None else DistributedTensorType(t.shape, t.dtype, m)


def _verify_named(op: Operation) -> None:
    name = attr(op, "name")
    if not name:
        raise op_error(op, "needs a non-empty 'name'")
    body = body_of(op)
    if body is None:
        if op.function is not None and op.function.module is not None:
            raise op_error(op, f"body @{attr(op, 'body').name} is not defined in this module")
        return
    check_callee_signature(op, body.name)


# Ops of Shardy's sdy dialect: an edge's input may not be one of their results, but for the
# data-flow ops that own edges themselves.
_SDY_OPS = frozenset({
    "sharding_constraint", "reshard", "propagation_barrier", "sharding_group", EDGE,
    "all_gather", "all_slice", "all_to_all", "collective_permute", "all_reduce",
    "reduce_scatter", "sharded_to_unreduced", "replicated_to_unreduced",
})


def _verify_edge(op: Operation) -> None:
    source = op.operand(0)
    if len(source.uses) != 1:
        raise op_error(op, "expected input of sdy.data_flow_edge to have a single user")
    d = source.defining_op
    if d is not None and d.name in _SDY_OPS:
        raise op_error(op, "expected input of sdy.data_flow_edge to not be defined by an "
                           "SdyDialect op (other than an sdy.named_computation).")


def _verify_func_edge(op: Operation) -> None:
    source = op.operand(0)
    if len(source.uses) != 1:
        raise op_error(op, "expected operand of sdy.func_data_flow_edge to have a single user")
    d = source.defining_op
    if d is None:
        if not isinstance(source.owner, Function):
            raise op_error(op, "expected operand of sdy.func_data_flow_edge to be a block "
                               "argument of a func op.")
    elif d.name != "call":
        raise op_error(op, "expected operand of sdy.func_data_flow_edge to be a result of call "
                           "op.")


def _infer_edge(op: Operation) -> list[TensorType]:
    t = op.operand(0).type
    return [TensorType(t.shape, t.dtype)]


register(
    OpDef(
        NAMED,
        None,
        None,
        {"name": req("str"), "body": req("symbol")},
        None,
        _verify_named,
        summary="run the outlined body once on the operands (Shardy's sdy.named_computation)",
    )
)
register(
    OpDef(
        EDGE,
        1,
        1,
        {},
        _infer_edge,
        _verify_edge,
        summary="identity; its result holds the sharding of a data-flow edge's targets",
    )
)
register(
    OpDef(
        FUNC_EDGE,
        1,
        1,
        {},
        _infer_edge,
        _verify_func_edge,
        summary="identity; its result holds the sharding of a function argument's or call "
                "result's edge",
    )
)
