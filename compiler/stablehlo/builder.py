"""The builders that turn the reader's records into a native module: meshes, functions, values.

    func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, ...>})
        -> Function("main", [DistributedTensorType((16, 32), "f32", <@mesh, ...>)], ...)

`ModuleBuilder` declares meshes and functions (their signatures: signature.py) and decodes types
and shardings; `FunctionBuilder`
resolves value names (`%0`, `%1#2`) and builds one op per record, with the converter
`import_table.FORMS` has for the record's form (the op families in `ops/` fill that table).
Shardings (`sdy.sharding`, `#sdy.sharding_per_value`, the inline sharding of sdy ops) become the
values' `DistributedTensorType` mappings; attributes shardc does not interpret are kept verbatim as
`OpaqueAttr` so the exporter writes them back. Every error is a located `ShardcError`, in the
order MLIR would report it where shardc and MLIR both reject a program (signature.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location, ParseError, ShardcError, VerifyError
from shardc.ir.limits import DEFAULT_LIMITS, Limits, check_mesh
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.populate_sharding_rules import RULE_ATTR
from shardc.passes.propagation.rules.rule import RULE_PREFIX
from shardc.passes.propagation.rules.rule_check import check_rule_on
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.stablehlo.attributes import (
    MESH_ATTRS_PREFIX,
    InlineMesh,
    ShardingText,
    split_top_level,
    tensor_type_text,
    unescape,
)
from shardc.stablehlo.import_table import FORMS
from shardc.stablehlo.locations import Locations
from shardc.stablehlo.records import AttrRec, DictRec, FuncRec, MeshRec, ModuleRec, OpRec
from shardc.stablehlo.signature import check_supported, declare_function

if TYPE_CHECKING:
    from lark import Token  # (or the line reader's: tokens.py)

# ----- the module -----------------------------------------------------------------------------


class ModuleBuilder:
    def __init__(
        self, text: str, filename: str, aliases: dict[str, str], limits: Limits = DEFAULT_LIMITS
    ):
        self.text = text
        self.filename = filename
        self.limits = limits
        self.locs = Locations(aliases)
        self.module = Module()
        self.sharding_cache: dict[str, NamedMapping] = {}
        self.type_texts: dict[str, tuple[tuple[int, ...], str] | str] = {}
        self.plain_types: dict[str, DistributedTensorType] = {}
        # Faults of function signatures reported later than where they are read, and the
        # arguments whose type shardc cannot represent (signature.py).
        self.deferred_types: dict[str, list[ShardcError]] = {}
        self.deferred_shardings: list[ShardcError] = []
        self.unsupported: dict[Value, ShardcError] = {}

    # ----- helpers -------------------------------------------------------------------------

    def where(self, tok: Token) -> Location:
        return Location(self.filename, tok.line or 0, tok.column or 0)

    def fail(self, message: str, tok: Token, cls: type[ShardcError] = ParseError) -> ShardcError:
        return cls(message, self.where(tok), source=self.text)

    def opaque(self, attr: AttrRec | None) -> OpaqueAttr:
        if attr is None:
            return OpaqueAttr("unit")
        return OpaqueAttr(self.attr_text(attr))

    def attr_text(self, attr: AttrRec) -> str:
        """The attribute's source text, with every nested dictionary sorted by key as MLIR's
        DictionaryAttr keeps it."""
        if attr.kind == "dict" and attr.value is not None:
            entries = sorted(attr.value, key=lambda e: e[0])
            return "{" + ", ".join(
                text if value is None else f"{text} = {self.attr_text(value)}"
                for _, value, text in entries) + "}"
        if attr.kind == "list" and any(v.kind in ("dict", "list") for v in attr.value):
            return "[" + ", ".join(self.attr_text(v) for v in attr.value) + "]"
        return self.text[attr.start : attr.end]

    def type_text(self, text: str) -> tuple[tuple[int, ...], str] | str:
        """`tensor_type_text(text)`, each distinct text parsed once (a model has few)."""
        found = self.type_texts.get(text)
        if found is None:
            found = self.type_texts[text] = tensor_type_text(text)
        return found

    def tensor(self, tok: Token, mapping: NamedMapping | None = None) -> DistributedTensorType:
        text = str(tok)
        if mapping is None:  # (types are immutable: one object per text serves every use)
            found = self.plain_types.get(text)
            if found is not None:
                return found
        parsed = self.type_text(text)
        if isinstance(parsed, str):
            raise self.fail(parsed, tok)
        try:
            t = DistributedTensorType(parsed[0], parsed[1], mapping)
        except ShardcError as e:
            raise self.fail(e.message, tok, type(e)) from None
        if mapping is None:
            self.plain_types[text] = t
        return t

    def mapping(self, text: str, tok: Token) -> NamedMapping:
        """`<@mesh, [...]>` (optionally `#sdy.sharding` in front) -> NamedMapping."""
        if text.startswith("#sdy.sharding<"):
            text = text[len("#sdy.sharding") :]
        cached = self.sharding_cache.get(text)
        if cached is not None:
            return cached
        try:
            mesh_ref, dims, extras = ShardingText(text).parse()
            op = ReduceOp.parse(extras.get("unreduced_op", "sum"))
        except ValueError as e:
            raise self.fail(f"malformed sharding: {e}", tok) from None
        except ShardcError as e:  # a dim sharding that is well formed but invalid
            raise self.fail(e.message, tok, type(e)) from None
        try:
            if isinstance(mesh_ref, InlineMesh):
                mesh = DeviceMesh.inline_mesh(*mesh_ref)
            else:
                mesh = self.module.meshes.get(mesh_ref)
                if mesh is None:
                    raise self.fail(
                        f"unknown mesh @{mesh_ref}; declare it first with `sdy.mesh "
                        f'@{mesh_ref} = <["x"=2]>`', tok
                    )
            for key in ("replicated", "unreduced"):
                _check_ordered(mesh, key, extras.get(key, ()))
            mapping = NamedMapping(mesh, tuple(dims), extras.get("replicated", ()),
                                   extras.get("unreduced", ()), op)
        except ShardcError as e:
            if e.loc is not None:
                raise
            raise self.fail(e.message, tok, type(e)) from None
        self.sharding_cache[text] = mapping
        return mapping

    def at_op(self, e: ShardcError, op_tok: Token) -> ShardcError:
        """An attribute's error as MLIR reports it: a syntax error where it is, an invalid
        value at its op."""
        return e if isinstance(e, ParseError) else self.fail(e.message, op_tok, type(e))

    def per_value(self, attr: AttrRec, tok: Token, count: int, op_tok: Token) -> list[NamedMapping]:
        """The mappings of an op's `#sdy.sharding_per_value` (at `tok`) for `count` results."""
        try:
            return self._per_value(attr, tok, count)
        except ShardcError as e:
            raise self.at_op(e, op_tok) from None

    def _per_value(self, attr: AttrRec, tok: Token, count: int) -> list[NamedMapping]:
        text = attr.value if attr.kind == "dialect" else ""
        if not text.startswith("#sdy.sharding_per_value<"):
            raise self.fail("'sdy.sharding' on an op must be a #sdy.sharding_per_value<[...]>", tok,
                            VerifyError)
        try:
            bodies = split_top_level(text[len("#sdy.sharding_per_value<") : -1])
        except ValueError as e:
            raise self.fail(f"malformed #sdy.sharding_per_value: {e}", tok) from None
        if len(bodies) != count:
            raise self.fail(
                f"#sdy.sharding_per_value has {len(bodies)} shardings for {count} results", tok,
                VerifyError,
            )
        return [self.mapping(b, tok) for b in bodies]

    def no_result_sharding(self, attr: AttrRec, tok: Token, op_tok: Token) -> OpaqueAttr:
        """The `#sdy.sharding_per_value` of an op without results, kept as an attribute: none,
        or (as Shardy allows) one maximal or fully replicated sharding naming where the op
        runs (`<@maximal_mesh, []>`)."""
        try:
            return self._no_result_sharding(attr, tok)
        except ShardcError as e:
            raise self.at_op(e, op_tok) from None

    def _no_result_sharding(self, attr: AttrRec, tok: Token) -> OpaqueAttr:
        text = attr.value if attr.kind == "dialect" else ""
        if not text.startswith("#sdy.sharding_per_value<"):
            raise self.fail("'sdy.sharding' on an op must be a #sdy.sharding_per_value<[...]>", tok,
                            VerifyError)
        try:
            bodies = split_top_level(text[len("#sdy.sharding_per_value<") : -1])
        except ValueError as e:
            raise self.fail(f"malformed #sdy.sharding_per_value: {e}", tok) from None
        mappings = [self.mapping(b, tok) for b in bodies]
        if any(m.mesh.is_maximal and (m.rank or m.replicated or m.unreduced) for m in mappings):
            raise self.fail("a maximal sharding can only have a sharding with rank 0 and no "
                            "replicated or unreduced axes", tok, VerifyError)
        if len(mappings) > 1 or any(
            not (m.mesh.is_maximal or m.is_fully_replicated)
            for m in mappings
        ):
            raise self.fail(
                f"#sdy.sharding_per_value has {len(mappings)} shardings for 0 results (an op "
                "without results takes none, or one maximal or fully replicated sharding)", tok,
                VerifyError,
            )
        return OpaqueAttr(
            "#sdy.sharding_per_value<[" + ", ".join(m.text() for m in mappings) + "]>"
        )

    def split_attrs(
        self, attrs: DictRec | None, reserved: set[str] = frozenset()
    ) -> tuple[AttrRec | None, dict[str, Any]]:
        """(the `sdy.sharding` attr, every other attr kept verbatim)."""
        if attrs is None:
            return None, {}
        sharding = None
        kept: dict[str, Any] = {}
        for key, value in attrs.entries.items():
            if key == "sdy.sharding":
                sharding = value
            elif key in reserved:
                raise self.fail(
                    f"attribute '{key}' clashes with the op's own attribute of that name",
                    attrs.tokens[key],
                )
            else:
                kept[key] = self.opaque(value)
        return sharding, kept

    # ----- module ----------------------------------------------------------------------------

    def build(self, rec: ModuleRec) -> Module:
        for frec, func in self.declare(rec):
            FunctionBuilder(self, func).build(frec)
        return self.module

    def declare(self, rec: ModuleRec) -> list[tuple[FuncRec, Function]]:
        """The module's attributes, meshes and function signatures (bodies still empty), in
        text order; the functions with their records."""
        module = self.module
        if rec.name is not None:
            module.attributes["sym_name"] = str(rec.name)[1:]
        if rec.attrs is not None:
            for key, value in rec.attrs.entries.items():
                module.attributes[key] = self.opaque(value)
        funcs: list[tuple[FuncRec, Function]] = []
        for item in rec.items:
            if isinstance(item, MeshRec):
                self.add_mesh(item)
            else:
                funcs.append((item, declare_function(self, item)))
        return funcs

    def add_mesh(self, m: MeshRec) -> None:
        name = str(m.name)[1:]
        axes = tuple((unescape(str(t)), n) for t, n, _ in m.axes)
        ids = tuple(m.device_ids) if m.device_ids is not None else None
        if m.dialect is not None:
            axes, ids = self.long_form_mesh(m.dialect, name)
        try:
            mesh = DeviceMesh(name, axes, ids)
            self.module.add_mesh(mesh, self.where(m.tok))
            check_mesh(mesh, self.where(m.tok), self.limits)
        except ShardcError as e:
            raise self.fail(e.message, m.name, type(e)) from None
        if m.attrs is not None and m.attrs.entries:
            text = "{" + ", ".join(
                key if v is None else f"{key} = {self.attr_text(v)}"
                for key, v in m.attrs.entries.items()
            ) + "}"
            self.module.attributes[MESH_ATTRS_PREFIX + name] = OpaqueAttr(text)

    def long_form_mesh(self, tok, name: str):
        """`#sdy.mesh<["x"=2], device_ids=[...]>`: the mesh attribute written with its dialect
        prefix (MLIR accepts both spellings and prints the short one)."""
        text = str(tok)
        if text.startswith("#sdy.mesh<"):
            reader = ShardingText(text[len("#sdy.mesh"):])
            try:
                axes, ids = reader.inline_mesh()
                if reader.peek():
                    raise ValueError(f"unexpected {reader.peek()!r} after the mesh")
                return axes, ids
            except ValueError as e:
                raise self.fail(f"malformed mesh {text}: {e}", tok) from None
        raise self.fail(
            f"unsupported mesh {text}: a mesh is written "
            f'`sdy.mesh @{name} = <["x"=2, ...]>` or `#sdy.mesh<[...]>`', tok)


