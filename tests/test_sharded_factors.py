"""Every op kind with sharded factors compiles and runs like the unsharded program.

For each program of tests/op_catalogue.py (gather, scatter, reduce, dot_general, reduce_window,
sort, top_k, convolution, dynamic slices, ...), hypothesis shards its arguments at random on a
random mesh (uneven dims included; open and closed dims, priorities). Whatever propagation
accepts, `compile` must lower (never "not supported by spmd"), and the per-device program on
simulated devices must give the reference interpreter's result. `SHARDC_FACTOR_EXAMPLES=N`
runs N programs per kind instead of 40 (a larger survey).

Each kind also runs outlined (`outlined`): its op in a private function `main` calls, in a
module that also declares JAX's axis-less `@empty_mesh`, as JAX writes `jnp.take` and its
gradient in a training step. There the callee's result has no sharding after propagation, so
what insert-reshards makes of it (a partial sum, a sharded value) must be made replicated before
the return: the callers read it so.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ShardcError
from shardc.ir.parser import parse_module
from shardc.ir.types import is_float, numpy_dtype
from shardc.passes.manager import PassContext, PassManager, parse_pipeline
from shardc.pipeline import compile
from tests.op_catalogue import CATALOGUE, OpKind

EXAMPLES = int(os.environ.get("SHARDC_FACTOR_EXAMPLES", "40"))
MESHES = [
    {"a": 2, "b": 4},
    {"a": 2, "b": 3},
    {"a": 4},
    {"a": 2, "b": 2, "c": 2},
    {"a": 3, "b": 2},
]


def _mesh_line(axes: dict[str, int]) -> str:
    inner = ", ".join(f'"{n}"={s}' for n, s in axes.items())
    return f"mesh @mesh = <[{inner}]>"


@st.composite
def _sharding(draw, axes: dict[str, int], rank: int) -> str:
    """`, <@mesh, [...]>` or nothing: each axis on a random dim (or none), dims open or closed."""
    if draw(st.integers(0, 4)) == 0:
        return ""
    dims: list[list[str]] = [[] for _ in range(rank)]
    for name in draw(st.permutations(list(axes))):
        d = draw(st.integers(-1, rank - 1)) if rank else -1
        if d >= 0:
            dims[d].append(f'"{name}"')
    parts = []
    for d in dims:
        is_open = draw(st.booleans())
        body = ", ".join(d + (["?"] if is_open else []))
        prio = "p1" if d and draw(st.integers(0, 5)) == 0 else ""
        parts.append("{" + body + "}" + prio)
    return f", <@mesh, [{', '.join(parts)}]>"


def _arg_ranks(kind: OpKind) -> list[int]:
    """The rank of each argument, read from the text's signature."""
    header = kind.text.split("func @main(", 1)[1].split(")", 1)[0]
    ranks = []
    for arg in header.split("%")[1:]:
        shape = arg.split("tensor<", 1)[1].split("{", 1)[0]
        ranks.append(shape.count("x"))
    return ranks


@st.composite
def programs(draw, kind: OpKind) -> str:
    axes = draw(st.sampled_from(MESHES))
    fill = {"mesh": _mesh_line(axes)}
    for i, rank in enumerate(_arg_ranks(kind)):
        fill[f"s{i}"] = draw(_sharding(axes, rank))
    return fill_in(kind, fill)


def outlined(kind: OpKind) -> OpKind:
    """`kind` with its `main` outlined: `main` (the same arguments and shardings) calls a private
    function holding the op, whose arguments and results carry no sharding, in a module that
    also declares `@empty_mesh` (so close-shardings leaves what propagation did not reach
    without a sharding, as in a JAX program with a scalar)."""
    head, rest = kind.text.split("func @main(", 1)
    params, rest = rest.split(") -> ", 1)
    results, body = rest.split(" {\n", 1)
    types = results.removeprefix("(").removesuffix(")")
    outs = ", ".join(f"%r{k}" for k in range(types.count("tensor<")))
    args = ", ".join("%" + name for name in re.findall(r"%(\w+):", params))
    main = (f"func @main({params}) -> {results} {{\n"
            f"  {outs} = call {args} {{callee = @outlined}} : {types}\n  return {outs}\n}}\n\n")
    callee = f"func private @outlined({re.sub(r'{s[0-9]+}', '', params)}) -> {results} {{\n"
    text = head.replace("{mesh}", "{mesh}\nmesh @empty_mesh = <[]>") + main + callee + body
    return dataclasses.replace(kind, name=f"{kind.name}_outlined", text=text)


