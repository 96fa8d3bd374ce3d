"""The cost report: every number below is worked out by hand in the comments (docs/cost.md)."""

from __future__ import annotations

import pytest

from shardc.ir.parser import parse_module
from shardc.passes.analysis.collectives import plan_reshard
from shardc.passes.analysis.cost import collective_report, peak_memory
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

load_all_passes()


def report(text: str) -> dict:
    return collective_report(parse_module(text))


def one(text: str) -> dict:
    r = report(text)
    assert len(r["collectives"]) == 1
    return r["collectives"][0]


MESH4 = 'mesh @m = <["x"=4]>\n'


def test_cli_example_all_reduce() -> None:
    # f32[16, 64] split 2 ways on dim 0: local 8x64 = 512 elements = 2048 bytes. Ring all_reduce
    # over 4 devices: 2 * 3 * ceil(512 / 4) * 4 = 3072.
    r = report(
        'mesh @mesh = <["dp"=2, "tp"=4]>\n'
        'func @main(%u: tensor<16x64xf32, <@mesh, [{"dp"}, {}], unreduced={"tp"}>>) '
        '-> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {\n'
        '  %0 = all_reduce %u {reduction_axes = ["tp"]} : '
        'tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>\n'
        "  return %0\n}\n"
    )
    assert r["collectives"] == [
        {
            "kind": "all_reduce",
            "axes": ["tp"],
            "global_shape": [16, 64],
            "local_shape": [8, 64],
            "dtype": "f32",
            "bytes_per_device": 2048,
            "ring_bytes_per_device": 3072,
            "group_size": 4,
            "groups": [[0, 1, 2, 3], [4, 5, 6, 7]],
            "steps": [{"kind": "all_reduce", "axes": ["tp"], "local_shape": [8, 64],
                       "bytes_per_device": 2048, "ring_bytes_per_device": 3072,
                       "group_size": 4}],
            "value": "%0",
            "function": "main",
        }
    ]
    assert r["total_comm_bytes"] == 2048
    assert r["total_ring_bytes"] == 3072
    assert r["by_kind"] == {"all_reduce": {"count": 1, "bytes": 2048}}
    assert r["by_axis"] == {"tp": 2048}
    # %u (2048) and %0 (2048) are both live while the all_reduce runs.
    assert r["peak_memory_bytes_per_device"] == 4096


def _unary(op: str, attrs: str, src: str, dst: str, shape: str = "10") -> str:
    return (
        MESH4 + f"func @main(%a: tensor<{shape}xf32, <@m, {src}>>) -> "
        f"tensor<{shape}xf32, <@m, {dst}>> {{\n"
        f"  %0 = {op} %a {attrs} : tensor<{shape}xf32, <@m, {dst}>>\n  return %0\n}}\n"
    )


# Uneven: f32[10] over 4 devices holds ceil(10/4) = 3 padded elements per device (12 bytes).
@pytest.mark.parametrize(
    ("op", "attrs", "src", "dst", "local", "comm", "ring"),
    [
        # larger buffer: the gathered 10 elements = 40 bytes; ring: 3 padded shards = 36 bytes.
        ("all_gather", '{gathering_axes = [["x"]]}', '[{"x"}]', "[{}]", [3], 40, 36),
        # slicing is local: nothing crosses the interconnect.
        ("all_slice", '{slicing_axes = [["x"]]}', "[{}]", '[{"x"}]', [10], 0, 0),
        # 40-byte partials; ring all_reduce: 2 * 3 * ceil(10/4) * 4 = 72.
        ("all_reduce", '{reduction_axes = ["x"]}', '[{}], unreduced={"x"}', "[{}]", [10], 40, 72),
        # reduce 40-byte partials, keep 3 elements: ring 3 * 3 * 4 = 36.
        (
            "reduce_scatter",
            '{scatter_axes = [["x"]]}',
            '[{}], unreduced={"x"}',
            '[{"x"}]',
            [10],
            40,
            36,
        ),
    ],
)
def test_uneven_collectives(op, attrs, src, dst, local, comm, ring) -> None:
    e = one(_unary(op, attrs, src, dst))
    assert e["kind"] == op
    assert e["local_shape"] == local
    assert e["bytes_per_device"] == comm
    assert e["ring_bytes_per_device"] == ring
    assert e["group_size"] == 4
    assert e["groups"] == [[0, 1, 2, 3]]


