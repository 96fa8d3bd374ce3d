"""Random programs and random changes for the what-if tests (tests/explain/test_whatif.py).

    module, values = draw(sharded_programs())   # a one-function program, data- and
                                                # tensor-parallel style annotations
    change = draw(changes(module, values))      # a constraint, in_sharding or out_sharding

The programs are chains of matmuls, element-wise ops, transposes, reductions and broadcasts on
a two-axis mesh, their arguments sharded the way people shard them (a dim on one axis, two dims
on both, or replicated), closed and without priorities, so that most propagations make no
choice and the what-if engine can re-propagate instead of recompiling. The changes lay one
value, argument or result out in any way the mesh allows.
"""

from __future__ import annotations

from hypothesis import strategies as st

from shardc.ir.builder import Builder
from shardc.ir.core import Module, Value
from shardc.ir.mapping import NamedMapping

SIZES = (4, 8, 16)
UNARY = ("tanh", "negate", "exponential")
BINARY = ("add", "multiply", "maximum")


@st.composite
def layouts(draw, mesh, shape: tuple[int, ...]) -> NamedMapping:
    """A closed sharding of `shape`: each mesh axis on at most one dim it divides, or none."""
    entries: list[list[str]] = [[] for _ in shape]
    for axis, size in mesh.shape.items():
        d = draw(st.integers(-1, len(shape) - 1))
        if d >= 0 and shape[d] % (size * len(entries[d]) + size) == 0:
            entries[d].append(axis)
    spec = [None if not e else e[0] if len(e) == 1 else tuple(e) for e in entries]
    return NamedMapping.from_spec(spec, mesh)


@st.composite
def roles(draw, mesh, shape: tuple[int, ...], kind: str) -> NamedMapping:
    """How people shard a 2-d value: data (batch on "dp"), a weight (columns or rows on "tp",
    or whole), and now and then any layout (`layouts`)."""
    if len(shape) != 2 or draw(st.integers(0, 4)) == 0:
        return draw(layouts(mesh, shape))
    if kind == "data":
        spec = draw(st.sampled_from((("dp", None), (None, None), ("dp", "tp"))))
    else:
        spec = draw(st.sampled_from(((None, "tp"), ("tp", None), (None, None))))
    ok = all(a is None or n % mesh.shape[a] == 0 for a, n in zip(spec, shape, strict=True))
    return NamedMapping.from_spec(spec if ok else (None, None), mesh)


@st.composite
def sharded_programs(draw) -> tuple[Module, list[Value]]:
    """A random program (see the module docstring) and its values."""
    b = Builder()
    sizes = draw(st.sampled_from(((2, 2), (2, 4), (4, 2))))
    mesh = b.mesh("mesh", {"dp": sizes[0], "tp": sizes[1]}).mesh
    n = draw(st.sampled_from(SIZES))
    with b.function("main") as f:
        shape = (n, draw(st.sampled_from(SIZES)))
        x = f.arg(shape, "f32", draw(roles(mesh, shape, "data")), name="x")
        pool: list[Value] = [x]
        for k in range(draw(st.integers(1, 3))):
            shape = (pool[-1].type.shape[1], draw(st.sampled_from(SIZES)))
            w = f.arg(shape, "f32", draw(roles(mesh, shape, "weight")), name=f"w{k}")
            h = b.matmul(pool[-1], w)
            step = draw(st.sampled_from(("unary", "binary", "transpose2", "none", "reduce")))
            if step == "unary":
                h = b.op(draw(st.sampled_from(UNARY)), [h])
            elif step == "binary":
                other = [v for v in pool if v.type.shape == h.type.shape]
                h = b.op(draw(st.sampled_from(BINARY)), [h, other[-1] if other else h])
            elif step == "transpose2":
                h = b.transpose(b.transpose(h, (1, 0)), (1, 0))
            elif step == "reduce":
                r = b.reduce(h, [1])
                h = b.op("add", [h, b.broadcast(r, h.type.shape, [0])])
            pool.append(h)
        outs = [pool[-1]] + ([pool[1]] if len(pool) > 2 and draw(st.booleans()) else [])
        f.returns(*outs, mappings=[
            draw(st.one_of(st.none(), roles(mesh, o.type.shape, "data"))) for o in outs
        ])
        func = f.func
    values = [*func.args, *(r for op in func.body for r in op.results)]
    return b.module, values

