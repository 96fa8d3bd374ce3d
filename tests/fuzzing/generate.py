"""Generation fuzzing: hypothesis strategies for valid random programs, compiled and run on the
simulated devices against the unsharded reference (oracle.check_program).

    @given(programs())
    def test(text): assert check_program(text).kind == "ok"

A program has a mesh of one to three axes (sizes 1 to 4, sometimes permuted device ids), two or
three arguments whose shardings use whole axes and sub-axes, open and closed dims and
priorities, then up to fourteen steps drawn from: element-wise ops, transposes, matmuls and
batched dot_generals, reductions, broadcasts, reshapes, concatenations, slices, reverses,
selects, sharding constraints, explicit reshards, sharding groups, propagation barriers, calls of
private functions and counted while loops. It is printed as native text, so a failing case is a
file anyone can rerun.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from shardc.ir.attributes import Symbol
from shardc.ir.builder import Builder
from shardc.ir.core import Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.printer import print_module
from shardc.ir.types import DistributedTensorType

UNARY = ("tanh", "negate", "abs", "logistic", "sine", "cosine", "floor", "sign")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
DIMS = (1, 2, 3, 4, 5, 6, 8)
STEPS = (
    "unary",
    "unary",
    "binary",
    "binary",
    "transpose",
    "matmul",
    "batched_dot",
    "reduce",
    "broadcast",
    "reshape",
    "concat",
    "slice",
    "reverse",
    "select",
    "constraint",
    "reshard",
    "group",
    "barrier",
    "call",
    "loop",
)


@st.composite
def meshes(draw) -> DeviceMesh:
    sizes = draw(st.lists(st.sampled_from((1, 2, 2, 3, 4)), min_size=1, max_size=3))
    total = math.prod(sizes)
    ids = draw(st.permutations(range(total))) if draw(st.integers(0, 3)) == 0 else None
    return DeviceMesh.create("mesh", {n: s for n, s in zip("xyz", sizes, strict=False)}, ids)


def _pieces(mesh: DeviceMesh, draw) -> list[AxisRef]:
    """Each axis whole, or (size 4) as its two sub-axes; size-1 axes now and then."""
    out = []
    for name, size in mesh.axes:
        if size == 4 and draw(st.booleans()):
            out += [AxisRef(name, 1, 2), AxisRef(name, 2, 2)]
        elif size > 1 or draw(st.integers(0, 4)) == 0:
            out.append(AxisRef(name))
    return out


@st.composite
def shardings(draw, mesh: DeviceMesh, shape: tuple[int, ...], closed: bool = False):
    """A sharding of a `shape` tensor (None: no annotation), axes placed at random."""
    if not closed and draw(st.integers(0, 3)) == 0:
        return None
    rank = len(shape)
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    for ref in draw(st.permutations(_pieces(mesh, draw))):
        slot = draw(st.integers(-1, rank - 1)) if rank else -1
        if slot >= 0:
            dims[slot].append(ref)
    out = []
    for axes in dims:
        merged = _merge(axes, mesh)
        is_open = not closed and draw(st.integers(0, 2)) == 0
        priority = draw(st.sampled_from((None, None, None, 0, 1, 2)))
        if not merged and not is_open:
            priority = None
        out.append(DimSharding(merged, not is_open, priority))
    return NamedMapping(mesh, tuple(out))


def _merge(axes: list[AxisRef], mesh: DeviceMesh) -> tuple[AxisRef, ...]:
    out: list[AxisRef] = []
    for ref in axes:
        if (
            out
            and out[-1].name == ref.name
            and out[-1].is_sub_axis
            and ref.is_sub_axis
            and out[-1].pre * out[-1].size == ref.pre
        ):
            prev = out.pop()
            size = prev.size * ref.size
            ref = (
                AxisRef(ref.name)
                if size == mesh.axis_size(ref.name)
                else AxisRef(ref.name, prev.pre, size)
            )
        out.append(ref)
    return tuple(out)


class _Program:
    """The state of one program being drawn: the builder, the pool of values, the helpers."""

    def __init__(self, draw, mesh: DeviceMesh):
        self.draw = draw
        self.mesh = mesh
        self.b = Builder()
        self.b.module.add_mesh(mesh)
        self.helpers = 0
        self.groups = 0

    def pick(self, pool: list[Value], pred=lambda v: True) -> Value | None:
        fits = [v for v in pool if pred(v)]
        return self.draw(st.sampled_from(fits)) if fits else None

    def step(self, kind: str, pool: list[Value]) -> Value | None:
        draw, b = self.draw, self.b
        a = self.pick(pool)
        assert a is not None
        shape, rank = a.type.shape, a.type.rank
        if kind == "unary":
            return b.op(draw(st.sampled_from(UNARY)), [a])
        if kind == "binary":
            other = self.pick(pool, lambda v: v.type.shape == shape)
            return b.op(draw(st.sampled_from(BINARY)), [a, other])
        if kind == "transpose" and rank >= 2:
            return b.transpose(a, draw(st.permutations(range(rank))))
        if kind == "matmul" and rank == 2:
            rhs = self.pick(pool, lambda v: v.type.rank == 2 and v.type.shape[0] == shape[1])
            return b.matmul(a, rhs) if rhs is not None else None
        if kind == "batched_dot" and rank == 3:
            rhs = self.pick(
                pool,
                lambda v: (
                    v.type.rank == 3 and v.type.shape[0] == shape[0] and v.type.shape[1] == shape[2]
                ),
            )
            if rhs is not None:
                return b.dot_general(a, rhs, ((2,), (1,)), ((0,), (0,)))
            return None
        if kind == "reduce" and rank >= 1:
            dims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
            return b.reduce(a, dims, draw(st.sampled_from(("add", "maximum", "minimum"))))
        if kind == "broadcast" and rank <= 2:
            new = draw(st.sampled_from(DIMS))
            at = draw(st.integers(0, rank))
            out = shape[:at] + (new,) + shape[at:]
            return b.broadcast(a, out, [d if d < at else d + 1 for d in range(rank)])
        if kind == "reshape" and rank >= 1:
            return self.reshape(a)
        if kind == "concat" and rank >= 1:
            d = draw(st.integers(0, rank - 1))
            other = self.pick(
                pool,
                lambda v: (
                    v.type.rank == rank
                    and all(x == y for i, (x, y) in enumerate(zip(v.type.shape, shape)) if i != d)
                ),
            )
            return b.op("concatenate", [a, other], {"dimension": d})
        if kind == "slice" and rank >= 1:
            starts = [draw(st.integers(0, n - 1)) for n in shape]
            limits = [draw(st.integers(s + 1, n)) for s, n in zip(starts, shape, strict=True)]
            strides = [draw(st.integers(1, 2)) for _ in shape]
            return b.op(
                "slice",
                [a],
                {
                    "start_indices": tuple(starts),
                    "limit_indices": tuple(limits),
                    "strides": tuple(strides),
                },
            )
        if kind == "reverse" and rank >= 1:
            dims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
            return b.op("reverse", [a], {"dimensions": tuple(dims)})
        if kind == "select":
            other = self.pick(pool, lambda v: v.type.shape == shape)
            pred = b.compare(a, other, draw(st.sampled_from(("LT", "GE", "EQ"))))
            return b.op("select", [pred, a, other])
        if kind == "constraint":
            m = draw(shardings(self.mesh, shape))
            return b.sharding_constraint(a, m) if m is not None else None
        if kind == "reshard":
            return b.reshard(a, draw(shardings(self.mesh, shape, closed=True)))
        if kind == "group":  # members must not start with different shardings
            a = self.pick(pool, lambda v: v.mapping is None)
            other = (
                self.pick(
                    pool,
                    lambda v: v.mapping is None and v is not a and v.type.shape == a.type.shape,
                )
                if a is not None
                else None
            )
            if other is None:
                return None
            self.groups += 1
            b.sharding_group(a, self.groups)
            b.sharding_group(other, self.groups)
            return None
        if kind == "barrier":
            return b.barrier(a, draw(st.sampled_from(("NONE", "FORWARD", "BACKWARD"))))
        if kind == "call":
            return self.call(a)
        if kind == "loop":
            return self.loop(a)
        return None

    def reshape(self, a: Value) -> Value:
        shape = a.type.shape
        n = math.prod(shape)
        choices = [(n,)] + [(d, n // d) for d in (2, 3, 4) if n % d == 0 and n > d]
        if len(shape) >= 2:
            choices.append(shape[:-2] + (shape[-2] * shape[-1],))
        return self.b.reshape(a, self.draw(st.sampled_from(choices)))

    def _helper(self, prefix: str) -> str:
        self.helpers += 1
        return f"{prefix}_{self.helpers}"

    def call(self, a: Value) -> Value:
        """`call @f(%a)` of a private function of a few element-wise ops."""
        name = self._helper("callee")
        t = DistributedTensorType(a.type.shape, a.type.dtype)
        with self.b.function(name, private=True) as f:
            x = f.arg(a.type.shape, a.type.dtype)
            y = x
            for op in self.draw(st.lists(st.sampled_from(UNARY), min_size=1, max_size=3)):
                y = self.b.op(op, [y])
            f.returns(self.b.add(y, x))
        (out,) = self.b.call(name, [a], [t])
        return out

    def loop(self, a: Value) -> Value:
        """A while loop of 1 to 3 trips that carries `a` through tanh and a scale."""
        trips = self.draw(st.integers(1, 3))
        cond, body = self._helper("cond"), self._helper("body")
        shape, dtype = a.type.shape, a.type.dtype
        i32 = DistributedTensorType((), "i32")
        with self.b.function(cond, private=True) as f:
            i = f.arg((), "i32")
            f.arg(shape, dtype)
            f.returns(self.b.compare(i, self.b.constant(trips, "i32"), "LT"))
        with self.b.function(body, private=True) as f:
            i = f.arg((), "i32")
            x = f.arg(shape, dtype)
            half = self.b.broadcast(self.b.constant(0.5, dtype), shape, ())
            f.returns(
                self.b.add(i, self.b.constant(1, "i32")), self.b.multiply(self.b.tanh(x), half)
            )
        zero = self.b.constant(0, "i32")
        op = self.b.create(
            "while",
            [zero, a],
            {"cond": Symbol(cond), "body": Symbol(body)},
            [i32, DistributedTensorType(shape, dtype)],
        )
        return op.results[1]


@st.composite
def programs(draw, max_steps: int = 14) -> str:
    """A valid random program as native text (module docstring)."""
    mesh = draw(meshes())
    p = _Program(draw, mesh)
    b = p.b
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(rank))
    with b.function("main") as f:
        pool: list[Value] = []
        for k in range(draw(st.integers(2, 3))):
            s = shape if k < 2 or draw(st.booleans()) else tuple(reversed(shape))
            pool.append(f.arg(s, "f32", draw(shardings(mesh, s)), name=f"a{k}"))
        for _ in range(draw(st.integers(1, max_steps))):
            v = p.step(draw(st.sampled_from(STEPS)), pool)
            if v is not None:
                pool.append(v)
        fresh = pool[len(f.func.args) :] or pool[:1]
        outs = draw(st.lists(st.sampled_from(fresh), min_size=1, max_size=2, unique_by=id))
        f.returns(*outs, mappings=[draw(shardings(mesh, o.type.shape)) for o in outs])
    return print_module(b.module)
