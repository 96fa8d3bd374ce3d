"""Printing ops with regions: the outlined functions (regions.py) inlined back as MLIR regions.

    %0:2 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond}
        -> %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, ...
           cond { ... stablehlo.return %2 : tensor<i1> } do { ... }

A function that only ever serves as a region (no `call` names it, not public) is not printed
on its own (`region_only_functions`). Names follow MLIR's rules for nested regions (see
`_Names` in exporter.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module, Operation
from shardc.stablehlo.mlir_text import results_text as _results
from shardc.stablehlo.mlir_text import tensor_text as _ty

if TYPE_CHECKING:
    from shardc.stablehlo.exporter import _Names

# Attributes the region printers write in their own syntax (never in the attribute dict).
OWN_ATTRS = frozenset({"body", "cond", "branches", "comparator", "captures", "dimension",
                       "is_stable", "dimensions", "in_shardings", "out_shardings",
                       "manual_axes", "axes", "groups", "kind", "channel_handle",
                       "reducer_constraint", "reducer_attrs"})
# Attributes of region ops that name their outlined functions.
REGION_ATTRS = ("body", "cond", "branches", "comparator")
REGION_OPS = frozenset({"while", "case", "sort", "reduce", "reduce_window",
                        "manual_computation"})


def region_symbols(op: Operation) -> list[str]:
    if op.name not in REGION_OPS:
        return []
    out = []
    for key in REGION_ATTRS:
        value = op.attributes.get(key)
        if isinstance(value, Symbol):
            out.append(value.name)
        elif isinstance(value, tuple):
            out.extend(v.name for v in value if isinstance(v, Symbol))
    return out


def region_only_functions(module: Module) -> set[str]:
    """Private functions referenced only as regions of ops (never by `call`)."""
    as_region: set[str] = set()
    called: set[str] = set()
    for func in module.functions.values():
        for op in func.body:
            as_region.update(region_symbols(op))
            callee = op.attributes.get("callee") if op.name == "call" else None
            if isinstance(callee, Symbol):
                called.add(callee.name)
            decomposition = op.attributes.get("decomposition")
            if isinstance(decomposition, Symbol):
                called.add(decomposition.name)
    return {name for name in as_region - called
            if name in module.functions and module.functions[name].is_private}






class RegionPrinter:
    """Mixin of the exporter's `_Printer`: the ops whose regions are outlined functions."""

    module: Module

    def function_of(self, op: Operation, key: str) -> Function:
        from shardc.stablehlo.exporter import ExportError

        value = op.attributes[key]
        func = self.module.lookup_function(value.name)
        if func is None:
            raise ExportError(f"'{op.name}' names @{value.name}, which is not defined", op.loc)
        return func

    def body_lines(self, func: Function, n: _Names, indent: str, ret: str) -> list[str]:
        """The ops of an outlined function as a region body; `return` prints as `ret`."""
        lines: list[str] = []
        for inner in func.body:
            if inner.name == "return":
                args = ", ".join(n(v) for v in inner.operands)
                types = ", ".join(_ty(v.type) for v in inner.operands)
                text = ret + (f" {args}" if args else "") + self.op_attrs(inner, False)
                lines.append(indent + text + (f" : {types}" if types else ""))
            else:
                lines.extend(self.op_text(inner, n, indent))
        return lines

    def region_text(self, op: Operation, n: _Names, indent: str) -> list[str] | None:
        name = op.name
        if name == "while":
            return self.while_text(op, n, indent)
        if name == "case":
            return self.case_text(op, n, indent)
        if name == "sort":
            return self.sort_text(op, n, indent)
        if name == "reduce" and "body" in op.attributes:
            return self.reduce_body_text(op, n, indent)
        if name == "manual_computation":
            return self.manual_text(op, n, indent)
        if name == "spmd.all_reduce":
            return self.all_reduce_text(op, n, indent)
        return None

    def _tail(self, op: Operation) -> str:
        return self.loc(op.loc, op.loc_written)

    def while_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        cond = self.function_of(op, "cond")
        body = self.function_of(op, "body")
        carried = len(op.results)
        inits, captured = op.operands[:carried], op.operands[carried:]
        names = ["iterArg"] * carried
        nc = n.region(cond, names, captured)
        nb = n.region(body, names, captured)
        pairs = ", ".join(f"{nc(a)} = {n(v)}" for a, v in zip(cond.args, inits))
        types = ", ".join(_ty(r.type) for r in op.results)
        attrs = self.op_attrs(op)
        head = f"{indent}{n.group(op)}stablehlo.while({pairs}) : {types}"
        if attrs:
            head += " attributes" + attrs
        lines = [head + self._tail(op), f"{indent}cond {{"]
        lines += self.body_lines(cond, nc, indent + "  ", "stablehlo.return")
        lines.append(f"{indent}}} do {{")
        lines += self.body_lines(body, nb, indent + "  ", "stablehlo.return")
        lines.append(f"{indent}}}")
        return lines

    def case_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        index, captured = op.operands[0], op.operands[1:]
        lines = [f'{indent}{n.group(op)}"stablehlo.case"({n(index)}) ({{']
        for i, sym in enumerate(op.attributes["branches"]):
            branch = self.module.lookup_function(sym.name)
            nr = n.region(branch, None, captured)
            if i:
                lines.append(f"{indent}}}, {{")
            lines += self.body_lines(branch, nr, indent + "  ", "stablehlo.return")
        lines.append(f"{indent}}}){self.op_attrs(op)} : ({_ty(index.type)}) -> {_results(op)}"
                     + self._tail(op))
        return lines

    def _block(self, func: Function, nr: _Names, indent: str, order=None) -> str:
        args = list(func.args) if order is None else [func.args[i] for i in order]
        return f"{indent}^bb0(" + ", ".join(f"{nr(a)}: {_ty(a.type)}" for a in args) + "):"

    def sort_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        cmp = self.function_of(op, "comparator")
        nr = n.region(cmp)
        props = []
        if "dimension" in op.attributes:
            props.append(f"dimension = {op.attributes['dimension']} : i64")
        if "is_stable" in op.attributes:
            props.append(f"is_stable = {'true' if op.attributes['is_stable'] else 'false'}")
        args = ", ".join(n(v) for v in op.operands)
        operand_types = ", ".join(_ty(v.type) for v in op.operands)
        lines = [f'{indent}{n.group(op)}"stablehlo.sort"({args}) <{{{", ".join(props)}}}> ({{',
                 self._block(cmp, nr, indent)]
        lines += self.body_lines(cmp, nr, indent + "  ", "stablehlo.return")
        lines.append(f"{indent}}}){self.op_attrs(op)} : ({operand_types}) -> {_results(op)}"
                     + self._tail(op))
        return lines

    def reduce_body_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        body = self.function_of(op, "body")
        nr = n.region(body)
        k = len(op.results)
        inputs = ", ".join(f"({n(op.operands[i])} init: {n(op.operands[k + i])})"
                           for i in range(k))
        dims = "[" + ", ".join(str(d) for d in op.attributes["dimensions"]) + "]"
        types = ", ".join(_ty(v.type) for v in op.operands)
        head = (f"{indent}{n.group(op)}stablehlo.reduce{inputs} across dimensions "
                f"= {dims}{self.op_attrs(op)} : ({types}) -> {_results(op)}")
        pairs = " ".join(
            f"({nr(body.args[i])}: {_ty(body.args[i].type)}, "
            f"{nr(body.args[k + i])}: {_ty(body.args[k + i].type)})" for i in range(k))
        lines = [head + self._tail(op), f"{indent} reducer{pairs}  {{"]
        lines += self.body_lines(body, nr, indent + "  ", "stablehlo.return")
        lines.append(f"{indent}}}")
        return lines

    def manual_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        body = self.function_of(op, "body")
        nr = n.region(body)
        at = op.attributes
        in_sh = ", ".join(m.text() for m in at["in_shardings"])
        out_sh = ", ".join(m.text() for m in at["out_shardings"])
        axes = "{" + ", ".join(f'"{a.name if hasattr(a, "name") else a}"'
                               for a in at["manual_axes"]) + "}"
        args = ", ".join(n(v) for v in op.operands)
        block = ", ".join(f"{nr(a)}: {_ty(a.type)}" for a in body.args)
        head = (f"{indent}{n.group(op)}sdy.manual_computation({args}) in_shardings=[{in_sh}] "
                f"out_shardings=[{out_sh}] manual_axes={axes} ({block}) {{")
        lines = [head]
        lines += self.body_lines(body, nr, indent + "  ", "sdy.return")
        types = ", ".join(_ty(v.type) for v in op.operands)
        lines.append(f"{indent}}}{self.op_attrs(op, False)} : ({types}) -> {_results(op)}"
                     + self._tail(op))
        return lines

    def all_reduce_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        """`spmd.all_reduce` in a manual body as the `stablehlo.all_reduce` shard_map emits."""
        at = op.attributes
        groups = at["groups"]
        dense = "[" + ", ".join("[" + ", ".join(str(d) for d in g) + "]" for g in groups) + "]"
        props = []
        if "channel_handle" in at:
            props.append(f"channel_handle = {at['channel_handle'].text}")
        props.append(f"replica_groups = dense<{dense}> : "
                     f"tensor<{len(groups)}x{len(groups[0])}xi64>")
        props.append("use_global_device_ids")
        t = op.results[0].type
        scalar = f"tensor<{t.dtype}>"
        a0, a1 = f"%arg{n.next_arg}", f"%arg{n.next_arg + 1}"
        v = n.next_value
        inner = " " + at["reducer_attrs"].text if "reducer_attrs" in at else ""
        lines = [f'{indent}{n.group(op)}"stablehlo.all_reduce"({n(op.operands[0])}) '
                 f'<{{{", ".join(props)}}}> ({{',
                 f"{indent}^bb0({a0}: {scalar}, {a1}: {scalar}):",
                 f"{indent}  %{v} = stablehlo.{at['kind'].word} {a0}, {a1}{inner} : {scalar}"]
        result = f"%{v}"
        constraint = at.get("reducer_constraint")
        if constraint is not None:
            lines.append(f"{indent}  %{v + 1} = {_constraint(constraint.text, v)} : {scalar}")
            result = f"%{v + 1}"
        lines.append(f"{indent}  stablehlo.return {result} : {scalar}")
        lines.append(f"{indent}}}){self.op_attrs(op)} : ({_ty(op.operands[0].type)}) -> "
                     f"{_ty(t)}" + self._tail(op))
        return lines


def _constraint(text: str, value: int) -> str:
    """`sdy.sharding_constraint <@mesh, []>` -> `sdy.sharding_constraint %7 <@mesh, []>`."""
    name, _, sharding = text.partition(" ")
    return f"{name} %{value} {sharding}"