def test_uneven_all_to_all() -> None:
    # f32[10, 8]: [{"x"}, {}] holds 3x8 = 24 elements, [{}, {"x"}] holds 10x2 = 20; the larger is
    # 96 bytes. Each device sends 3 pieces of 3x2 elements: 3 * 6 * 4 = 72 bytes.
    e = one(
        _unary(
            "all_to_all",
            '{params = [{"x"}: 0->1]}',
            '[{"x"}, {}]',
            '[{}, {"x"}]',
            "10x8",
        )
    )
    assert (e["local_shape"], e["bytes_per_device"], e["ring_bytes_per_device"]) == ([3, 8], 96, 72)


def test_groups_follow_device_ids() -> None:
    # Devices at mesh positions 0..3 are ids 3, 2, 1, 0; "y" groups differ only in y.
    e = one(
        'mesh @m = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>\n'
        'func @main(%u: tensor<8xf32, <@m, [{"x"}], unreduced={"y"}>>) '
        '-> tensor<8xf32, <@m, [{"x"}]>> {\n'
        '  %0 = all_reduce %u {reduction_axes = ["y"]} : tensor<8xf32, <@m, [{"x"}]>>\n'
        "  return %0\n}\n"
    )
    assert e["groups"] == [[3, 2], [1, 0]]
    assert e["bytes_per_device"] == 16  # 4 local elements


def test_collective_permute_entry() -> None:
    # [{"x", "y"}] -> [{"y", "x"}] on f32[16] over 4 devices: 4 elements (16 bytes) each;
    # ring: the whole block moves once = 16 bytes. Pairs instead of groups.
    r = report(
        'mesh @m = <["x"=2, "y"=2]>\n'
        'func @main(%a: tensor<16xf32, <@m, [{"x", "y"}]>>) -> tensor<16xf32, <@m, [{"y", "x"}]>> {\n'
        '  %0 = collective_permute %a : tensor<16xf32, <@m, [{"y", "x"}]>>\n'
        "  return %0\n}\n"
    )
    e = r["collectives"][0]
    assert (e["bytes_per_device"], e["ring_bytes_per_device"], e["axes"]) == (16, 16, ["x", "y"])
    # Device at (x, y) needs the block of (y, x): positions 1 and 2 swap.
    assert sorted(map(tuple, e["groups"])) == [(1, 2), (2, 1)]
    assert r["by_axis"] == {"x": 16, "y": 16}


def test_totals_by_kind_and_axis() -> None:
    # Two collectives: all_gather of "y" on f32[8, 8] [{"x"}, {"y"}] (local 4x4 -> 4x8: 128
    # bytes) and all_reduce over "x" of f32[8] (32 bytes; ring 2 * 1 * 4 * 4 = 32).
    r = report(
        'mesh @m = <["x"=2, "y"=2]>\n'
        'func @main(%a: tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>, '
        '%u: tensor<8xf32, <@m, [{}], unreduced={"x"}>>) '
        '-> (tensor<8x8xf32, <@m, [{"x"}, {}]>>, tensor<8xf32, <@m, [{}]>>) {\n'
        '  %0 = all_gather %a {gathering_axes = [[], ["y"]]} : tensor<8x8xf32, <@m, [{"x"}, {}]>>\n'
        '  %1 = all_reduce %u {reduction_axes = ["x"]} : tensor<8xf32, <@m, [{}]>>\n'
        "  return %0, %1\n}\n"
    )
    assert r["total_comm_bytes"] == 128 + 32
    assert r["total_ring_bytes"] == 64 + 32  # all_gather: 1 padded shard of 16 elements
    assert r["by_kind"] == {
        "all_gather": {"count": 1, "bytes": 128},
        "all_reduce": {"count": 1, "bytes": 32},
    }
    assert r["by_axis"] == {"y": 128, "x": 32}


