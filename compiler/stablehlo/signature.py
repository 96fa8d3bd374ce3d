"""A function's signature: its argument and result types with their `sdy.sharding`s.

    func.func @f(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> ...
        -> Function("f", [DistributedTensorType((8,), "f32", <@mesh, [{"x"}]>)], ...)

Two kinds of fault in a signature are reported later than where they are read:

- a type that is valid MLIR but that shardc cannot represent (a dynamic or unranked shape, a
  tuple, an encoding): MLIR accepts it, so the fault is in the first op that uses the argument
  (`'stablehlo.add' op operand 0: unsupported type 'tensor<?xf32>' ...`, at the operand); an
  argument no op uses, and a result type, are reported at the type once the body is built.
  Until then such a value has a stand-in type; `ModuleBuilder.unsupported` maps it to its
  error, `ModuleBuilder.deferred_types[name]` holds the function's type errors, and no stand-in
  outlives the import (`FunctionBuilder.build` raises what is left);
- a sharding that parses but is invalid (`'func.func' op arg 0 - ...`): MLIR's verifier checks a
  function's argument and result attributes after the ops inside it, so an invalid op in the
  body is the error a user sees first. The value is imported without the sharding and the
  error waits in `ModuleBuilder.deferred_shardings` until the module is verified
  (importer.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from shardc.ir.attributes import OpaqueAttr, symbol_name
from shardc.ir.core import Function, Module, Value
from shardc.ir.diagnostics import Location, ParseError, ShardcError, VerifyError
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo.locations import Locations
from shardc.stablehlo.records import AttrRec, DictRec, FuncRec

if TYPE_CHECKING:
    from lark import Token  # (or the line reader's: tokens.py)

# What a value whose type shardc cannot represent holds until its error is raised.
STAND_IN = DistributedTensorType((), "f32")


class ModuleBuilder(Protocol):
    """What this module uses of builder.py's `ModuleBuilder`."""

    module: Module
    locs: Locations
    deferred_types: dict[str, list[ShardcError]]
    deferred_shardings: list[ShardcError]
    unsupported: dict[Value, ShardcError]

    def where(self, tok: Token) -> Location: ...
    def fail(self, message: str, tok: Token, cls: type[ShardcError] = ...) -> ShardcError: ...
    def opaque(self, attr: AttrRec | None) -> OpaqueAttr: ...
    def mapping(self, text: str, tok: Token) -> NamedMapping: ...
    def split_attrs(self, attrs: DictRec | None,
                    reserved: set[str] = ...) -> tuple[AttrRec | None, dict[str, Any]]: ...


def declare_function(b: ModuleBuilder, f: FuncRec) -> Function:
    """The function `f` declares, its body still empty; its deferred errors go to `b` (see
    above)."""
    name = symbol_name(str(f.name))
    if b.module.lookup_function(name) is not None:
        raise b.fail(f"function @{name} is defined twice", f.name)
    deferred: list[ShardcError] = []  # type errors
    arg_types, arg_attrs, arg_errors = [], [], []
    for i, a in enumerate(f.args):
        sharding, kept = b.split_attrs(a.attrs)
        t, type_error = value_type(b, f, f"arg {i}", a.type, sharding, a.attrs, deferred)
        arg_types.append(t)
        arg_attrs.append(kept)
        arg_errors.append(type_error)
    res_types, res_attrs = [], []
    for i, (ty, attrs) in enumerate(f.results):
        sharding, kept = b.split_attrs(attrs)
        res_types.append(value_type(b, f, f"result {i}", ty, sharding, attrs, deferred)[0])
        res_attrs.append(kept)
    visibility = str(f.visibility) if f.visibility is not None else "public"
    func = Function(
        name, arg_types, res_types, visibility=visibility, loc=b.where(f.tok),
        arg_names=[str(a.tok)[1:] for a in f.args],
    )
    for value, error in zip(func.args, arg_errors):
        if error is not None:
            b.unsupported[value] = error
    b.deferred_types[name] = deferred
    func.visibility_written = f.visibility is not None
    func.arg_attrs = arg_attrs
    func.res_attrs = res_attrs
    func.arg_labels = [b.locs.label(a.loc) if a.loc is not None else None for a in f.args]
    if f.attrs is not None:
        func.attributes = {k: b.opaque(v) for k, v in f.attrs.entries.items()}
    if f.loc is not None:
        loc = b.locs.resolve(str(f.loc))
        if loc is not None:
            func.loc, func.loc_written = loc, True
    b.module.add_function(func)
    return func


