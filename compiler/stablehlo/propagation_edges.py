"""Shardy's propagation-edge debug attributes, verified where they are read (issue 13).

    %0 = stablehlo.add %a, %b {sdy.propagation_edges = #sdy.propagation_edges<[
           {step-0 = [{"x" = operand-0 -> [operand-1, result-0]}]}]>, sdy.sharding = ...}

`sdy.propagation_edges` (on an op) is one `#sdy.propagation_edges<[...]>`;
`sdy.result_propagation_edges` and `sdy.block_arg_propagation_edges` are arrays of them. shardc
keeps them as written (they record how Shardy's propagation decided, and no pass reads them),
but an ill-formed one is an error at its op, as in Shardy: step indices non-negative and
distinct, no source among its targets, no target twice, value refs within the op's operands
and results, at least one referenced value sharded, and every axis in that sharding's mesh.
The text is read by `shardc.ir.propagation_edges` (propagation writes and reads it too).
"""

from __future__ import annotations

from typing import Any

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Operation
from shardc.ir.diagnostics import VerifyError
from shardc.ir.ops.registry import register_attribute_verifier
from shardc.ir.propagation_edges import PREFIX, Step, parse_edges, split_array

ON_OP = "sdy.propagation_edges"
ARRAYS = ("sdy.result_propagation_edges", "sdy.block_arg_propagation_edges")


def _check_steps(steps: list[Step]) -> None:
    """Shardy's `PropagationEdgesAttr::verify`."""
    seen: set[int] = set()
    for step in steps:
        if step.index < 0:
            raise VerifyError(f"propagation edges have negative step index: {step.index}")
        if step.index in seen:
            raise VerifyError(f"propagation edges have duplicate step index: {step.index}")
        seen.add(step.index)
        for edge in step.edges:
            if edge.source in edge.targets:
                raise VerifyError("propagation edges have a source that is the same as a target")
            if len(set(edge.targets)) != len(edge.targets):
                raise VerifyError(
                    f"propagation edges have duplicate targets for step index: {step.index} "
                    f"and axis: {edge.axis}"
                )


def _value(op: Operation, ref: tuple[str, int]):
    kind, index = ref
    values = op.operands if kind == "operand" else op.results
    return values[index] if index < len(values) else None


def _check_on_op(op: Operation, steps: list[Step]) -> None:
    """Shardy's `verifyPropagationEdgesShardingAttr`: refs in range, a sharding referenced,
    every axis in its mesh."""
    refs = [r for s in steps for e in s.edges for r in (e.source, *e.targets)]
    mappings = [m for r in refs if (v := _value(op, r)) is not None and (m := v.mapping)]
    if not mappings:
        raise VerifyError("expected propagation edges attr to reference a sharding")
    mesh = mappings[0].mesh
    if any(m.mesh.name != mesh.name for m in mappings):
        raise VerifyError("expected a common mesh for propagation edges attr")
    for step in steps:
        for edge in step.edges:
            if edge.axis not in dict(mesh.axes):
                raise VerifyError(
                    f'propagation edge axis "{edge.axis}" is not an axis of mesh @{mesh.name}'
                )
            if op.name == "func_data_flow_edge":
                continue  # Shardy lets its refs point past the op
            for kind, index in (edge.source, *edge.targets):
                count = op.num_operands if kind == "operand" else len(op.results)
                if index >= count:
                    raise VerifyError(
                        f"a propagation edge refers to {kind} {index}, but the op has {count} "
                        f"{kind}s"
                    )


def _text(value: Any) -> str | None:
    if isinstance(value, OpaqueAttr):
        return value.text
    return value if isinstance(value, str) else None


def verify_on_op(op: Operation, value: Any) -> None:
    text = _text(value)
    try:
        if text is None:
            raise VerifyError("expected #sdy.propagation_edges<[...]>")
        steps = parse_edges(text)
        _check_steps(steps)
        _check_on_op(op, steps)
    except VerifyError as e:
        raise VerifyError(f"'{op.name}' op attribute '{ON_OP}': {e.message}", op.loc) from None


def verify_array(op: Operation, value: Any, key: str) -> None:
    text = _text(value)
    try:
        if text is None or not text.strip().startswith("[") or not text.strip().endswith("]"):
            raise VerifyError("expected an array of #sdy.propagation_edges<[...]>")
        for element in split_array(text):
            if not element.strip().startswith(PREFIX):
                raise VerifyError("expected an array of #sdy.propagation_edges<[...]>")
            _check_steps(parse_edges(element))
    except VerifyError as e:
        raise VerifyError(f"'{op.name}' op attribute '{key}': {e.message}", op.loc) from None


register_attribute_verifier(ON_OP, verify_on_op)
for _key in ARRAYS:
    register_attribute_verifier(_key, lambda op, value, key=_key: verify_array(op, value, key))
