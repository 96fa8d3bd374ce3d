"""`sdy-explicit-gather-scatter-batching` against jaxlib's pass on random gathers and scatters
whose indices may or may not read the operand's rows through an iota, and against the unsharded
reference (the rewritten program computes what the original did)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from shardc.passes.ingest.explicit_gather_scatter_batching import rewrite_function
from shardc.stablehlo import export_stablehlo, import_stablehlo
from tests.export_compare import compare

PASS = "sdy-explicit-gather-scatter-batching"


def _t(shape, dtype="i32") -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + f"{dtype}>"


def _iota_source(rng: random.Random, b: int, lines: list[str]) -> str:
    """A `Bx1` index column that is an iota along dim 0, through one of the wrappers Shardy
    follows, or (sometimes) one that is not such an iota."""
    kind = rng.choice(["iota", "reshape", "broadcast", "clamp", "select", "iota_dim1", "arg"])
    if kind in ("iota", "clamp", "select"):
        lines.append(f"  %iota = stablehlo.iota dim = 0 : {_t((b, 1))}")
    elif kind == "iota_dim1":
        lines.append(f"  %iota = stablehlo.iota dim = 1 : {_t((b, 1))}")
    elif kind == "arg":
        return "%col2"
    else:
        lines.append(f"  %i1 = stablehlo.iota dim = 0 : {_t((b,))}")
        if kind == "reshape":
            lines.append(f"  %iota = stablehlo.reshape %i1 : ({_t((b,))}) -> {_t((b, 1))}")
        else:
            lines.append(f"  %iota = stablehlo.broadcast_in_dim %i1, dims = [0] : "
                         f"({_t((b,))}) -> {_t((b, 1))}")
    if kind == "clamp":
        # (the constant first: Shardy's rewrite driver moves constants to the top)
        lines.insert(0, f"  %lo = stablehlo.constant dense<0> : {_t((b, 1))}")
        lines.append(f"  %ci = stablehlo.clamp %lo, %iota, %col2 : {_t((b, 1))}")
        return "%ci"
    if kind == "select":
        lines.append(f"  %p = stablehlo.compare LT, %col, %col2 : ({_t((b, 1))}, {_t((b, 1))}) "
                     f"-> {_t((b, 1), 'i1')}")
        lines.append(f"  %si = stablehlo.select %p, %col, %iota : {_t((b, 1), 'i1')}, "
                     f"{_t((b, 1))}")
        return "%si"
    return "%iota"


def random_program(seed: int) -> str:
    rng = random.Random(seed)
    b, m = rng.choice([4, 8]), rng.choice([3, 8])
    scatter = rng.random() < 0.4
    first = rng.random() < 0.5  # the iota column first in the index vector
    lines: list[str] = []  # (no dead code: Shardy's rewrite driver would erase it)
    build = rng.choice(["concat", "concat", "arg_pair"])
    if build == "concat":
        source = _iota_source(rng, b, lines)
        parts = [source, "%col"] if first else ["%col", source]
        lines.append(f"  %idx = stablehlo.concatenate {parts[0]}, {parts[1]}, dim = 1 : "
                     f"({_t((b, 1))}, {_t((b, 1))}) -> {_t((b, 2))}")
        idx = "%idx"
    else:  # the whole index vector from one iota of shape Bx2 (sliced apart) or an argument
        if rng.random() < 0.5:
            lines.append(f"  %idx = stablehlo.iota dim = 0 : {_t((b, 2))}")
            idx = "%idx"
        else:
            idx = "%pair"
    index_map = "[0, 1]" if first else "[1, 0]"
    collapse_both = rng.random() < 0.5
    collapsed = "[0, 1]" if collapse_both else rng.choice(["[0]", "[0]", "[1]"])
    if scatter:
        window, upd = ("[]", (b,)) if collapse_both else ("[1]", (b, 1))
        lines.append(
            f'  %r = "stablehlo.scatter"(%x, {idx}, %u) <{{scatter_dimension_numbers = '
            f"#stablehlo.scatter<update_window_dims = {window}, inserted_window_dims = "
            f"{collapsed}, scatter_dims_to_operand_dims = {index_map}, index_vector_dim = 1>}}> ({{\n"
            f"  ^bb0(%a: tensor<f32>, %c: tensor<f32>):\n"
            f"    %s = stablehlo.add %a, %c : tensor<f32>\n"
            f"    stablehlo.return %s : tensor<f32>\n"
            f"  }}) : ({_t((b, m), 'f32')}, {_t((b, 2))}, {_t(upd, 'f32')}) -> {_t((b, m), 'f32')}")
        result = _t((b, m), "f32")
    else:
        offset, out = ("[]", (b,)) if collapse_both else ("[1]", (b, 1))
        lines.append(
            f'  %r = "stablehlo.gather"(%x, {idx}) <{{dimension_numbers = #stablehlo.gather<'
            f"offset_dims = {offset}, collapsed_slice_dims = {collapsed}, start_index_map = "
            f"{index_map}, index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}}> : "
            f"({_t((b, m), 'f32')}, {_t((b, 2))}) -> {_t(out, 'f32')}")
        upd, result = (b, 1), _t(out, "f32")
    head = (f"func.func @main(%x: {_t((b, m), 'f32')}, %col: {_t((b, 1))}, %col2: {_t((b, 1))}, "
            f"%pair: {_t((b, 2))}, %u: {_t(upd, 'f32')}) -> {result} {{")
    return "\n".join([head, *lines, f"  return %r : {result}", "}"]) + "\n"


def test_random_programs_agree_with_jaxlib():
    pytest.importorskip("jax")
    kinds: dict[str, int] = {}
    rewritten = 0
    for seed in range(120):
        text = random_program(seed)
        outcome = compare(text, PASS)
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        assert outcome.kind in ("same", "jaxlib-rejects"), f"seed {seed}:\n{text}\n{outcome.detail}"
        if outcome.kind == "same":
            module = import_stablehlo(text, "p.mlir")
            rewritten += rewrite_function(module.functions["main"])
    # Most programs are valid, and both rewritten and left alone are well represented.
    assert kinds.get("same", 0) >= 100, kinds
    assert 25 <= rewritten <= kinds["same"] - 25, (rewritten, kinds)


def test_rewrite_keeps_the_result():
    """Each rewritten program computes what the original computed (the numpy reference, indices
    in range), after printing and reading it back."""
    from shardc.executors.reference import run_reference

    checked = 0
    for seed in range(60):
        text = random_program(seed)
        if "stablehlo.select" in text:
            continue  # the rewrite reads select's iota side as the index (see the pass)
        before = import_stablehlo(text, "p.mlir")
        after = import_stablehlo(text, "p.mlir")
        if not rewrite_function(after.functions["main"]):
            continue
        after = import_stablehlo(export_stablehlo(after), "q.mlir")
        rng = np.random.default_rng(seed)
        args = []
        for a in before.functions["main"].args:
            t = a.type
            if t.dtype == "f32":
                args.append(rng.standard_normal(t.shape).astype(np.float32))
            elif a.index == 2:  # %col2, the clamp's upper bound: keeps the iota as it is
                args.append(np.full(t.shape, t.shape[0] - 1, np.int32))
            else:
                args.append(rng.integers(0, 3, t.shape).astype(np.int32))
        np.testing.assert_allclose(run_reference(after, args)[0], run_reference(before, args)[0],
                                   rtol=1e-6, err_msg=f"seed {seed}")
        checked += 1
    assert checked >= 15, checked
