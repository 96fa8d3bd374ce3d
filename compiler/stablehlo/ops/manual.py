"""`sdy.manual_computation` (JAX's shard_map): a body run per device on its local shards.

    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>]
         out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%arg1: tensor<4xf32>) {
      ... sdy.return %2 : tensor<4xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
        <-> manual_computation %arg0 {body = @main_manual, in_shardings = ..., manual_axes = ...}

The body is outlined into a private function (outlining.py) and may only use its own arguments;
inside it, `stablehlo.all_reduce` imports over the mesh of the in/out shardings (collectives.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.ir.mesh import AxisRef
from shardc.stablehlo.attributes import tensor_type_text
from shardc.stablehlo.export_table import prints_lines
from shardc.stablehlo.import_table import SyntaxIssue, pretty_form, read_rule
from shardc.stablehlo.mlir_text import results_text
from shardc.stablehlo.mlir_text import tensor_text as _ty
from shardc.stablehlo.outlining import first_free_use, free_names, outline
from shardc.stablehlo.records import OpRec

if TYPE_CHECKING:
    from shardc.stablehlo.builder import FunctionBuilder
    from shardc.stablehlo.names import Names
    from shardc.stablehlo.printer import Printer


# ----- import ---------------------------------------------------------------------------------


@read_rule("sharding_list")
def sharding_list(c: list) -> list:
    return [t for t in c if t is not None]


def body_op_record(form: str, tok, operands, extra: dict, c: list, first_arg: int) -> OpRec:
    """The record of an op written `op(...) ... (%arg: type, ...) { body } : sig` (manual and
    named computations): `c[first_arg:-3]` are the body's arguments, `c[-3:]` body, attrs, sig."""
    body, attrs, sig = c[-3:]
    if body.args:
        raise SyntaxIssue("the body's arguments are listed before its '{'", tok)
    body.args = [a for a in c[first_arg:-3] if a is not None]
    rec = OpRec(form, tok, operands or [], extra, attrs, sig)
    rec.regions = [body]
    return rec


@read_rule("manual_op")
def manual_op(c: list) -> OpRec:
    tok, operands, in_sh, out_sh, axes = c[:5]
    return body_op_record("manual", tok, operands, {"in": in_sh, "out": out_sh, "axes": axes},
                          c, 5)


def type_rank(tok) -> int | None:
    parsed = tensor_type_text(str(tok))
    return None if isinstance(parsed, str) else len(parsed[0])


def check_sharding_ranks(kind: str, shardings: list, ranks: list[int | None]) -> None:
    """Each in/out sharding of a manual or named computation has its value's rank (an error
    of the op, in Shardy's words; a count that differs is reported where the op is built)."""
    for i, (m, rank) in enumerate(zip(shardings, ranks)):
        if rank is not None and m.rank != rank:
            which = kind if len(ranks) == 1 else f"{kind} {i}"
            raise ValueError(f"{which} - sharding doesn't match tensor rank: {m.rank} != {rank}")


@pretty_form("manual")
def _manual(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    b = fb.b
    (region,) = rec.regions
    free = free_names(region)
    if free:  # at the use, as MLIR says it
        raise fb.b.fail(f"'{rec.name}' op: its body reads %{free[0]} from the enclosing "
                        "scope; a manual_computation's body may only use its own arguments",
                        first_free_use(region) or rec.tok)
    results = fb.results_of(rec, operands)
    in_sh = [b.mapping(str(t), t) for t in rec.extra["in"]]
    out_sh = [b.mapping(str(t), t) for t in rec.extra["out"]]
    check_sharding_ranks("operand", in_sh, [len(v.type.shape) for v in operands])
    check_sharding_ranks("result", out_sh, [type_rank(t) for t in results])
    # One mesh, named or written inline (Shardy compares the meshes, not their names).
    if len({(m.mesh.axes, m.mesh.device_ids) for m in in_sh + out_sh}) > 1:
        names = sorted({m.mesh.name for m in in_sh + out_sh})
        raise ValueError(f"in/out shardings name several meshes ({names})")
    axes = tuple(AxisRef(a.name if hasattr(a, "name") else a[0]) for a in rec.extra["axes"])
    bound = next((a.name for a in axes if a.name in fb.manual_axes), None)
    if bound is not None:
        raise ValueError(f'operates on axis "{bound}" which is already bound by a parent '
                         "sdy.manual_computation op")
    saved, saved_axes = fb.manual_mesh, fb.manual_axes
    mesh = (in_sh + out_sh)[0].mesh if in_sh or out_sh else None
    fb.manual_mesh = mesh
    fb.manual_axes = saved_axes + tuple(a.name for a in axes)
    try:
        body = outline(fb, region, "manual")
    finally:
        fb.manual_mesh, fb.manual_axes = saved, saved_axes
    attrs = {
        "body": Symbol(body.name),
        "in_shardings": tuple(in_sh),
        "manual_axes": axes,
        "out_shardings": tuple(out_sh),
    }
    # The results are typed with their out_shardings, as propagation leaves them.
    return "manual_computation", attrs, results, out_sh


# ----- export ---------------------------------------------------------------------------------


@prints_lines("manual_computation")
def _print_manual(p: Printer, op: Operation, n: Names, indent: str) -> list[str]:
    body = p.function_of(op, "body")
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
    lines += p.body_lines(body, nr, indent + "  ", "sdy.return")
    types = ", ".join(_ty(v.type) for v in op.operands)
    lines.append(f"{indent}}}{p.op_attrs(op, False)} : ({types}) -> {results_text(op)}"
                 + p.tail(op))
    return lines
