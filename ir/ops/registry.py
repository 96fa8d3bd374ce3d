"""The op registry: one `OpDef` per op name (operands, attributes, shape inference, verifier).

One generic `Operation` class plus this table, looked up by name (no metaclasses). Passes,
sharding rules and executor kernels keep their own tables keyed by the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shardc.ir.attributes import AllToAllParam, DenseElements, Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ShardcError, VerifyError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.types import TensorType

# Traits an op can have.
ELEMENTWISE = "elementwise"
TERMINATOR = "terminator"
SHARDING = "sharding"  # sharding_constraint, reshard, ...: identity on data
COLLECTIVE = "collective"
NO_RESULTS = "no_results"


@dataclass(frozen=True)
class AttrSpec:
    """Kind of an attribute: int, ints, int_groups, bool, str, float, keyword, symbol, dense,
    axes, axes_per_dim, a2a_params, mapping, mappings or any. Optional attributes have
    `required=False` and a `default`."""

    kind: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()


def req(kind: str, *choices: str) -> AttrSpec:
    return AttrSpec(kind, True, None, tuple(choices))


def opt(kind: str, default: Any, *choices: str) -> AttrSpec:
    return AttrSpec(kind, False, default, tuple(choices))


InferFn = Callable[[Operation], list[TensorType] | None]
VerifyFn = Callable[[Operation], None]


@dataclass(frozen=True)
class OpDef:
    """What an op is. `num_operands`/`num_results` None means variadic.

    `infer(op)` returns the result types the operands and attributes imply (shape and dtype
    are checked against the written types), or None where the written type is authoritative.
    """

    name: str
    num_operands: int | None
    num_results: int | None
    attrs: dict[str, AttrSpec] = field(default_factory=dict)
    infer: InferFn | None = None
    verify: VerifyFn | None = None
    traits: frozenset[str] = frozenset()
    summary: str = ""

    def has(self, trait: str) -> bool:
        return trait in self.traits


OPS: dict[str, OpDef] = {}


def register(op_def: OpDef) -> OpDef:
    assert op_def.name not in OPS, op_def.name
    OPS[op_def.name] = op_def
    return op_def


def get_op_def(name: str) -> OpDef | None:
    return OPS.get(name)


def op_error(op: Operation, message: str) -> VerifyError:
    return VerifyError(f"'{op.name}' op {message}", op.loc)


# ----- attribute coercion -------------------------------------------------------------------


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def coerce_attr(op_name: str, key: str, spec: AttrSpec, value: Any) -> Any:
    """Check `value` fits `spec` and return it in its canonical typed form."""

    def bad(expected: str) -> VerifyError:
        return VerifyError(f"'{op_name}' op attribute '{key}' must be {expected}")

    kind = spec.kind
    if kind == "any" or isinstance(value, OpaqueAttr):
        return value
    if kind == "int":
        if _as_int(value) is None:
            raise bad("an integer")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if kind == "ints":
        if not isinstance(value, tuple) or any(_as_int(v) is None for v in value):
            raise bad("an array of integers, e.g. [0, 1]")
        return value
    if kind == "int_groups":
        if not isinstance(value, tuple) or any(
            not isinstance(g, tuple) or any(_as_int(v) is None for v in g) for g in value
        ):
            raise bad("an array of integer arrays, e.g. [[0, 1], [2, 3]]")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if kind == "keyword":
        word = value.word if isinstance(value, Keyword) else None
        if word is None or (spec.choices and word not in spec.choices):
            raise bad("one of " + ", ".join(spec.choices) if spec.choices else "a keyword")
        return value
    if kind == "symbol":
        if not isinstance(value, Symbol):
            raise bad("a symbol reference like @f")
        return value
    if kind == "dense":
        if not isinstance(value, DenseElements):
            raise bad("a dense<...> literal")
        return value
    if kind == "axes":
        return _coerce_axes(value, bad)
    if kind == "mapping":
        if not isinstance(value, NamedMapping):
            raise bad('a sharding like <@mesh, [{"x"}, {}]>')
        return value
    if kind == "mappings":
        if not isinstance(value, tuple) or any(not isinstance(v, NamedMapping) for v in value):
            raise bad('an array of shardings like [<@mesh, [{"x"}]>]')
        return value
    if kind == "a2a_params":
        if not isinstance(value, tuple) or any(not isinstance(v, AllToAllParam) for v in value):
            raise bad('an array of all_to_all moves, e.g. [{"x"}: 0->1]')
        return value
    if kind == "axes_per_dim":
        if not isinstance(value, tuple):
            raise bad('an array of axis lists, e.g. [["x"], []]')
        return tuple(_coerce_axes(v, bad) for v in value)
    raise AssertionError(f"unknown attribute kind {kind}")


def _coerce_axes(value: Any, bad: Callable[[str], VerifyError]) -> tuple[AxisRef, ...]:
    if not isinstance(value, tuple):
        raise bad('an array of axes, e.g. ["x", "y":(1)2]')
    out = []
    for v in value:
        if isinstance(v, str):
            out.append(AxisRef(v))
        elif isinstance(v, AxisRef):
            out.append(v)
        else:
            raise bad('an array of axes, e.g. ["x", "y":(1)2]')
    return tuple(out)


def coerce_attributes(op_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Type-check a parsed attribute dict against the op's definition (unknown op: unchanged)."""
    op_def = OPS.get(op_name)
    if op_def is None:
        return attrs
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        spec = op_def.attrs.get(key)
        if spec is None:
            if "." in key or isinstance(value, OpaqueAttr):
                out[key] = value  # foreign (imported) attribute: kept verbatim
                continue
            known = ", ".join(op_def.attrs) or "none"
            raise VerifyError(f"'{op_name}' op has no attribute '{key}' (known: {known})")
        out[key] = coerce_attr(op_name, key, spec, value)
    return out


