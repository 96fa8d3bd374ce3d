"""The SPMD program on N simulated devices equals the global program (differential tests).

Every program below is written in the form `insert-reshards` + `lower-collectives` produce:
closed shardings, explicit global collectives, every other op locally computable. Each is
lowered with the `spmd` pass and run on the numpy executor (batched, and group by group) and on
the JAX executor (8 CPU devices, see conftest.py); all must equal `run_reference` of the global
program. Collectives are also checked alone against the collective simulator
(`passes/analysis/collectives/simulate.py`), which is their mathematical definition on per-device blocks.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from shardc.executors.device_layout import (
    gather,
    gather_outputs,
    reference_blocks,
    scatter,
    scatter_inputs,
)
from shardc.executors.numpy_exec import NumpyExecutor, run_spmd
from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ExecutionError, PassError, ShardingError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.parser import parse_module
from shardc.ir.types import shard_bounds
from shardc.passes.analysis.collectives import simulate
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
)
from shardc.passes.manager import PassManager
from shardc.passes.spmd.spmd import Spmd


def lower(text: str):
    """(global module, SPMD module) of `text`."""
    spmd = parse_module(text)
    PassManager([Spmd()]).run(spmd)
    return parse_module(text), spmd


def random_inputs(module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.main.args:
        if a.type.dtype.startswith("f"):
            out.append(rng.standard_normal(a.type.shape).astype(np.float32))
        else:
            out.append(rng.integers(-5, 5, a.type.shape).astype(np.int32))
    return out


def assert_same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def jax_executor():
    pytest.importorskip("jax")
    from shardc.executors.jax_exec import JaxExecutor

    return JaxExecutor


# ----- the programs -------------------------------------------------------------------------------

MEGATRON = """
mesh @m = <["x"=8]>
func @main(%x: tensor<16x32xf32, <@m, [{}, {}]>>, %w1: tensor<32x64xf32, <@m, [{}, {"x"}]>>, %w2: tensor<64x32xf32, <@m, [{"x"}, {}]>>) -> tensor<16x32xf32, <@m, [{}, {}]>> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32, <@m, [{}, {"x"}]>>
  %1 = tanh %0 : tensor<16x64xf32, <@m, [{}, {"x"}]>>
  %2 = dot_general %1, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x32xf32, <@m, [{}, {}], unreduced={"x"}>>
  %3 = all_reduce %2 {reduction_axes = ["x"]} : tensor<16x32xf32, <@m, [{}, {}]>>
  return %3
}
"""

DP_TP = """
mesh @m = <["dp"=2, "tp"=4]>
func @main(%x: tensor<8x16xf32, <@m, [{"dp"}, {}]>>, %w1: tensor<16x32xf32, <@m, [{}, {"tp"}]>>, %b1: tensor<32xf32, <@m, [{"tp"}]>>, %w2: tensor<32x16xf32, <@m, [{"tp"}, {}]>>) -> tensor<8x16xf32, <@m, [{}, {}]>> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %1 = broadcast_in_dim %b1 {broadcast_dimensions = [1]} : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %2 = add %0, %1 : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %zero = constant {value = dense<0.0>} : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %3 = maximum %2, %zero : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %4 = dot_general %3, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"dp"}, {}], unreduced={"tp"}>>
  %5 = all_reduce %4 {reduction_axes = ["tp"]} : tensor<8x16xf32, <@m, [{"dp"}, {}]>>
  %6 = all_gather %5 {gathering_axes = [["dp"], []]} : tensor<8x16xf32, <@m, [{}, {}]>>
  return %6
}
"""

ALL_TO_ALL = """
mesh @m = <["x"=4, "y"=2]>
func @main(%a: tensor<16x8xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<16x8xf32, <@m, [{}, {"y", "x"}]>> {
  %0 = exponential %a : tensor<16x8xf32, <@m, [{"x"}, {"y"}]>>
  %1 = all_to_all %0 {params = [{"x"}: 0->1]} : tensor<16x8xf32, <@m, [{}, {"y", "x"}]>>
  %2 = negate %1 : tensor<16x8xf32, <@m, [{}, {"y", "x"}]>>
  return %2
}
"""

REDUCE_SCATTER = """
mesh @m = <["x"=4]>
func @main(%a: tensor<16x32xf32, <@m, [{}, {"x"}]>>, %b: tensor<32x8xf32, <@m, [{"x"}, {}]>>) -> tensor<16x8xf32, <@m, [{"x"}, {}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x8xf32, <@m, [{}, {}], unreduced={"x"}>>
  %1 = reduce_scatter %0 {scatter_axes = [["x"], []]} : tensor<16x8xf32, <@m, [{"x"}, {}]>>
  %2 = tanh %1 : tensor<16x8xf32, <@m, [{"x"}, {}]>>
  return %2
}
"""

UNEVEN_COLLECTIVES = """
mesh @m = <["x"=4]>
func @main(%a: tensor<10x6xf32, <@m, [{"x"}, {}]>>, %u: tensor<10x6xf32, <@m, [{}, {}], unreduced={"x"}>>) -> (tensor<10x6xf32, <@m, [{}, {}]>>, tensor<10x6xf32, <@m, [{}, {"x"}]>>, tensor<10x6xf32, <@m, [{}, {"x"}]>>, tensor<10x6xf32, <@m, [{"x"}, {}]>>, tensor<10x6xf32, <@m, [{}, {}]>>) {
  %0 = all_gather %a {gathering_axes = [["x"], []]} : tensor<10x6xf32, <@m, [{}, {}]>>
  %1 = all_slice %0 {slicing_axes = [[], ["x"]]} : tensor<10x6xf32, <@m, [{}, {"x"}]>>
  %2 = all_to_all %a {params = [{"x"}: 0->1]} : tensor<10x6xf32, <@m, [{}, {"x"}]>>
  %3 = reduce_scatter %u {scatter_axes = [["x"], []]} : tensor<10x6xf32, <@m, [{"x"}, {}]>>
  %4 = all_reduce %u {reduction_axes = ["x"]} : tensor<10x6xf32, <@m, [{}, {}]>>
  return %0, %1, %2, %3, %4
}
"""

UNEVEN_PERMUTE = """
mesh @m = <["x"=2, "y"=2]>
func @main(%a: tensor<5x3xf32, <@m, [{"x"}, {}]>>) -> tensor<5x3xf32, <@m, [{}, {}]>> {
  %0 = sine %a : tensor<5x3xf32, <@m, [{"x"}, {}]>>
  %1 = collective_permute %0 : tensor<5x3xf32, <@m, [{"y"}, {}]>>
  %2 = cosine %1 : tensor<5x3xf32, <@m, [{"y"}, {}]>>
  %3 = all_gather %2 {gathering_axes = [["y"], []]} : tensor<5x3xf32, <@m, [{}, {}]>>
  return %3
}
"""

UNEVEN_REDUCTIONS = """
mesh @m = <["x"=4]>
func @main(%a: tensor<10x6xf32, <@m, [{"x"}, {}]>>, %b: tensor<10x24xf32, <@m, [{"x"}, {}]>>) -> (tensor<6xf32, <@m, [{}]>>, tensor<6xf32, <@m, [{}]>>, tensor<6xf32, <@m, [{}]>>, tensor<6x24xf32, <@m, [{}, {}]>>, tensor<10x6xf32, <@m, [{}, {}]>>) {
  %z = constant {value = dense<0.0>} : tensor<f32, <@m, []>>
  %one = constant {value = dense<1.5>} : tensor<f32, <@m, []>>
  %ninf = constant {value = dense<-inf>} : tensor<f32, <@m, []>>
  %e = exponential %a : tensor<10x6xf32, <@m, [{"x"}, {}]>>
  %0 = reduce %e, %z {dimensions = [0], kind = add} : tensor<6xf32, <@m, [{}], unreduced={"x"}>>
  %1 = all_reduce %0 {reduction_axes = ["x"]} : tensor<6xf32, <@m, [{}]>>
  %n = negate %e : tensor<10x6xf32, <@m, [{"x"}, {}]>>
  %2 = reduce %n, %ninf {dimensions = [0], kind = maximum} : tensor<6xf32, <@m, [{}], unreduced={"x"}, unreduced_op=max>>
  %3 = all_reduce %2 {reduction_axes = ["x"]} : tensor<6xf32, <@m, [{}]>>
  %4 = reduce %e, %one {dimensions = [0], kind = add} : tensor<6xf32, <@m, [{}], unreduced={"x"}>>
  %5 = all_reduce %4 {reduction_axes = ["x"]} : tensor<6xf32, <@m, [{}]>>
  %6 = dot_general %e, %b {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : tensor<6x24xf32, <@m, [{}, {}], unreduced={"x"}>>
  %7 = all_reduce %6 {reduction_axes = ["x"]} : tensor<6x24xf32, <@m, [{}, {}]>>
  %i = iota {iota_dimension = 0} : tensor<10x6xf32, <@m, [{"x"}, {}]>>
  %8 = multiply %i, %e : tensor<10x6xf32, <@m, [{"x"}, {}]>>
  %9 = all_gather %8 {gathering_axes = [["x"], []]} : tensor<10x6xf32, <@m, [{}, {}]>>
  return %1, %3, %5, %7, %9
}
"""

UNREDUCED_MAX = """
mesh @m = <["x"=2, "y"=2]>
func @main(%a: tensor<6x5xf32, <@m, [{"x"}, {"y"}]>>) -> (tensor<5xf32, <@m, [{}]>>, tensor<6xf32, <@m, [{"x"}], unreduced={"y"}>>) {
  %ninf = constant {value = dense<-inf>} : tensor<f32, <@m, []>>
  %z = constant {value = dense<0.0>} : tensor<f32, <@m, []>>
  %0 = reduce %a, %ninf {dimensions = [0], kind = maximum} : tensor<5xf32, <@m, [{"y"}], unreduced={"x"}, unreduced_op=max>>
  %1 = all_gather %0 {gathering_axes = [["y"]]} : tensor<5xf32, <@m, [{}], unreduced={"x"}, unreduced_op=max>>
  %2 = reduce_scatter %1 {scatter_axes = [["x"]]} : tensor<5xf32, <@m, [{"x"}]>>
  %3 = all_gather %2 {gathering_axes = [["x"]]} : tensor<5xf32, <@m, [{}]>>
  %4 = reduce %a, %z {dimensions = [1], kind = add} : tensor<6xf32, <@m, [{"x"}], unreduced={"y"}>>
  return %3, %4
}
"""

DEVICE_IDS = """
mesh @m = <["x"=2, "y"=2], device_ids=[3, 1, 0, 2]>
func @main(%x: tensor<6x8xf32, <@m, [{"x"}, {"y"}]>>, %w: tensor<8x4xf32, <@m, [{"y"}, {}]>>) -> (tensor<6x4xf32, <@m, [{}, {}]>>, tensor<6x8xf32, <@m, [{"y"}, {"x"}]>>) {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<6x4xf32, <@m, [{"x"}, {}], unreduced={"y"}>>
  %1 = reduce_scatter %0 {scatter_axes = [[], ["y"]]} : tensor<6x4xf32, <@m, [{"x"}, {"y"}]>>
  %2 = all_gather %1 {gathering_axes = [["x"], ["y"]]} : tensor<6x4xf32, <@m, [{}, {}]>>
  %3 = collective_permute %x : tensor<6x8xf32, <@m, [{"y"}, {"x"}]>>
  return %2, %3
}
"""

MESH_3D = """
mesh @m = <["a"=2, "b"=2, "c"=2]>
func @main(%x: tensor<4x6xf32, <@m, [{"a"}, {"b"}]>>, %w: tensor<6x16xf32, <@m, [{"b"}, {"c"}]>>) -> tensor<4x16xf32, <@m, [{}, {}]>> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<4x16xf32, <@m, [{"a"}, {"c"}], unreduced={"b"}>>
  %1 = reduce_scatter %0 {scatter_axes = [[], ["b"]]} : tensor<4x16xf32, <@m, [{"a"}, {"c", "b"}]>>
  %2 = logistic %1 : tensor<4x16xf32, <@m, [{"a"}, {"c", "b"}]>>
  %3 = all_to_all %2 {params = [{"a"}: 0->1]} : tensor<4x16xf32, <@m, [{}, {"c", "b", "a"}]>>
  %4 = all_gather %3 {gathering_axes = [[], ["c", "b", "a"]]} : tensor<4x16xf32, <@m, [{}, {}]>>
  return %4
}
"""

SUB_AXES = """
mesh @m = <["x"=4, "y"=2]>
func @main(%a: tensor<8x12xf32, <@m, [{"x":(1)2}, {"x":(2)2, "y"}]>>) -> (tensor<8x12xf32, <@m, [{}, {}]>>, tensor<8x12xf32, <@m, [{"x":(2)2}, {"x":(1)2}]>>) {
  %0 = all_gather %a {gathering_axes = [[], ["y"]]} : tensor<8x12xf32, <@m, [{"x":(1)2}, {"x":(2)2}]>>
  %1 = all_to_all %0 {params = [{"x":(1)2}: 0->1]} : tensor<8x12xf32, <@m, [{}, {"x":(2)2, "x":(1)2}]>>
  %2 = all_gather %1 {gathering_axes = [[], ["x":(2)2, "x":(1)2]]} : tensor<8x12xf32, <@m, [{}, {}]>>
  %3 = all_slice %2 {slicing_axes = [["x":(2)2], ["x":(1)2]]} : tensor<8x12xf32, <@m, [{"x":(2)2}, {"x":(1)2}]>>
  return %2, %3
}
"""

SHAPE_OPS = """
mesh @m = <["x"=2, "y"=3]>
func @main(%a: tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>, %b: tensor<4x5xf32, <@m, [{"x"}, {}]>>) -> (tensor<6x4xf32, <@m, [{"y"}, {"x"}]>>, tensor<4x3x2xf32, <@m, [{"x"}, {"y"}, {}]>>, tensor<4x9xf32, <@m, [{"x"}, {}]>>, tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>) {
  %c = constant {value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0, 17.0, 18.0], [19.0, 20.0, 21.0, 22.0, 23.0, 24.0]]>} : tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>
  %0 = add %a, %c : tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>
  %1 = transpose %0 {permutation = [1, 0]} : tensor<6x4xf32, <@m, [{"y"}, {"x"}]>>
  %2 = reshape %0 : tensor<4x3x2xf32, <@m, [{"x"}, {"y"}, {}]>>
  %3 = slice %b {start_indices = [0, 1], limit_indices = [4, 5]} : tensor<4x4xf32, <@m, [{"x"}, {}]>>
  %4 = concatenate %3, %b {dimension = 1} : tensor<4x9xf32, <@m, [{"x"}, {}]>>
  %pv = constant {value = dense<0.5>} : tensor<f32, <@m, []>>
  %5 = pad %3, %pv {edge_padding_low = [0, 1], edge_padding_high = [0, 1]} : tensor<4x6xf32, <@m, [{"x"}, {}]>>
  %6 = reverse %5 {dimensions = [1]} : tensor<4x6xf32, <@m, [{"x"}, {}]>>
  %7 = all_slice %6 {slicing_axes = [[], ["y"]]} : tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>
  %lo = constant {value = dense<-0.5>} : tensor<f32, <@m, []>>
  %8 = clamp %lo, %7, %pv : tensor<4x6xf32, <@m, [{"x"}, {"y"}]>>
  return %1, %2, %4, %8
}
"""

BATCHED_DOT = """
mesh @m = <["b"=2, "k"=3]>
func @main(%x: tensor<4x5x9xf32, <@m, [{"b"}, {}, {"k"}]>>, %y: tensor<4x9x7xf32, <@m, [{"b"}, {"k"}, {}]>>) -> tensor<4x5x7xf32, <@m, [{"b"}, {}, {}]>> {
  %0 = dot_general %x, %y {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : tensor<4x5x7xf32, <@m, [{"b"}, {}, {}], unreduced={"k"}>>
  %1 = all_reduce %0 {reduction_axes = ["k"]} : tensor<4x5x7xf32, <@m, [{"b"}, {}, {}]>>
  return %1
}
"""

NO_MESH = """
func @main(%a: tensor<3x4xf32>) -> tensor<3xf32> {
  %z = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce %a, %z {dimensions = [1], kind = add} : tensor<3xf32>
  return %0
}
"""

CALLS = """
mesh @m = <["x"=4]>
func private @act(%v: tensor<8x6xf32, <@m, [{"x"}, {}]>>) -> tensor<8x6xf32, <@m, [{"x"}, {}]>> {
  %0 = tanh %v : tensor<8x6xf32, <@m, [{"x"}, {}]>>
  return %0
}
func @main(%a: tensor<8x6xf32, <@m, [{"x"}, {}]>>) -> tensor<8x6xf32, <@m, [{}, {}]>> {
  %0 = call %a {callee = @act} : tensor<8x6xf32, <@m, [{"x"}, {}]>>
  %1 = all_gather %0 {gathering_axes = [["x"], []]} : tensor<8x6xf32, <@m, [{}, {}]>>
  return %1
}
"""

INTEGERS = """
mesh @m = <["x"=3]>
func @main(%a: tensor<7x4xi32, <@m, [{"x"}, {}]>>) -> (tensor<4xi32, <@m, [{}]>>, tensor<4xi32, <@m, [{}]>>) {
  %z = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %big = constant {value = dense<2147483647>} : tensor<i32, <@m, []>>
  %0 = reduce %a, %z {dimensions = [0], kind = add} : tensor<4xi32, <@m, [{}], unreduced={"x"}>>
  %1 = all_reduce %0 {reduction_axes = ["x"]} : tensor<4xi32, <@m, [{}]>>
  %2 = reduce %a, %big {dimensions = [0], kind = minimum} : tensor<4xi32, <@m, [{}], unreduced={"x"}, unreduced_op=min>>
  %3 = all_reduce %2 {reduction_axes = ["x"]} : tensor<4xi32, <@m, [{}]>>
  return %1, %3
}
"""

PROGRAMS = {
    "megatron": MEGATRON,
    "dp_tp": DP_TP,
    "all_to_all": ALL_TO_ALL,
    "reduce_scatter": REDUCE_SCATTER,
    "uneven_collectives": UNEVEN_COLLECTIVES,
    "uneven_permute": UNEVEN_PERMUTE,
    "uneven_reductions": UNEVEN_REDUCTIONS,
    "unreduced_max": UNREDUCED_MAX,
    "device_ids": DEVICE_IDS,
    "mesh_3d": MESH_3D,
    "sub_axes": SUB_AXES,
    "shape_ops": SHAPE_OPS,
    "batched_dot": BATCHED_DOT,
    "no_mesh": NO_MESH,
    "calls": CALLS,
    "integers": INTEGERS,
}


def sweep_program(axes: dict[str, int], ids: list[int] | None = None) -> str:
    """A program that uses every collective on a mesh with 1 to 3 axes: the first axis shards
    dim 0 of the input, the others dim 1; dims 10 and 11 are uneven on most meshes."""
    names = list(axes)
    a0 = f'"{names[0]}"'
    rest = ", ".join(f'"{n}"' for n in names[1:])
    mesh = ", ".join(f'"{n}"={s}' for n, s in axes.items())
    id_text = f", device_ids=[{', '.join(map(str, ids))}]" if ids else ""
    lines = [
        f"mesh @m = <[{mesh}]{id_text}>",
        f"func @main(%x: tensor<10x11xf32, <@m, [{{{a0}}}, {{{rest}}}]>>, "
        f"%w: tensor<11x24xf32, <@m, [{{{rest}}}, {{}}]>>) -> (tensor<10xf32, <@m, [{{}}]>>, "
        f"tensor<10x24xf32, <@m, [{{}}, {{}}]>>) {{",
        "  %z = constant {value = dense<0.0>} : tensor<f32, <@m, []>>",
        f"  %0 = exponential %x : tensor<10x11xf32, <@m, [{{{a0}}}, {{{rest}}}]>>",
    ]
    unreduced = f", unreduced={{{rest}}}" if rest else ""
    lines.append(
        f"  %1 = reduce %0, %z {{dimensions = [1], kind = add}} : "
        f"tensor<10xf32, <@m, [{{{a0}}}]{unreduced}>>"
    )
    lines.append(
        f"  %2 = dot_general %0, %w {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : "
        f"tensor<10x24xf32, <@m, [{{{a0}}}, {{}}]{unreduced}>>"
    )
    if rest:
        lines.append(
            f"  %3 = all_reduce %1 {{reduction_axes = [{rest}]}} : tensor<10xf32, <@m, [{{{a0}}}]>>"
        )
        lines.append(
            f"  %4 = reduce_scatter %2 {{scatter_axes = [[], [{rest}]]}} : "
            f"tensor<10x24xf32, <@m, [{{{a0}}}, {{{rest}}}]>>"
        )
        both = f"{rest}, {a0}"
    else:
        lines.append("  %3 = negate %1 : tensor<10xf32, <@m, [{" + a0 + "}]>>")
        lines.append("  %4 = negate %2 : tensor<10x24xf32, <@m, [{" + a0 + "}, {}]>>")
        both = a0
    lines += [
        f"  %5 = all_to_all %4 {{params = [{{{a0}}}: 0->1]}} : "
        f"tensor<10x24xf32, <@m, [{{}}, {{{both}}}]>>",
        f"  %6 = all_gather %5 {{gathering_axes = [[], [{both}]]}} : "
        "tensor<10x24xf32, <@m, [{}, {}]>>",
        f"  %7 = all_gather %3 {{gathering_axes = [[{a0}]]}} : tensor<10xf32, <@m, [{{}}]>>",
        "  return %7, %6",
        "}",
    ]
    return "\n".join(lines) + "\n"


MESHES = [
    ({"x": 1}, None),
    ({"x": 2}, None),
    ({"x": 3}, None),
    ({"x": 4}, [2, 0, 3, 1]),
    ({"x": 5}, None),
    ({"x": 8}, None),
    ({"x": 2, "y": 2}, None),
    ({"x": 2, "y": 3}, None),
    ({"x": 4, "y": 2}, [7, 6, 5, 4, 3, 2, 1, 0]),
    ({"x": 2, "y": 1, "z": 4}, None),
    ({"a": 2, "b": 2, "c": 2}, [1, 3, 5, 7, 0, 2, 4, 6]),
]
SWEEP = {
    "mesh_" + "_".join(f"{k}{v}" for k, v in axes.items()) + ("_ids" if ids else ""): (axes, ids)
    for axes, ids in MESHES
}
ALL = {**PROGRAMS, **{name: sweep_program(*args) for name, args in SWEEP.items()}}


# ----- differential tests -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL))
def test_numpy_executor_matches_reference(name: str) -> None:
    g, s = lower(ALL[name])
    inputs = random_inputs(g)
    want = run_reference(g, inputs)
    assert_same(run_spmd(s, inputs), want)
    assert_same(NumpyExecutor(s, general_groups=True).run(inputs), want)


@pytest.mark.parametrize("name", sorted(ALL))
def test_jax_executor_matches_reference(name: str) -> None:
    executor = jax_executor()
    g, s = lower(ALL[name])
    inputs = random_inputs(g)
    assert_same(executor(s).run(inputs), run_reference(g, inputs))


def test_per_device_blocks_round_trip() -> None:
    """run_blocks on scattered blocks, gathered back, equals the global run."""
    g, s = lower(UNEVEN_COLLECTIVES)
    inputs = random_inputs(g)
    func = s.main
    blocks = scatter_inputs(inputs, func.attributes["in_shardings"])
    outs = NumpyExecutor(s).run_blocks(blocks)
    got = gather_outputs(outs, func.attributes["out_shapes"], func.attributes["out_shardings"])
    assert_same(got, run_reference(g, inputs))


# ----- scatter and gather -------------------------------------------------------------------------

MESH = DeviceMesh.create("m", {"x": 4, "y": 2}, [5, 2, 7, 0, 1, 6, 3, 4])


def _mapping(*dims: tuple[AxisRef, ...], unreduced: tuple[AxisRef, ...] = ()) -> NamedMapping:
    from shardc.ir.mapping import DimSharding

    return NamedMapping(MESH, tuple(DimSharding(d) for d in dims), (), unreduced)


X, Y = AxisRef("x"), AxisRef("y")
X1, X2 = AxisRef("x", 1, 2), AxisRef("x", 2, 2)
LAYOUTS = [
    _mapping((), ()),
    _mapping((X,), ()),
    _mapping((), (Y, X)),
    _mapping((X2,), (Y, X1)),
    _mapping((Y,), (X,)),
]


@pytest.mark.parametrize("mapping", LAYOUTS, ids=lambda m: m.text())
@pytest.mark.parametrize("shape", [(8, 6), (10, 7), (3, 1)])
def test_scatter_is_the_definition_and_gather_inverts_it(mapping, shape) -> None:
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    blocks = scatter(array, mapping)
    want = reference_blocks(array, mapping)
    assert sorted(blocks) == sorted(want)
    for d in want:
        np.testing.assert_array_equal(blocks[d], want[d])
    np.testing.assert_array_equal(gather(blocks, shape, mapping), array)


def test_scatter_unreduced_puts_the_value_once() -> None:
    mapping = _mapping((X,), (), unreduced=(Y,))
    array = np.arange(20, dtype=np.float32).reshape(10, 2)
    blocks = scatter(array, mapping)
    total = sum(blocks.values())
    assert float(total.sum()) == pytest.approx(float(array.sum()))
    np.testing.assert_array_equal(gather(blocks, array.shape, mapping), array)


# ----- every collective alone against its definition ------------------------------------------


def _collective_text(step: Step, src: NamedMapping, shape: tuple[int, ...]) -> str:
    dst = step.apply(src, shape)
    t = "x".join(map(str, shape))
    mesh = src.mesh
    ids = "" if mesh.device_ids is None else f", device_ids=[{', '.join(map(str, mesh.device_ids))}]"
    axes = ", ".join(f'"{n}"={s}' for n, s in mesh.axes)

    def per_dim(v) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, d)) + "]" for d in v) + "]"

    attrs = {
        "all_gather": lambda: f"{{gathering_axes = {per_dim(step.gathering_axes)}}}",
        "all_slice": lambda: f"{{slicing_axes = {per_dim(step.slicing_axes)}}}",
        "all_to_all": lambda: (
            f"{{params = [{{{', '.join(map(str, step.axes))}}}: {step.src_dim}->{step.tgt_dim}]}}"
        ),
        "collective_permute": lambda: "",
        "all_reduce": lambda: f"{{reduction_axes = [{', '.join(map(str, step.reduction_axes))}]}}",
        "reduce_scatter": lambda: f"{{scatter_axes = {per_dim(step.reduce_scatter_axes)}}}",
    }[step.kind]()
    return (
        f"mesh @{mesh.name} = <[{axes}]{ids}>\n"
        f"func @main(%a: tensor<{t}xf32, {src.text()}>) -> tensor<{t}xf32, {dst.text()}> {{\n"
        f"  %0 = {step.kind} %a {attrs} : tensor<{t}xf32, {dst.text()}>\n"
        "  return %0\n}\n"
    )


M2 = DeviceMesh.create("m", {"x": 4, "y": 2}, [3, 6, 1, 0, 7, 2, 5, 4])
M1 = DeviceMesh.create("m", {"x": 4})


def _m(mesh: DeviceMesh, *dims, unreduced=(), op="sum") -> NamedMapping:
    from shardc.ir.mapping import DimSharding
    from shardc.ir.placements import ReduceOp

    refs = lambda names: tuple(AxisRef(n) if isinstance(n, str) else n for n in names)  # noqa: E731
    return NamedMapping(
        mesh, tuple(DimSharding(refs(d)) for d in dims), (), refs(unreduced), ReduceOp(op)
    )


COLLECTIVES = [
    (AllGather(((X,), ())), _m(M1, ["x"], [])),
    (AllGather(((Y,), (X,))), _m(M2, ["y"], ["x"])),
    (AllGather(((), (X1,))), _m(M2, ["y"], [X2, X1])),
    (AllSlice(((), (X,))), _m(M1, [], [])),
    (AllSlice(((Y,), (X1,))), _m(M2, [], [])),
    (AllToAll((X,), 0, 1), _m(M1, ["x"], [])),
    (AllToAll((Y,), 1, 0), _m(M2, ["x"], ["y"])),
    (AllToAll((X, Y), 0, 1), _m(M2, ["x", "y"], [])),  # two axes: parts in group order
    (AllToAll((Y, X), 1, 0), _m(M2, [], ["y", "x"])),
    (AllToAll((X2,), 0, 1), _m(M2, ["y", X2], [X1])),  # a sub-axis
    (CollectivePermute(_m(M2, ["y"], ["x"])), _m(M2, ["x"], ["y"])),
    (CollectivePermute(_m(M1, ["x"], [])), _m(M1, [], ["x"])),
    (AllReduce((X,)), _m(M1, [], [], unreduced=["x"])),
    (AllReduce((Y,)), _m(M2, ["x"], [], unreduced=["y"], op="max")),
    (ReduceScatter(((X,), ())), _m(M1, [], [], unreduced=["x"])),
    (ReduceScatter(((), (Y, X))), _m(M2, [], [], unreduced=["x", "y"])),
    (ReduceScatter(((Y,), ())), _m(M2, [], ["x"], unreduced=["y"], op="min")),
]


def _applicable(step, src, shape) -> bool:
    """Whether the collective is defined on this shape (an uneven dim must nest its shards)."""
    try:
        step.apply(src, shape)
    except ShardingError:
        return False
    return True


# Only the (collective, shape) pairs the collective is defined on; the others are rejected by
# `apply` (tested in tests/analysis/test_planner.py), not run.
COLLECTIVE_CASES = [
    pytest.param(step, src, shape, id=f"{step.kind}-{src.text()}-{shape[0]}x{shape[1]}")
    for step, src in COLLECTIVES
    for shape in [(8, 8), (10, 6), (5, 3)]
    if _applicable(step, src, shape)
]


@pytest.mark.parametrize("step,src,shape", COLLECTIVE_CASES)
@pytest.mark.parametrize("backend", ["numpy", "numpy-groups", "jax"])
def test_collective_alone_matches_its_definition(step, src, shape, backend) -> None:
    """Per-device output blocks, on their real (unpadded) region, equal the simulator's."""
    dst = step.apply(src, shape)
    text = _collective_text(step, src, shape)
    _, s = lower(text)
    array = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    blocks = simulate.distribute(array, src)
    want, _ = simulate.execute_step(step, blocks, shape, src)
    if backend == "jax":
        got_global = jax_executor()(s).run([array])[0]
        np.testing.assert_allclose(got_global, array, rtol=1e-5, atol=1e-5)
        return
    got = NumpyExecutor(s, general_groups=backend == "numpy-groups").run_blocks([blocks])[0]
    mesh = dst.mesh
    position = mesh.positions_by_id()
    for device, block in want.items():
        region = shard_bounds(shape, dst, position[device])
        real = tuple(slice(0, hi - lo) for lo, hi in region)
        np.testing.assert_allclose(got[device][real], block[real], rtol=1e-5, atol=1e-5)


# ----- errors -------------------------------------------------------------------------------------


def test_spmd_rejects_an_op_that_does_not_compute_locally() -> None:
    text = """
mesh @m = <["x"=2]>
func @main(%a: tensor<4xf32, <@m, [{"x"}]>>, %b: tensor<4xf32, <@m, [{}]>>) -> tensor<4xf32, <@m, [{"x"}]>> {
  %0 = add %a, %b : tensor<4xf32, <@m, [{"x"}]>>
  return %0
}
"""
    with pytest.raises(PassError, match="does not compute locally"):
        lower(text)


def test_spmd_rejects_a_reshard_left_in_the_program() -> None:
    text = """
mesh @m = <["x"=2]>
func @main(%a: tensor<4xf32, <@m, [{"x"}]>>) -> tensor<4xf32, <@m, [{}]>> {
  %0 = reshard %a : tensor<4xf32, <@m, [{}]>>
  return %0
}
"""
    with pytest.raises(PassError, match="run insert-reshards and lower-collectives"):
        lower(text)


def test_spmd_rejects_an_unreduced_operand() -> None:
    text = """
mesh @m = <["x"=2]>
func @main(%a: tensor<4xf32, <@m, [{}], unreduced={"x"}>>) -> tensor<4xf32, <@m, [{}], unreduced={"x"}>> {
  %0 = tanh %a : tensor<4xf32, <@m, [{}], unreduced={"x"}>>
  return %0
}
"""
    with pytest.raises(PassError, match="operand 0 is unreduced"):
        lower(text)


def test_executor_rejects_a_global_program() -> None:
    with pytest.raises(ExecutionError, match="run the 'spmd' pass first"):
        NumpyExecutor(parse_module(MEGATRON))


def test_jax_missing_gives_an_install_hint(monkeypatch) -> None:
    from shardc.executors.jax_runtime import import_jax

    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ExecutionError, match=r"pip install 'shardc\[jax\]'"):
        import_jax()


def test_spmd_text_round_trips() -> None:
    from shardc.ir.printer import print_module

    _, s = lower(UNEVEN_REDUCTIONS)
    text = print_module(s)
    assert print_module(parse_module(text)) == text
    assert 'in_shardings = [<@m, [{"x"}, {}]>, <@m, [{"x"}, {}]>]' in text
