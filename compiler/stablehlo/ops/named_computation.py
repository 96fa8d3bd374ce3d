"""`sdy.named_computation`: a named block of ops, outlined into a private function it runs.

    %0 = sdy.named_computation<"mlp">(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>]
         out_shardings=[<@mesh, [{"x"}, {}]>] (%arg1: tensor<8x16xf32>) {
      ... sdy.return %2 : tensor<8x16xf32>
    } : (tensor<8x16xf32>) -> tensor<8x16xf32>
        <-> named_computation %arg0 {body = @main_named_computation, name = "mlp"}

Like a manual_computation's, the body may only use its own arguments (outlining.py). The
in_shardings become the body arguments' types, the out_shardings the results'; both are printed
back from those types (absent when no value of that side has a sharding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.export_table import prints_lines
from shardc.stablehlo.import_table import SyntaxIssue, pretty_form, read_rule
from shardc.stablehlo.mlir_text import results_text, string_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.outlining import free_names, outline
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@read_rule("named_op")
def named_op(c: list) -> OpRec:
    tok, label, operands, in_sh, out_sh = c[:5]
    body, attrs, sig = c[-3:]
    if body.args:
        raise SyntaxIssue("the body's arguments are listed before its '{'", tok)
    body.args = [a for a in c[5:-3] if a is not None]
    extra = {"label": label, "in": in_sh, "out": out_sh}
    rec = OpRec("named_computation", tok, operands or [], extra, attrs, sig)
    rec.regions = [body]
    return rec


def _shardings(fb: FunctionBuilder, toks, count: int, what: str) -> list[NamedMapping] | None:
    if toks is None:
        return None
    mappings = [fb.b.mapping(str(t), t) for t in toks]
    if len(mappings) != count:
        raise ValueError(f"{what} lists {len(mappings)} shardings for {count} values")
    return mappings


@pretty_form("named_computation")
def _named_computation(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    (region,) = rec.regions
    free = free_names(region)
    if free:
        raise ValueError(f"its body reads %{free[0]} from the enclosing scope; a "
                         "named_computation's body may only use its own arguments")
    results = fb.results_of(rec, operands)
    in_sh = _shardings(fb, rec.extra["in"], len(region.args), "in_shardings")
    out_sh = _shardings(fb, rec.extra["out"], len(results), "out_shardings")
    body = outline(fb, region, "named_computation")
    if in_sh is not None:
        for a, m in zip(body.args, in_sh):
            a.type = DistributedTensorType(a.type.shape, a.type.dtype, m)
    attrs = {"name": unescape(str(rec.extra["label"])), "body": Symbol(body.name)}
    return "named_computation", attrs, results, out_sh


# ----- export ---------------------------------------------------------------------------------


def _side(mappings: list[NamedMapping | None], ranks: list[int]) -> str | None:
    """`[<@mesh, ...>, ...]` for one side, values without a sharding open on the others' mesh;
    None when no value has one."""
    given = [m for m in mappings if m is not None]
    if not given:
        return None
    mesh = given[0].mesh
    return "[" + ", ".join(
        (m if m is not None else NamedMapping.fully_open(mesh, r)).text()
        for m, r in zip(mappings, ranks)
    ) + "]"


@prints_lines("named_computation")
def _print_named_computation(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    body = p.function_of(op, "body")
    nr = n.region(body)
    args = ", ".join(n(v) for v in op.operands)
    head = (f"{indent}{n.group(op)}sdy.named_computation<{string_text(op.attributes['name'])}>"
            f"({args})")
    in_sh = _side([a.mapping for a in body.args], [a.type.rank for a in body.args])
    out_sh = _side([r.mapping for r in op.results], [r.type.rank for r in op.results])
    if in_sh is not None:
        head += f" in_shardings={in_sh}"
    if out_sh is not None:
        head += f" out_shardings={out_sh}"
    block = ", ".join(f"{nr(a)}: {_ty(a.type)}" for a in body.args)
    lines = [f"{head} ({block}) {{"]
    lines += p.body_lines(body, nr, indent + "  ", "sdy.return")
    types = ", ".join(_ty(v.type) for v in op.operands)
    lines.append(f"{indent}}}{p.op_attrs(op, False)} : ({types}) -> {results_text(op)}"
                 + p.tail(op))
    return lines