# ----- one function ---------------------------------------------------------------------------


class FunctionBuilder:
    """Resolves names and builds the native ops of one function."""

    def __init__(self, b: ModuleBuilder, func: Function):
        self.b = b
        self.func = func
        self.scope: dict[str, Value | tuple[Value, ...]] = {}
        # The mesh of the sdy.manual_computation whose body this is (outlining.py), else None.
        self.manual_mesh = None
        # The axes the enclosing manual_computations make manual (a nested one may not reuse one).
        self.manual_axes: tuple[str, ...] = ()
        # How many arguments a region's own block has (outlining.py: captures follow them); None
        # in a function.
        self.region_args: int | None = None
        self.tok: Token | None = None

    def build(self, f: FuncRec) -> None:
        for a, value in zip(f.args, self.func.args):
            self.define(str(a.tok)[1:], value, a.tok)
        for rec in f.ops:
            self.add(rec)
        for error in self.b.deferred_types.pop(self.func.name, []):
            raise error

    def define(self, name: str, value: Value, tok: Token) -> None:
        if name in self.scope:
            raise self.b.fail(f"argument %{name} is declared twice", tok)
        self.scope[name] = value

    def scope_value(self, name: str, region) -> Value:
        """The value a region captures as `name` or `name#i` (outlining.py)."""
        base, _, index = name.partition("#")
        found = self.scope.get(base)
        if isinstance(found, tuple):
            found = found[int(index or 0)] if int(index or 0) < len(found) else None
        tok = region.ops[0].tok if region.ops else self.tok
        if found is None:
            raise self.b.fail(f"use of undefined value %{name}", tok)
        check_supported(self.b, found, f"%{name}", tok)
        return found

    def capture(self, name: str, value: Value, outer) -> None:
        """Make the captured `name` (`name#i`) resolve to `value` (an outlined function's
        argument); `outer` is what the enclosing scope binds the base name to."""
        base, _, index = name.partition("#")
        if isinstance(outer, tuple):
            slots = list(self.scope.get(base) or (None,) * len(outer))
            slots[int(index or 0)] = value
            self.scope[base] = tuple(slots)
        else:
            self.scope[base] = value

    def lookup(self, tok: Token) -> Value:
        text = str(tok)[1:]
        name, _, index = text.partition("#")
        found = self.scope.get(name)
        if found is None:
            raise self.b.fail(f"use of undefined value %{name}", tok)
        if isinstance(found, tuple):
            i = int(index) if index else 0
            if i >= len(found) or found[i] is None:
                raise self.b.fail(f"%{name} has {len(found)} results; #{i} does not exist", tok)
            return found[i]
        if index and index != "0":
            raise self.b.fail(f"%{name} has a single result", tok)
        return found

    def add(self, rec: OpRec) -> Operation:
        b = self.b
        first = rec.results[0][0] if rec.results else rec.tok
        self.tok = rec.tok
        operands = [self.lookup(t) for t in rec.operands]
        for i, (tok, value) in enumerate(zip(rec.operands, operands)):
            check_supported(b, value, f"'{rec.name}' op operand {i}", tok)
        name, attrs, types = self.convert(rec, operands)
        loc, written = b.where(first), False
        if rec.loc is not None:
            resolved = b.locs.resolve(str(rec.loc))
            if resolved is not None:
                loc, written = resolved, True
        op = Operation(name, operands, types, attrs, loc, loc_written=written)
        self.func.body.append(op)
        i = 0
        for tok, count in rec.results:
            text = str(tok)[1:]
            if text in self.scope:
                raise b.fail(f"value %{text} is defined twice", tok)
            group = tuple(op.results[i : i + count])
            if count == 1:
                group[0].name_hint = text
                self.scope[text] = group[0]
            else:
                self.scope[text] = group
            i += count
        return op

    def convert(self, rec: OpRec, operands: list[Value]
                ) -> tuple[str, dict[str, Any], list[DistributedTensorType]]:
        """The native op's (name, attributes, result types) for `rec` on these operands."""
        b = self.b
        first = rec.results[0][0] if rec.results else rec.tok
        try:
            name, attrs, result_toks, mappings = FORMS[rec.form](self, rec, operands)
        except ValueError as e:
            raise b.fail(f"'{rec.name}' op: {e}", rec.tok) from None
        sharding, kept = b.split_attrs(rec.attrs, set(attrs))
        n_results = sum(n for _, n in rec.results)
        if len(result_toks) != n_results:
            raise b.fail(
                f"'{rec.name}' defines {n_results} value{'s' if n_results != 1 else ''} but its "
                f"type lists {len(result_toks)} result{'s' if len(result_toks) != 1 else ''}",
                first,
            )
        if sharding is not None:
            if mappings is not None:
                raise b.fail(f"'{rec.name}' carries its sharding inline; drop 'sdy.sharding'",
                             rec.attrs.tokens["sdy.sharding"])
            tok = rec.attrs.tokens["sdy.sharding"]
            if n_results == 0:
                kept["sdy.sharding"] = b.no_result_sharding(sharding, tok, rec.tok)
            else:
                mappings = b.per_value(sharding, tok, n_results, rec.tok)
        if mappings is not None and len(mappings) != len(result_toks):
            raise b.fail(
                f"'{rec.name}' has {len(mappings)} result sharding"
                f"{'s' if len(mappings) != 1 else ''} for {len(result_toks)} results",
                rec.tok,
            )
        types = [
            b.tensor(t, mappings[i] if mappings else None) for i, t in enumerate(result_toks)
        ]
        if RULE_ATTR in kept:
            self.check_rule(rec, kept[RULE_ATTR], operands, types)
        attrs.update(kept)
        return name, attrs, types

    # ----- signature checks -------------------------------------------------------------------

    def check_rule(self, rec: OpRec, value: OpaqueAttr, operands: list[Value],
                   types: list[DistributedTensorType]) -> None:
        """A `sdy.sharding_rule` written on the op parses and fits its operands and results."""
        tok = rec.attrs.tokens[RULE_ATTR]
        if not value.text.startswith(RULE_PREFIX):
            raise self.b.fail(f"'{rec.name}' op should have a sharding rule attribute of type "
                              "OpShardingRuleAttr", tok, VerifyError)
        try:
            rule = parse_rule(value.text)
            shapes = [None if v.type.dtype == "token" else v.type.shape for v in operands]
            check_rule_on(rule, shapes, [None if t.dtype == "token" else t.shape for t in types])
        except ShardcError as e:
            raise self.b.fail(f"'{rec.name}' op {e.message}", tok, type(e)) from None

    def results_of(self, rec: OpRec, operands: list[Value]) -> list[Token]:
        """Result type tokens from the signature; checks the operand types it names."""
        if rec.sig is None:
            return []
        kind, op_toks, res_toks = rec.sig
        if kind == "fn":
            if len(op_toks) != len(operands):
                raise ValueError(
                    f"signature lists {len(op_toks)} operand types for {len(operands)} operands"
                )
            for i, (tok, v) in enumerate(zip(op_toks, operands)):
                self.check_type(tok, v, i)
            return list(res_toks)
        return [res_toks[-1]]

    def check_type(self, tok: Token, v: Value, i: int) -> None:
        parsed = self.b.type_text(str(tok))
        if isinstance(parsed, str):
            raise self.b.fail(parsed, tok)
        if parsed != (v.type.shape, v.type.dtype):
            raise self.b.fail(
                f"operand {i} has type {v.type.tensor} but the signature says {tok}", tok
            )


def _check_ordered(mesh: DeviceMesh, key: str, axes) -> None:
    """Shardy keeps replicated and unreduced axes in mesh order (sub-axes of one axis by their
    offset); another order is an error, not something to sort silently."""
    names = mesh.axis_names
    if any(a.name not in names for a in axes):
        return  # the mapping reports the unknown axis
    keys = [(names.index(a.name), a.pre or 1) for a in axes]
    if keys != sorted(keys):
        raise ShardcError(f"{key} axes are not ordered w.r.t. mesh")
