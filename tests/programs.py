"""Random programs for property tests (hypothesis strategies built on the Builder)."""

from __future__ import annotations

from hypothesis import strategies as st

from shardc.ir.builder import Builder
from shardc.ir.core import Module, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh

UNARY = ["tanh", "exponential", "negate", "abs", "logistic"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def meshes(draw, max_axes: int = 3) -> DeviceMesh:
    n = draw(st.integers(1, max_axes))
    sizes = [draw(st.sampled_from([1, 2, 4])) for _ in range(n)]
    ids = None
    total = 1
    for s in sizes:
        total *= s
    if draw(st.booleans()):
        ids = draw(st.permutations(list(range(total))))
    return DeviceMesh.create("mesh", {f"a{i}": s for i, s in enumerate(sizes)}, ids)


@st.composite
def mappings(draw, mesh: DeviceMesh, rank: int, allow_open: bool = True) -> NamedMapping | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    for name in draw(st.permutations(list(mesh.axis_names))):
        target = draw(st.integers(-1, rank - 1)) if rank else -1
        if target >= 0:
            if mesh.axis_size(name) == 4 and draw(st.booleans()):
                dims[target].append(AxisRef(name, draw(st.sampled_from([1, 2])), 2))
            else:
                dims[target].append(AxisRef(name))
    out = []
    for axes in dims:
        is_open = allow_open and draw(st.booleans())
        prio = draw(st.sampled_from([None, None, 0, 1, 2])) if (axes or is_open) else None
        out.append(DimSharding(tuple(axes), not is_open, prio))
    return NamedMapping(mesh, tuple(out))


@st.composite
def modules(draw, max_ops: int = 12) -> Module:
    """A random well-typed module: element-wise ops, transposes, reshapes, matmuls, reductions."""
    b = Builder()
    mesh = draw(meshes())
    b.module.add_mesh(mesh)
    shape = (draw(st.sampled_from([2, 4, 6])), draw(st.sampled_from([2, 4, 8])))
    with b.function("main") as f:
        x = f.arg(shape, "f32", draw(mappings(mesh, 2)), name="x")
        y = f.arg(shape, "f32", draw(mappings(mesh, 2)), name="y")
        pool: list[Value] = [x, y]
        for _ in range(draw(st.integers(1, max_ops))):
            kind = draw(
                st.sampled_from(["unary", "binary", "transpose", "matmul", "reduce", "reshape"])
            )
            a = draw(st.sampled_from(pool))
            if kind == "unary":
                v = b.op(draw(st.sampled_from(UNARY)), [a])
            elif kind == "binary":
                same = [p for p in pool if p.type.shape == a.type.shape]
                v = b.op(draw(st.sampled_from(BINARY)), [a, draw(st.sampled_from(same))])
            elif kind == "transpose" and a.type.rank == 2:
                v = b.transpose(a, (1, 0))
            elif kind == "matmul" and a.type.rank == 2:
                rhs = [p for p in pool if p.type.rank == 2 and p.type.shape[0] == a.type.shape[1]]
                v = b.matmul(a, draw(st.sampled_from(rhs))) if rhs else b.transpose(a, (1, 0))
            elif kind == "reduce" and a.type.rank == 2:
                v = b.reduce(
                    a, (draw(st.integers(0, 1)),), draw(st.sampled_from(["add", "maximum"]))
                )
                v = b.broadcast(
                    v, a.type.shape, (0,) if v.type.shape[0] == a.type.shape[0] else (1,)
                )
            elif kind == "reshape" and a.type.rank == 2:
                v = b.reshape(b.reshape(a, (a.type.num_elements,)), a.type.shape)
            else:
                v = b.op("negate", [a])
            if draw(st.integers(0, 4)) == 0:
                m = draw(mappings(mesh, v.type.rank))
                if m is not None:
                    v = b.sharding_constraint(v, m)
            pool.append(v)
        outs = draw(st.lists(st.sampled_from(pool[2:]), min_size=1, max_size=2, unique_by=id))
        f.returns(*outs, mappings=[draw(mappings(mesh, o.type.rank)) for o in outs])
    return b.module
