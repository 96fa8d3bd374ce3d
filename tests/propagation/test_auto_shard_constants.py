"""auto-shard's memory rows count constant expressions while they run: an `iota` chain (as JAX's
random bits build their counters) is held from its op to its last reader, in the layout
propagation gives it, so the peak auto-shard predicts for its plan is the peak the report
measures on the compiled program, and a budget the prediction meets is met."""

from __future__ import annotations

from shardc.ir.ops import attr
from shardc.ir.parser import parse_module
from shardc.passes.propagation.autoshard.constants import ConstantLayouts
from shardc.passes.propagation.autoshard.graph import build_graph, single_mesh
from shardc.pipeline import DEFAULT_PIPELINE, CompileOptions, compile

# Three 64x256xui64 counters (128 KiB each replicated) are live at the `add` of the chain,
# beside the weight; `pinned` keeps the chain replicated (a reader that needs it whole, as
# threefry's loop does), `follows` lets it take the layout of the `add` that reads it (the
# `negate` is part of the chain).
PROGRAM = """
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<64x256xf32>
  %1 = iota {iota_dimension = 0} : tensor<64x256xui64>
  %2 = constant {value = dense<256>} : tensor<ui64>
  %3 = broadcast_in_dim %2 {broadcast_dimensions = []} : tensor<64x256xui64>
  %4 = multiply %1, %3 : tensor<64x256xui64>
  %5 = iota {iota_dimension = 1} : tensor<64x256xui64>
  %6 = add %4, %5 : tensor<64x256xui64>
  %7 = convert %6 : tensor<64x256xf32>
  READ
  %9 = add %0, %8 : tensor<64x256xf32>
  %10 = dot_general %9, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<64x256xf32>
  return %10
}
"""
PINNED = PROGRAM.replace("READ", "%8 = sharding_constraint %7 : tensor<64x256xf32, <@mesh, [{}, {}]>>")
FOLLOWS = PROGRAM.replace("READ", "%8 = negate %7 : tensor<64x256xf32>")
COUNTER = 64 * 256 * 8  # one replicated ui64 counter


def _auto(text: str, budget: int = 0):
    opts = f"{{memory-budget={budget}}}" if budget else ""
    return compile(parse_module(text), CompileOptions(pipeline=f"auto-shard{opts},"
                                                      + DEFAULT_PIPELINE))


def _peaks(result) -> tuple[int, int]:
    info = result.report["auto_shard"]
    return (info["predicted"]["peak_memory_bytes_per_device"],
            result.report["peak_memory_bytes_per_device"])


def test_a_replicated_counter_chain_is_counted_at_its_ops() -> None:
    free = _auto(PINNED)
    predicted, measured = _peaks(free)
    # the weight (replicated: no communication) and three counters at the chain's `add`
    assert predicted == measured == 256 * 256 * 4 + 3 * COUNTER + 64 * 256 * 4 // 8
    # A budget below that peak: the weight is split (the counters cannot be), the plan fits
    # as predicted. (Counted only as the reader's operand, the chain once made the free plan
    # look like 401,408 bytes: it was kept, and held 663,552.)
    budget = 600_000
    fit = _auto(PINNED, budget)
    predicted, measured = _peaks(fit)
    info = fit.report["auto_shard"]
    assert predicted == measured <= budget
    assert info["fits_budget"] and info["solves"] == 1 and not fit.warnings
    assert info["measured"]["comm_bytes"] > 0  # splitting the weight costs a gather


def test_a_chain_takes_the_layout_of_its_reader() -> None:
    result = _auto(FOLLOWS)
    predicted, measured = _peaks(result)
    assert predicted == measured
    chain = {op.name: op.result.mapping for op in result.module.main.body
             if op.results and op.result.type.dtype == "ui64" and op.result.type.rank == 2}
    assert chain and all(any(d.axes for d in m.dims) for m in chain.values())  # sharded


def test_constant_layouts_follow_the_reader_back_through_the_chain() -> None:
    module = parse_module(FOLLOWS)
    graph = build_graph(module, module.main, single_mesh(module))
    layouts = ConstantLayouts(graph.mesh)
    by_name = {c.op.name + (str(attr(c.op, "iota_dimension")) if c.op.name == "iota" else ""): c
               for c in graph.constants}
    iota0 = layouts(by_name["iota0"])
    add = next(n for n in graph.ops if n.op.name == "add")  # (the ui64 one is a constant)
    assert iota0 is not None and iota0[0] is add
    # the iota is laid out as the `add` reads the chain's end, strategy by strategy
    assert iota0[2] == tuple(s.operands[1] for s in add.strategies)
    assert any(any(d.axes for d in m.dims) for m in iota0[2])
    scalar = layouts(by_name["constant"])  # read by the broadcast: rank 0, replicated
    assert scalar is not None and all(not m.dims for m in scalar[2])
