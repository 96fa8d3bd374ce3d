"""The exporter's printer: a module's meshes and functions, each op by its family's printer.

    module @jit_f attributes {mhlo.num_partitions = 8 : i32} {
      sdy.mesh @mesh = <["dp"=2, "tp"=4]>
      func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<...>}) ...

`Printer` holds what every op printer shares: the op's discardable attributes with its results'
shardings as `#sdy.sharding_per_value<[...]>`, `loc(...)` when debug info is on, and the ops of
an outlined function printed back as a region body. Which printer prints an op is
`export_table.printer_of(op.name)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Function, Module, Operation
from shardc.ir.diagnostics import Location
from shardc.ir.ops import OPS
from shardc.stablehlo.attributes import (
    ARITH_CONSTANT_MARKER,
    MESH_ATTRS_PREFIX,
    REDUCER_ATTRS,
    SDY_CONSTANT_MARKER,
)
from shardc.stablehlo.export_table import printer_of
from shardc.stablehlo.inlining import OWN_ATTRS, OWN_ATTRS_OPS, region_only_functions
from shardc.stablehlo.mlir_text import ExportError, attr_dict, string_text, symbol_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.names import Names

_MARKERS = frozenset({SDY_CONSTANT_MARKER, ARITH_CONSTANT_MARKER, REDUCER_ATTRS})
# Native op name -> the attributes its printer writes in its own syntax or not at all.
_HIDDEN: dict[str, frozenset[str]] = {}


def _hidden_attrs(name: str) -> frozenset[str]:
    hidden = _HIDDEN.get(name)
    if hidden is None:
        op_def = OPS.get(name)
        hidden = _MARKERS | (op_def.attrs.keys() if op_def is not None else frozenset())
        if name in OWN_ATTRS_OPS:
            hidden |= OWN_ATTRS
        hidden = frozenset(hidden)
        if op_def is not None:  # (ops register as their modules are imported)
            _HIDDEN[name] = hidden
    return hidden


class Printer:
    """Prints one module (`print()`); the op printers call back into it for what they share."""

    def __init__(self, module: Module, debug_info: bool, shardings: bool = True):
        self.module = module
        self.debug_info = debug_info
        self.shardings = shardings  # False: no `sdy.sharding` anywhere (a per-device program)
        self.lines: list[str] = []
        # (id(value), key) -> fn(value, key): texts made once per distinct object (a model's
        # layers share their constants' values). The module keeps the values alive meanwhile.
        self._texts: dict[tuple[int, Any], str] = {}

    # ----- what every op printer shares -------------------------------------------------------

    def discardable(self, op: Operation) -> dict[str, Any]:
        hidden = _hidden_attrs(op.name)
        return {k: v for k, v in op.attributes.items() if k not in hidden}

    def op_attrs(
        self, op: Operation, with_sharding: bool = True, extra: dict[str, Any] | None = None
    ) -> str:
        """` {attr = ..., sdy.sharding = ...}` (with its leading space), or '' when empty."""
        hidden = _hidden_attrs(op.name)
        # Most ops have only their own attributes and no sharding: nothing to print (checked
        # before any dict is built: this runs once per op).
        shown = not hidden.issuperset(op.attributes)
        sharded = False
        if with_sharding and self.shardings:
            for r in op.results:
                if r.type.mapping is not None:
                    sharded = True
                    break
        if not (shown or sharded or extra):
            return ""
        attrs = {k: v for k, v in op.attributes.items() if k not in hidden} if shown else {}
        attrs.update(extra or {})
        if sharded:
            mesh = next(r.mapping.mesh.name for r in op.results if r.mapping is not None)
            texts = []
            for r in op.results:
                m = r.mapping
                texts.append(m.text() if m is not None else
                             f"<@{mesh}, [" + ", ".join("{?}" for _ in r.type.shape) + "]>")
            attrs["sdy.sharding"] = OpaqueAttr(
                "#sdy.sharding_per_value<[" + ", ".join(texts) + "]>"
            )
        text = attr_dict(attrs)
        return " " + text if text else ""

    def text_of(self, value: Any, key: Any, fn: Callable[[Any, Any], str]) -> str:
        """`fn(value, key)`, made once per distinct `value` object and `key` in this print."""
        text = self._texts.get((id(value), key))
        if text is None:
            text = self._texts[id(value), key] = fn(value, key)
        return text

    def loc(self, loc: Location | None, written: bool) -> str:
        if not self.debug_info or not written or loc is None:
            return ""
        return f' loc({string_text(loc.file)}:{loc.line}:{loc.col})'

    def tail(self, op: Operation) -> str:
        """The op's ` loc(...)`, or ''."""
        return self.loc(op.loc, op.loc_written)

    def op_text(self, op: Operation, n: Names, indent: str) -> list[str]:
        return printer_of(op.name)(self, op, n, indent)

    # ----- outlined functions as regions ------------------------------------------------------

    def function_of(self, op: Operation, key: str) -> Function:
        """The function the op's attribute `key` names (one of its regions)."""
        value = op.attributes[key]
        func = self.module.lookup_function(value.name)
        if func is None:
            raise ExportError(f"'{op.name}' names @{value.name}, which is not defined", op.loc)
        return func

    def return_text(self, op: Operation, args: str, keyword: str) -> str:
        """`return {attrs} %0 : type` (func.return, sdy.return: the attributes first) or
        `stablehlo.return %0 {attrs} : type`."""
        types = ", ".join(_ty(v.type) for v in op.operands)
        attrs = self.op_attrs(op, False)
        values = f" {args}" if args else ""
        text = keyword + (values + attrs if keyword == "stablehlo.return" else attrs + values)
        return text + (f" : {types}" if types else "")

    def body_lines(self, func: Function, n: Names, indent: str, ret: str) -> list[str]:
        """The ops of an outlined function as a region body; `return` prints as `ret`."""
        lines: list[str] = []
        for inner in func.body:
            if inner.name == "return":
                args = ", ".join(n(v) for v in inner.operands)
                lines.append(indent + self.return_text(inner, args, ret))
            else:
                lines.extend(self.op_text(inner, n, indent))
        return lines

    # ----- functions and module ---------------------------------------------------------------

    def function(self, func: Function) -> None:
        n = Names(func)
        args = []
        for i, v in enumerate(func.args):
            all_attrs = self.arg_attrs(func, i)
            if v.mapping is not None and self.shardings:
                all_attrs["sdy.sharding"] = OpaqueAttr(f"#sdy.sharding{v.mapping.text()}")
            text = f"%arg{i}: {_ty(v.type)}"
            if all_attrs:
                text += " " + attr_dict(all_attrs)
            args.append(text)
        results = []
        any_attrs = False
        for t, attrs in zip(func.result_types, func.res_attrs):
            all_attrs = dict(attrs)
            mapping = getattr(t, "mapping", None)
            if mapping is not None and self.shardings:
                all_attrs["sdy.sharding"] = OpaqueAttr(f"#sdy.sharding{mapping.text()}")
            any_attrs = any_attrs or bool(all_attrs)
            results.append(_ty(t) + (" " + attr_dict(all_attrs) if all_attrs else ""))
        visibility = f"{func.visibility} " if func.visibility_written else ""
        header = f"  func.func {visibility}{symbol_text(func.name)}({', '.join(args)})"
        if len(results) == 1 and not any_attrs:
            header += f" -> {results[0]}"
        elif results:
            header += " -> (" + ", ".join(results) + ")"
        attributes = self.function_attrs(func)
        if attributes:
            header += " attributes " + attr_dict(attributes)
        self.lines.append(header + " {")
        lines = self.lines
        for op in func.body:
            lines.extend(self.op_text(op, n, "    "))
        self.lines.append("  }" + self.loc(func.loc, func.loc_written))

    def function_attrs(self, func: Function) -> dict[str, Any]:
        """The attributes printed on `func` itself."""
        return func.attributes

    def arg_attrs(self, func: Function, i: int) -> dict[str, Any]:
        """The attributes printed on `func`'s argument `i` (its shardings aside)."""
        return dict(func.arg_attrs[i])

    def print(self) -> str:
        module = self.module
        name = module.attributes.get("sym_name")
        attrs = {k: v for k, v in module.attributes.items()
                 if k != "sym_name" and not k.startswith(MESH_ATTRS_PREFIX)}
        header = "module" + (f" @{name}" if name else "")
        if attrs:
            header += " attributes " + attr_dict(attrs)
        self.lines.append(header + " {")
        for mesh in module.meshes.values():
            line = f"  sdy.mesh @{mesh.name} = {mesh.text()}"
            extra = module.attributes.get(MESH_ATTRS_PREFIX + mesh.name)
            if isinstance(extra, OpaqueAttr):
                line += " " + extra.text
            self.lines.append(line)
        inlined = region_only_functions(module)
        for func in module.functions.values():
            if func.name not in inlined:
                self.function(func)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"