def value_type(
    b: ModuleBuilder, f: FuncRec, which: str, ty: Token, sharding: AttrRec | None,
    attrs: DictRec | None, deferred: list[ShardcError],
) -> tuple[DistributedTensorType, ShardcError | None]:
    """The type of a function argument or result with its `sdy.sharding`, and the error of an
    unsupported type (also added to `deferred`); an invalid sharding goes to
    `b.deferred_shardings` (see above), a syntax error is raised at once."""
    def invalid(message: str, cls: type[ShardcError]) -> ShardcError:
        error = b.fail(f"'func.func' op {which} - {message}", f.tok, cls)
        b.deferred_shardings.append(error)
        return error

    fault: ShardcError | None = None
    try:
        mapping = func_sharding(b, sharding, attrs)
    except ShardcError as e:
        if isinstance(e, ParseError):
            raise
        fault, mapping = invalid(e.message, type(e)), None
    parsed = b.type_text(str(ty))
    if isinstance(parsed, str):
        # An invalid sharding is MLIR's error, the type only shardc's: the sharding's wins.
        message = _sharding_fault(str(ty), mapping)
        if fault is None and message is not None:
            fault = invalid(message, VerifyError)
        error = fault or b.fail(parsed, ty)
        deferred.append(error)
        return STAND_IN, error
    try:
        return DistributedTensorType(parsed[0], parsed[1], mapping), None
    except ShardcError as e:
        invalid(e.message, type(e))
        return DistributedTensorType(parsed[0], parsed[1]), None


_RANKED = re.compile(r"tensor<((?:(?:\d+|\?)x)*)[^*?\d]")


def _sharding_fault(type_text: str, mapping: NamedMapping | None) -> str | None:
    """What is wrong with `mapping` on a type shardc cannot represent, as far as its rank
    tells: a sharding on an unranked tensor or a tuple, or one of another rank."""
    if mapping is None:
        return None
    m = _RANKED.match(type_text)
    if m is None:
        return "only ranked tensors can have a sharding"
    rank = m.group(1).count("x")
    if mapping.rank != rank and not (mapping.rank == 0 and mapping.mesh.is_maximal):
        return (f"sharding {mapping} has {mapping.rank} dims but the tensor {type_text} has "
                f"rank {rank}")
    return None


def func_sharding(b: ModuleBuilder, sharding: AttrRec | None,
                  attrs: DictRec | None) -> NamedMapping | None:
    if sharding is None:
        return None
    tok = attrs.tokens["sdy.sharding"]
    if sharding.kind != "dialect" or not sharding.value.startswith("#sdy.sharding<"):
        raise b.fail("'sdy.sharding' on a function argument or result must be a "
                     "#sdy.sharding<@mesh, [...]>", tok, VerifyError)
    return b.mapping(sharding.value, tok)


def check_supported(b: ModuleBuilder, value: Value, what: str, tok: Token) -> None:
    """Raise, at the use `tok`, the error of a value whose type shardc cannot represent (or,
    when its sharding is invalid too, that error, where MLIR reports it)."""
    error = b.unsupported.get(value)
    if error in b.deferred_shardings:
        raise error
    if error is not None:
        raise b.fail(f"{what}: {error.message}", tok, type(error))
