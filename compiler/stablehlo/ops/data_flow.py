"""Data-flow ops: sdy.named_computation, sdy.data_flow_edge (and the generic form of
optimization_barrier, whose pretty form is read and printed in elementwise.py).

    %1 = sdy.named_computation<"relu">(%x) in_shardings=[<@m, [{"x"}]>] out_shardings=[...]
         (%arg1: tensor<8xf32>) { ... sdy.return %2 : tensor<8xf32> } : (tensor<8xf32>) -> ...
        <-> named_computation %x {body = @main_relu, name = "relu"}
    %2 = sdy.data_flow_edge %1 sharding=<@m, [{"x", ?}]> : tensor<8xf32>
        <-> data_flow_edge %1, its result typed with that sharding
    %3 = sdy.func_data_flow_edge %arg0 {sdy.sharding = #sdy.sharding_per_value<[...]>} : ...
        <-> func_data_flow_edge %arg0, its result typed with that sharding

A named computation's body is outlined into a private function (outlining.py; it may only use
its own arguments): `in_shardings` are that function's argument shardings and `out_shardings`
the op's result shardings. Shardy prints both lists whole once any entry has a sharding, the
others fully open on the same mesh.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo.attributes import unescape
from shardc.stablehlo.export_table import prints, prints_lines
from shardc.stablehlo.import_table import Props, generic, pretty_form, read_rule
from shardc.stablehlo.mlir_text import results_text, string_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.ops.manual import body_op_record, check_sharding_ranks, type_rank
from shardc.stablehlo.outlining import first_free_use, free_names, outline
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@generic("stablehlo.optimization_barrier")
def _generic_barrier(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props: Props,
                     results: list):
    return "optimization_barrier", {}, results, None


@read_rule("named_in", "named_out")
def named_shardings(c: list) -> list:
    return c[0]


@read_rule("named_op")
def named_op(c: list) -> OpRec:
    tok, name, operands, in_sh, out_sh = c[:5]
    return body_op_record("named", tok, operands, {"name": name, "in": in_sh, "out": out_sh},
                          c, 5)


def _symbol_part(name: str) -> str:
    """A computation name as part of a function name (`jit(f)` -> `jit_f_`)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "named"


@pretty_form("named")
def _named(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    b = fb.b
    (region,) = rec.regions
    free = free_names(region)
    if free:  # at the use, as MLIR says it
        raise fb.b.fail(f"'{rec.name}' op: its body reads %{free[0]} from the enclosing "
                        "scope; a named_computation's body may only use its own arguments",
                        first_free_use(region) or rec.tok)
    results = fb.results_of(rec, operands)
    name = unescape(str(rec.extra["name"]))
    in_sh = [b.mapping(str(t), t) for t in rec.extra["in"] or []]
    out_sh = [b.mapping(str(t), t) for t in rec.extra["out"] or []]
    if in_sh and len(in_sh) != len(operands):
        raise ValueError(f"has {len(in_sh)} in_shardings for {len(operands)} operands")
    if out_sh and len(out_sh) != len(results):
        raise ValueError(f"has {len(out_sh)} out_shardings for {len(results)} results")
    check_sharding_ranks("in_shardings", in_sh, [len(v.type.shape) for v in operands])
    check_sharding_ranks("out_shardings", out_sh, [type_rank(t) for t in results])
    body = outline(fb, region, _symbol_part(name))
    if len(body.result_types) != len(results):
        n, k = len(results), len(body.result_types)
        raise ValueError(f"has {n} result{'s' if n != 1 else ''} but its body returns {k} "
                         f"value{'s' if k != 1 else ''}")
    for arg, m in zip(body.args, in_sh):
        arg.set_mapping(m)
    for j, m in enumerate(out_sh):  # the body's declared results mirror the op's results
        t = body.result_types[j]
        body.result_types[j] = DistributedTensorType(t.shape, t.dtype, m)
    attrs = {"body": Symbol(body.name), "name": name}
    return "named_computation", attrs, results, (out_sh or None)


@read_rule("edge_sharding")
def edge_sharding(c: list):
    return c[0]


@read_rule("sdy_edge_op")
def sdy_edge_op(c: list) -> OpRec:
    tok, value, sharding, attrs, ty = c
    return OpRec("edge", tok, [value], {"sharding": sharding}, attrs, ("plain", None, [ty]))


@pretty_form("edge")
def _edge(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    fb.check_type(rec.sig[2][0], operands[0], 0)
    tok = rec.extra["sharding"]
    if rec.name == "sdy.func_data_flow_edge":
        if tok is not None:
            raise ValueError("takes its sharding as {sdy.sharding = ...}, not sharding=")
        source = operands[0]
        if fb.region_args is not None and source.owner is fb.func and source.index < fb.region_args:
            raise ValueError("expected operand of sdy.func_data_flow_edge to be a block argument "
                             "of a func op, not of a region")
        return "func_data_flow_edge", {}, [rec.sig[2][0]], None
    mappings = None if tok is None else [fb.b.mapping(str(tok), tok)]
    return "data_flow_edge", {}, [rec.sig[2][0]], mappings


# ----- export ---------------------------------------------------------------------------------


@prints("data_flow_edge")
def _print_edge(p: Printer, op: Operation, n: Names, args: str) -> str:
    m = op.results[0].mapping
    sharding = f" sharding={m.text()}" if m is not None else ""
    return f"sdy.data_flow_edge {args}{sharding}{p.op_attrs(op, False)} : {_ty(op.results[0].type)}"


@prints("func_data_flow_edge")
def _print_func_edge(p: Printer, op: Operation, n: Names, args: str) -> str:
    return f"sdy.func_data_flow_edge {args}{p.op_attrs(op)} : {_ty(op.results[0].type)}"


def sharding_list(mappings: list[NamedMapping | None], ranks: list[int]) -> str | None:
    """`[<@m, [...]>, ...]`, every missing entry fully open on the mesh of the first one there
    is; None when no entry has a sharding."""
    mesh = next((m.mesh.name for m in mappings if m is not None), None)
    if mesh is None:
        return None
    texts = [
        m.text() if m is not None else f"<@{mesh}, [" + ", ".join("{?}" for _ in range(r)) + "]>"
        for m, r in zip(mappings, ranks)
    ]
    return "[" + ", ".join(texts) + "]"


@prints_lines("named_computation")
def _print_named(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    body = p.function_of(op, "body")
    nr = n.region(body)
    args = ", ".join(n(v) for v in op.operands)
    head = f"{indent}{n.group(op)}sdy.named_computation<{string_text(op.attributes['name'])}>"
    head += f"({args})"
    in_sh = sharding_list([a.mapping for a in body.args], [a.type.rank for a in body.args])
    out_sh = sharding_list([r.mapping for r in op.results], [r.type.rank for r in op.results])
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