OUTLINED = [outlined(kind) for kind in CATALOGUE]


def fill_in(kind: OpKind, fill: dict[str, str]) -> str:
    text = kind.text
    for key, value in fill.items():
        text = text.replace("{" + key + "}", value)
    return text


def inputs_for(kind: OpKind, module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i, a in enumerate(module.main.args):
        dt, shape = a.type.dtype, a.type.shape
        if is_float(dt):
            if kind.positive:
                out.append(rng.uniform(0.5, 1.5, shape).astype(numpy_dtype(dt)))
            else:
                out.append(rng.standard_normal(shape).astype(numpy_dtype(dt)))
            continue
        r = kind.ints[i]
        if r.unique:
            n = int(np.prod(shape))
            out.append(rng.permutation(np.arange(r.low, r.high))[:n].reshape(shape).astype("i4"))
        else:
            out.append(rng.integers(r.low, r.high, shape).astype(numpy_dtype(dt)))
    return out


def propagation_accepts(text: str) -> bool:
    module = parse_module(text)
    try:
        PassManager(parse_pipeline("propagate")).run(module, PassContext())
    except ShardcError:
        return False
    return True


def check_kind(kind: OpKind, text: str, backend: str = "numpy") -> None:
    module = parse_module(text)
    inputs = inputs_for(kind, module)
    expected = run_reference(module, inputs)
    result = compile(module)  # a propagated program must lower: no error here
    got = result.run(inputs, backend=backend)
    for g, w in zip(got, expected, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        if is_float(str(w.dtype)) or w.dtype.kind == "f":
            scale = max(float(np.max(np.abs(w))), 1.0)
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(g, w)


def test_the_catalogue_parses_unsharded() -> None:
    for kind in CATALOGUE + OUTLINED:
        fill = {f"s{i}": "" for i in range(len(_arg_ranks(kind)))}
        text = fill_in(kind, {"mesh": _mesh_line({"a": 2}), **fill})
        check_kind(kind, text)


@pytest.mark.parametrize(
    ("kind", "examples"),
    [pytest.param(k, EXAMPLES, id=k.name) for k in CATALOGUE]
    + [pytest.param(k, max(EXAMPLES // 4, 1), id=k.name) for k in OUTLINED],
)
def test_every_sharding_propagation_accepts_lowers_and_runs(kind: OpKind, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs(kind))
    def run(text: str) -> None:
        assume(propagation_accepts(text))
        check_kind(kind, text)

    run()


def _fixed(kind: OpKind) -> str:
    """Each argument: first dim on "a", last dim on "b" (rank >= 2), closed."""
    fill = {"mesh": _mesh_line({"a": 2, "b": 4})}
    for i, rank in enumerate(_arg_ranks(kind)):
        dims = [[] for _ in range(rank)]
        if rank:
            dims[0].append('"a"')
        if rank >= 2:
            dims[-1].append('"b"')
        body = ", ".join("{" + ", ".join(d) + "}" for d in dims)
        fill[f"s{i}"] = f", <@mesh, [{body}]>"
    return fill_in(kind, fill)


@pytest.mark.parametrize("kind", CATALOGUE + OUTLINED, ids=lambda k: k.name)
def test_every_kind_runs_on_the_jax_executor(kind: OpKind) -> None:
    pytest.importorskip("jax")
    if kind.numpy_only:  # the JAX executor runs no general scatter body: a located error
        from shardc.ir.diagnostics import ExecutionError

        with pytest.raises(ExecutionError, match=r":\d+:\d+: error: 'scatter' op: its update body"):
            check_kind(kind, _fixed(kind), backend="jax")
        return
    check_kind(kind, _fixed(kind), backend="jax")
