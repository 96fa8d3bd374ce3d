"""The halo exchange of sdy-resolve-permutation-factors (passes/reshard/halo_exchange.py):
its pairs, what it prints against jaxlib 0.10.2 on random reverses (tests/halo_programs.py), and
what the program it writes computes on simulated devices against the unsharded reverse."""

from __future__ import annotations

import random

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ExecutionError, ShardcError
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.manual import manual_computations, manual_names
from shardc.passes.reshard.halo_exchange import right_shift_pairs
from shardc.stablehlo import import_stablehlo
from tests.export_compare import run_shardc
from tests.halo_programs import reverse_module

PASS = "sdy-resolve-permutation-factors"


def test_right_shift_pairs_carry_from_the_minor_axis_to_the_major_one() -> None:
    # Mesh positions a*2 + b; the dim is cut by "b" (major) then "a":(1)2 (minor): a shard's
    # successor adds 2 to "a", or when "a":(1)2 is last, wraps it and adds 1 to "b".
    mesh = DeviceMesh.create("m", {"a": 4, "b": 2})
    pairs = right_shift_pairs(mesh, [AxisRef("b"), AxisRef("a", 1, 2)])
    assert pairs == [(0, 4), (1, 5), (2, 6), (3, 7), (4, 1), (6, 3)]


def test_right_shift_pairs_keep_the_other_axes_and_name_device_ids() -> None:
    # The dim cut by "a" alone: each device sends to the next "a", its "b" kept (+2 positions).
    mesh = DeviceMesh.create("m", {"a": 4, "b": 2})
    assert right_shift_pairs(mesh, [AxisRef("a")]) == [
        (0, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7)]
    # Device ids not the iota: the pairs name the devices at those positions.
    ids = DeviceMesh("m", (("a", 2), ("b", 2)), (3, 1, 0, 2))
    assert right_shift_pairs(ids, [AxisRef("a")]) == [(3, 0), (1, 2)]


def _faithful_in_jaxlib(module) -> bool:
    """Whether jaxlib 0.10.2's pairs (positions of the manual axes alone) are device ids here:
    every manual computation's mesh is in device order and every axis of size > 1 is manual."""
    for op in manual_computations(module):
        mesh = op.attributes["in_shardings"][0].mesh
        if mesh.device_ids is not None or any(
                mesh.axis_size(n) > 1 and n not in manual_names(op) for n in mesh.axis_names):
            return False
    return True


def _halo(seed: int) -> tuple[str, object] | None:
    text = reverse_module(random.Random(seed))
    try:
        module = import_stablehlo(run_shardc(text, PASS), "out.mlir")
    except ShardcError:
        return None
    return (text, module) if manual_computations(module) else None


def test_the_program_computes_the_unsharded_reverse() -> None:
    """The body runs on every device of the mesh (numpy, devices batched) with the pairs as
    device ids; the program equals the unsharded reverse, including where only some axes are
    manual or the device ids are not the iota (where jaxlib 0.10.2's program is wrong)."""
    checked = partial = 0
    for seed in range(120):
        found = _halo(seed)
        if found is None:
            continue
        text, module = found
        original = import_stablehlo(text, "in.mlir")
        x = np.random.default_rng(seed).standard_normal(original.main.args[0].type.shape)
        x = x.astype(np.float32)
        same = np.array_equal(run_reference(module, [x])[0], run_reference(original, [x])[0])
        assert same, f"seed {seed}:\n{text}"
        checked += 1
        partial += not _faithful_in_jaxlib(module)
    assert checked >= 40 and partial >= 20, (checked, partial)


PARTIAL = """sdy.mesh @m = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<3x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {"y"}]>})
    -> tensor<3x4xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m,
       [{"x"}, {"y"}]>]>} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
"""


def test_pairs_are_device_ids_of_the_whole_mesh() -> None:
    """Only "x" is manual: device (x=0, y) sends to (x=1, y), ids 0 -> 2 and 1 -> 3 (jaxlib
    0.10.2 writes [0, 1], positions along "x", and so sends to the neighbour along "y")."""
    out = run_shardc(PARTIAL, PASS)
    assert "source_target_pairs = dense<[[0, 2], [1, 3]]>" in out
    module = import_stablehlo(out, "out.mlir")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run_reference(module, [x])[0], x[::-1])


def test_jax_runs_the_body_as_ppermute() -> None:
    jax = pytest.importorskip("jax")
    from shardc.executors.jax_global import global_function

    devices = len(jax.devices())
    found = [f for f in map(_halo, range(60)) if f is not None
             and all(m.num_devices <= devices for m in f[1].meshes.values())
             and ":(" not in f[0]]  # the JAX translation has no manual sub-axes
    assert len(found) >= 5
    for text, module in found[:5]:
        shape = module.main.args[0].type.shape
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        want = run_reference(import_stablehlo(text, "in.mlir"), [x])[0]
        got = jax.jit(global_function(module))(x)[0]
        np.testing.assert_array_equal(np.asarray(got), want)


def test_jax_refuses_pairs_along_a_free_axis_located() -> None:
    jax = pytest.importorskip("jax")
    from shardc.executors.jax_global import global_function

    # jaxlib 0.10.2's pairs for PARTIAL: [0, 1] moves a block along the free axis "y".
    out = run_shardc(PARTIAL, PASS).replace("dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>",
                                            "dense<[[0, 1]]> : tensor<1x2xi64>")
    module = import_stablehlo(out, "out.mlir")
    with pytest.raises(ExecutionError, match="along a free axis") as info:
        jax.jit(global_function(module))(np.zeros((3, 4), np.float32))
    assert info.value.loc is not None and info.value.loc.line > 0


def test_spmd_compile_of_two_meshes_is_a_located_error() -> None:
    """shardc's own SPMD pipeline does not move data between meshes (the reshard onto
    @m_reversed): compiling the pass's output says so where, no traceback."""
    from shardc.pipeline import compile

    module = import_stablehlo(run_shardc(PARTIAL, PASS), "out.mlir")
    with pytest.raises(ShardcError, match="mixes meshes") as info:
        compile(module)
    assert info.value.loc is not None


def test_shardc_prints_what_jaxlib_prints_on_random_reverses() -> None:
    pytest.importorskip("jax")
    from tests.export_compare import JaxlibWorker, compare

    worker = JaxlibWorker()
    kinds: dict[str, int] = {}
    try:
        for seed in range(60):
            text = reverse_module(random.Random(seed))
            outcome = compare(text, PASS, worker)
            assert outcome.kind != "shardc-error", f"seed {seed}:\n{outcome.detail}"
            if outcome.kind == "differ":  # only where jaxlib's pairs are not device ids
                found = _halo(seed)
                assert found is not None and not _faithful_in_jaxlib(found[1]), (
                    f"seed {seed}:\n{outcome.detail}")
                assert "source_target_pairs" in outcome.detail
            if outcome.kind == "jaxlib-rejects":  # a body dim its manual sub-axis does not cut
                with pytest.raises(ShardcError):
                    run_shardc(text, PASS)
            halo = outcome.kind == "same" and _halo(seed) is not None
            kinds[outcome.kind + ("+halo" if halo else "")] = kinds.get(outcome.kind, 0) + 1
    finally:
        worker.close()
    assert kinds.get("same+halo", 0) >= 15, kinds