# ----- verification ---------------------------------------------------------------------------


def attr(op: Operation, key: str) -> Any:
    """The attribute value, or the op definition's default when it was not written."""
    if key in op.attributes:
        return op.attributes[key]
    op_def = OPS[op.name]
    return op_def.attrs[key].default


# Verifiers of foreign (dialect-prefixed) attributes, keyed by attribute name and registered by the
# layer that understands them (shardc.passes.propagation.rules registers `sdy.sharding_rule`). They
# run wherever an op is verified, so a bad attribute is an error at its op's line whether or not a
# pass would read it.
ATTRIBUTE_VERIFIERS: dict[str, Callable[[Operation, Any], None]] = {}


def register_attribute_verifier(key: str, verify: Callable[[Operation, Any], None]) -> None:
    ATTRIBUTE_VERIFIERS[key] = verify


def verify_operation(op: Operation) -> None:
    """Check one op against its definition; raises VerifyError located at the op."""
    op_def = OPS.get(op.name)
    if op_def is None:
        raise VerifyError(f"unknown op '{op.name}'", op.loc)
    n = op_def.num_operands
    if n is not None and op.num_operands != n:
        raise op_error(op, f"takes {n} operand{'s' if n != 1 else ''}, got {op.num_operands}")
    r = op_def.num_results
    if r is not None and len(op.results) != r:
        raise op_error(op, f"has {r} result{'s' if r != 1 else ''}, got {len(op.results)}")
    try:
        for key, spec in op_def.attrs.items():
            if key in op.attributes:
                op.attributes[key] = coerce_attr(op.name, key, spec, op.attributes[key])
            elif spec.required:
                raise op_error(op, f"needs attribute '{key}'")
        expected = op_def.infer(op) if op_def.infer is not None else None
        if expected is not None:
            for i, (want, got) in enumerate(zip(expected, op.results)):
                if want is None:
                    continue
                if want.shape != got.type.shape or want.dtype != got.type.dtype:
                    raise op_error(
                        op,
                        f"result {i} has type {got.type.tensor}, but its operands and "
                        f"attributes give {want.tensor}",
                    )
        if op_def.verify is not None:
            op_def.verify(op)
        for key, value in op.attributes.items():
            check = ATTRIBUTE_VERIFIERS.get(key)
            if check is not None:
                check(op, value)
    except ShardcError as e:
        if e.loc is None:
            e.loc = op.loc
        raise


def infer_result_types(op_name: str, operand_types, attributes, declared=None):
    """Result types for building an op whose types are implied by operands and attributes."""
    from shardc.ir.core import Value  # local: only used to build a probe op

    op_def = OPS[op_name]
    probe_values = [Value(t, None, i) for i, t in enumerate(operand_types)]  # type: ignore[arg-type]
    probe = Operation(op_name, probe_values, declared or [], attributes)
    types = op_def.infer(probe) if op_def.infer is not None else None
    if types is None or any(t is None for t in types):
        raise VerifyError(f"'{op_name}' needs its result type written out")
    return types