def test_report_agrees_with_planner() -> None:
    # Lowering a reshard and reporting its collectives gives the plan's own totals.
    text = (
        'mesh @m = <["x"=4, "y"=2]>\n'
        'func @main(%a: tensor<10x6xf32, <@m, [{"x"}, {"y"}]>>) '
        '-> tensor<10x6xf32, <@m, [{"y"}, {"x"}]>> {\n'
        '  %0 = reshard %a : tensor<10x6xf32, <@m, [{"y"}, {"x"}]>>\n  return %0\n}\n'
    )
    module = parse_module(text)
    a = module.main.args[0]
    plan = plan_reshard((10, 6), "f32", a.mapping, module.main.return_op.operand(0).mapping)
    PassManager(parse_pipeline("lower-collectives")).run(module, PassContext())
    r = collective_report(module)
    assert len(r["collectives"]) == len(plan.steps) > 0
    assert r["total_ring_bytes"] == plan.ring_bytes
    assert r["total_comm_bytes"] == plan.comm_bytes


def test_peak_memory_liveness() -> None:
    # f32[16] over 4 devices: 16 bytes per live value. %a and %0 live together (32); %a dies
    # after %0; %1 = tanh %0 makes 32 again; the unused %2 lives only while produced (48 peak:
    # %0, %1 still live for the return and the add, plus %2).
    module = parse_module(
        MESH4 + 'func @main(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {\n'
        '  %0 = tanh %a : tensor<16xf32, <@m, [{"x"}]>>\n'
        '  %1 = tanh %0 : tensor<16xf32, <@m, [{"x"}]>>\n'
        '  %2 = tanh %1 : tensor<16xf32, <@m, [{"x"}]>>\n'
        '  %3 = add %0, %1 : tensor<16xf32, <@m, [{"x"}]>>\n'
        "  return %3\n}\n"
    )
    assert peak_memory(module, module.main) == 48


def test_peak_memory_counts_callee() -> None:
    # The callee holds its argument (16) and makes two temporaries (16 each) before returning:
    # 48 inside, 32 beyond its argument. In main, %a (16) is live during the call: 16 + 32.
    module = parse_module(
        MESH4
        + 'func private @f(%v: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {\n'
        '  %0 = tanh %v : tensor<16xf32, <@m, [{"x"}]>>\n'
        '  %1 = add %0, %v : tensor<16xf32, <@m, [{"x"}]>>\n'
        "  return %1\n}\n"
        'func @main(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {\n'
        '  %0 = call %a {callee = @f} : tensor<16xf32, <@m, [{"x"}]>>\n'
        "  return %0\n}\n"
    )
    assert peak_memory(module, module.functions["f"]) == 48
    assert peak_memory(module, module.main) == 48


def test_a_collective_over_two_dims_costs_the_two_it_runs_as() -> None:
    # all_gather of a 4x4 f32 block over x=4 onto dim 0, then y=2 onto dim 1 (as spmd issues
    # it): 16x4 (256 B) after the first, 16x8 (512 B) after the second; ring bytes as one.
    from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost

    assert buffer_cost("all_gather", (16, 8), 4, (4, 2), (1, 1)) == 256 + 512
    assert buffer_cost("reduce_scatter", (16, 8), 4, (1, 1), (4, 2)) == 512 + 128
    assert buffer_cost("all_gather", (16, 8), 4, (4, 1), (1, 1)) == 512  # one dim: its output
    r = report(
        'mesh @mesh = <["x"=4, "y"=2]>\n'
        'func @main(%a: tensor<16x8xf32, <@mesh, [{"x"}, {"y"}]>>) '
        '-> tensor<16x8xf32, <@mesh, [{}, {}]>> {\n'
        '  %0 = all_gather %a {gathering_axes = [["x"], ["y"]]} : '
        'tensor<16x8xf32, <@mesh, [{}, {}]>>\n'
        "  return %0\n}\n"
    )
    (entry,) = r["collectives"]
    assert [(s["axes"], s["local_shape"], s["bytes_per_device"]) for s in entry["steps"]] == [
        (["x"], [4, 4], 256), (["y"], [16, 4], 512)]
    assert entry["bytes_per_device"] == 768
    assert entry["ring_bytes_per_device"] == ring_cost("all_gather", (16, 8), 4, (4, 2), (1, 1), 8)
