"""Random StableHLO+sdy modules for the export passes, written as text (seeded, no hypothesis).

    rng = random.Random(7)
    text = reshard_module(rng)        # reshards between random shardings of random meshes

A mesh's axes are cut into *atoms* (`"x"=8` -> `"x":(1)2, "x":(2)4`), and every sharding of one
module is built from the same atoms, merged back where they are consecutive in a dim, so that any
two shardings of a module can coexist (Shardy's algorithms assume it). Shardings use sub-axes,
several axes per dim in any order, unreduced axes, and a second mesh with the same axes but
another device order; shapes are mostly divisible by the shardings, sometimes not.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

SIZES = (2, 2, 2, 4, 4, 8, 3, 6)


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@dataclass
class Mesh:
    """A mesh, its atoms (name, pre, size) and the text of its `sdy.mesh` declaration."""

    name: str
    axes: list[tuple[str, int]]
    device_ids: list[int] | None = None
    atoms: list[tuple[str, int, int]] = field(default_factory=list)

    def decl(self) -> str:
        axes = ", ".join(f'"{a}"={s}' for a, s in self.axes)
        ids = "" if self.device_ids is None else f", device_ids={self.device_ids}"
        return f"sdy.mesh @{self.name} = <[{axes}]{ids}>"

    def size(self, name: str) -> int:
        return dict(self.axes)[name]


def random_mesh(rng: random.Random, name: str = "mesh") -> Mesh:
    n = rng.choice((1, 2, 2, 3, 3))
    names = rng.sample(["x", "y", "z", "w"], n)
    axes = [(a, rng.choice(SIZES)) for a in names]
    while math.prod(s for _, s in axes) > 64:
        axes.pop()
    mesh = Mesh(name, axes)
    for a, size in axes:
        parts = _factors(size)
        groups: list[int] = []
        for p in parts:
            if groups and rng.random() < 0.4:
                groups[-1] *= p
            else:
                groups.append(p)
        if rng.random() < 0.5:  # often keep the axis whole
            groups = [size]
        pre = 1
        for g in groups:
            mesh.atoms.append((a, pre, g))
            pre *= g
    return mesh


def permuted(rng: random.Random, mesh: Mesh, name: str) -> Mesh:
    n = math.prod(s for _, s in mesh.axes)
    ids = list(range(n))
    rng.shuffle(ids)
    other = Mesh(name, list(mesh.axes), ids if ids != list(range(n)) else None, list(mesh.atoms))
    return other


def _ref(mesh: Mesh, name: str, pre: int, size: int) -> str:
    if pre == 1 and size == mesh.size(name):
        return f'"{name}"'
    return f'"{name}":({pre}){size}'


def _merged(mesh: Mesh, atoms: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for a in atoms:
        if out and out[-1][0] == a[0] and out[-1][1] * out[-1][2] == a[1]:
            out[-1] = (a[0], out[-1][1], out[-1][2] * a[2])
        else:
            out.append(a)
    return out


@dataclass
class Sharding:
    """Atoms per dim and unreduced atoms."""

    dims: list[list[tuple[str, int, int]]]
    unreduced: list[tuple[str, int, int]] = field(default_factory=list)

    def counts(self) -> list[int]:
        return [math.prod(a[2] for a in d) for d in self.dims]

    def text(self, mesh: Mesh) -> str:
        dims = ", ".join(
            "{" + ", ".join(_ref(mesh, *a) for a in _merged(mesh, d)) + "}" for d in self.dims
        )
        out = f"<@{mesh.name}, [{dims}]"
        if self.unreduced:
            order = {n: i for i, (n, _) in enumerate(mesh.axes)}
            ordered = sorted(self.unreduced, key=lambda a: (order[a[0]], a[1]))
            out += ", unreduced={" + ", ".join(_ref(mesh, *a) for a in _merged(mesh, ordered))
            out += "}"
        return out + ">"


def random_sharding(
    rng: random.Random, mesh: Mesh, rank: int, unreduced: list | None = None, density=0.6
) -> Sharding:
    taken = set(unreduced or [])
    free = [a for a in mesh.atoms if a not in taken]
    rng.shuffle(free)
    dims: list[list] = [[] for _ in range(rank)]
    for a in free:
        if rank and rng.random() < density:
            dims[rng.randrange(rank)].append(a)
    return Sharding(dims, list(unreduced or []))


def mutate(rng: random.Random, mesh: Mesh, s: Sharding) -> Sharding:
    """A sharding near `s`: axes moved between dims, reordered, dropped or added."""
    dims = [list(d) for d in s.dims]
    used = {a for d in dims for a in d} | set(s.unreduced)
    for _ in range(rng.randint(1, 3)):
        k = rng.random()
        nonempty = [i for i, d in enumerate(dims) if d]
        if k < 0.3 and nonempty:  # move the minor-most axis of a dim elsewhere
            i = rng.choice(nonempty)
            a = dims[i].pop()
            dims[rng.randrange(len(dims))].append(a)
        elif k < 0.5 and nonempty:  # reorder a dim
            rng.shuffle(dims[rng.choice(nonempty)])
        elif k < 0.7 and nonempty:  # drop an axis
            i = rng.choice(nonempty)
            dims[i].pop(rng.randrange(len(dims[i])))
        else:  # add a free axis
            free = [a for a in mesh.atoms if a not in used]
            if free and dims:
                a = rng.choice(free)
                used.add(a)
                d = dims[rng.randrange(len(dims))]
                d.insert(rng.randint(0, len(d)), a)
    return Sharding(dims, list(s.unreduced))


def random_shape(rng: random.Random, counts: list[list[int]]) -> list[int]:
    """Per dim: a multiple of the largest shard count (sometimes not divisible at all)."""
    shape = []
    for per_dim in zip(*counts, strict=True):
        base = math.lcm(*per_dim)
        if rng.random() < 0.1:
            shape.append(rng.randint(1, 3 * base) if base > 1 else rng.randint(1, 5))
        else:
            shape.append(base * rng.choice((1, 1, 2, 3)))
    return shape


def tensor(shape: list[int], dtype: str = "f32") -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + dtype + ">"


def reshard_module(rng: random.Random, n: int = 4) -> str:
    """A module of `n` functions, each one reshard of its argument (sometimes through a
    propagation barrier) to a sharding near it, on the same mesh or a permuted copy of it."""
    mesh = random_mesh(rng)
    meshes = [mesh]
    if rng.random() < 0.3 and math.prod(s for _, s in mesh.axes) > 1:
        meshes.append(permuted(rng, mesh, "mesh_perm"))
    lines = [m.decl() for m in meshes]
    for f in range(n):
        rank = rng.randint(1, 3)
        unreduced = [a for a in mesh.atoms if rng.random() < 0.1]
        src = random_sharding(rng, mesh, rank, unreduced)
        dst = mutate(rng, mesh, src) if rng.random() < 0.7 else random_sharding(
            rng, mesh, rank, unreduced)
        if not any(dst.dims) or not any(src.dims):
            # Outside Shardy's contract: it drops the unreduced axes of a reshard to or from a
            # replicated sharding (docs/interop.md, known differences).
            src.unreduced = dst.unreduced = []
        shape = random_shape(rng, [src.counts(), dst.counts()])
        ty = tensor(shape)
        src_mesh, dst_mesh = rng.choice(meshes), rng.choice(meshes)
        body = []
        value = "%arg0"
        if rng.random() < 0.15:
            body.append(f"    %b = sdy.propagation_barrier %arg0 allowed_direction=NONE : {ty}")
            value = "%b"
        body.append(f"    %0 = sdy.reshard {value} {dst.text(dst_mesh)} : {ty}")
        body.append(f"    return %0 : {ty}")
        lines.append(
            f"  func.func @f{f}(%arg0: {ty} {{sdy.sharding = #sdy.sharding{src.text(src_mesh)}}})"
            f" -> {ty} {{\n" + "\n".join(body) + "\n  }"
        )
    return "\n".join(lines) + "\n"


# ----- programs of ops with (often conflicting) shardings -----------------------------------


@dataclass
class _Val:
    name: str
    shape: list[int]
    sharding: Sharding | None
    mesh: Mesh | None = None


class _Program:
    """One function under construction: values, ops (text) and arguments."""

    def __init__(self, rng: random.Random, mesh: Mesh, meshes: list[Mesh]):
        self.rng, self.mesh, self.meshes = rng, mesh, meshes
        self.args: list[_Val] = []
        self.values: list[_Val] = []
        self.lines: list[str] = []
        self.n = 0

    def sharding(self, shape: list[int], like: Sharding | None = None,
                 unreduced_ok: bool = False) -> Sharding | None:
        rng = self.rng
        if rng.random() < 0.15:
            return None
        unreduced = [a for a in self.mesh.atoms if unreduced_ok and rng.random() < 0.15]
        if like is not None and len(like.dims) == len(shape) and rng.random() < 0.5:
            s = mutate(rng, self.mesh, Sharding([list(d) for d in like.dims], []))
            used = {a for d in s.dims for a in d}
            s.unreduced = [a for a in unreduced if a not in used]
            return s
        return random_sharding(rng, self.mesh, len(shape), unreduced)

    def arg(self, shape: list[int]) -> _Val:
        v = _Val(f"%arg{len(self.args)}", shape, self.sharding(shape, unreduced_ok=True),
                 self.rng.choice(self.meshes))
        self.args.append(v)
        self.values.append(v)
        return v

    def pick(self, rank: int | None = None) -> _Val:
        pool = [v for v in self.values if rank is None or len(v.shape) == rank]
        if not pool:
            return self.arg(self.rng_shape(rank if rank is not None else 2))
        return self.rng.choice(pool[-4:])

    def rng_shape(self, rank: int) -> list[int]:
        return [self.rng.choice((2, 4, 8, 12, 16, 6)) for _ in range(rank)]

    def emit(self, text: str, shape: list[int], like: Sharding | None = None,
             unreduced_ok: bool = False, same_as: _Val | None = None) -> _Val:
        """A new value defined by `text`; its sharding is random (near `like`), or `same_as`'s
        sharding on `same_as`'s mesh."""
        if same_as is not None:
            s, mesh = same_as.sharding, same_as.mesh or self.mesh
        else:
            s = self.sharding(shape, like, unreduced_ok)
            mesh = self.rng.choice(self.meshes)
        name = f"%{self.n}"
        self.n += 1
        attr = "" if s is None else (
            f" {{sdy.sharding = #sdy.sharding_per_value<[{s.text(mesh)}]>}}")
        self.lines.append(f"    {name} = " + text.replace("@ATTR", attr))
        v = _Val(name, shape, s, mesh)
        self.values.append(v)
        return v


def _elementwise(p: _Program) -> None:
    a = p.pick()
    if p.rng.random() < 0.4:
        op = p.rng.choice(("negate", "abs", "exponential"))
        p.emit(f"stablehlo.{op} {a.name}@ATTR : {tensor(a.shape)}", a.shape, a.sharding)
        return
    same = [v for v in p.values if v.shape == a.shape]
    b = p.rng.choice(same) if same else a
    op = p.rng.choice(("add", "multiply", "subtract", "maximum"))
    p.emit(f"stablehlo.{op} {a.name}, {b.name}@ATTR : {tensor(a.shape)}", a.shape, a.sharding,
           unreduced_ok=True)


def _dot(p: _Program) -> None:
    rng = p.rng
    a = p.pick()
    rank = len(a.shape)
    if rank == 0:
        return
    contracting = rng.randrange(rank)
    batch = [d for d in range(rank) if d != contracting and rng.random() < 0.3]
    free = [d for d in range(rank) if d != contracting and d not in batch]
    n = rng.choice((2, 4, 8, 16))
    # rhs: batch dims, then contracting, then one free dim
    rhs_shape = [a.shape[d] for d in batch] + [a.shape[contracting], n]
    b = p.arg(rhs_shape)
    out = [a.shape[d] for d in batch] + [a.shape[d] for d in free] + [n]
    bdims = "" if not batch else (
        f"batching_dims = [{', '.join(map(str, batch))}] x "
        f"[{', '.join(map(str, range(len(batch))))}], ")
    text = (f"stablehlo.dot_general {a.name}, {b.name}, {bdims}contracting_dims = "
            f"[{contracting}] x [{len(batch)}]@ATTR : ({tensor(a.shape)}, {tensor(rhs_shape)}) "
            f"-> {tensor(out)}")
    p.emit(text, out, None, unreduced_ok=True)


def _reduce(p: _Program) -> None:
    a = p.pick()
    rank = len(a.shape)
    if rank == 0:
        return
    dims = sorted(p.rng.sample(range(rank), p.rng.randint(1, min(2, rank))))
    out = [n for d, n in enumerate(a.shape) if d not in dims]
    init = _constant(p)
    text = (f"stablehlo.reduce({a.name} init: {init}) applies stablehlo.add across dimensions = "
            f"[{', '.join(map(str, dims))}]@ATTR : ({tensor(a.shape)}, tensor<f32>) -> "
            f"{tensor(out)}")
    p.emit(text, out, None, unreduced_ok=True)


def _transpose(p: _Program) -> None:
    a = p.pick()
    perm = list(range(len(a.shape)))
    p.rng.shuffle(perm)
    out = [a.shape[d] for d in perm]
    p.emit(f"stablehlo.transpose {a.name}, dims = [{', '.join(map(str, perm))}]@ATTR : "
           f"({tensor(a.shape)}) -> {tensor(out)}", out)


def _broadcast(p: _Program) -> None:
    a = p.pick()
    if len(a.shape) >= 3:
        return
    new = p.rng.randint(0, len(a.shape))
    out = list(a.shape)
    out.insert(new, p.rng.choice((2, 4, 8)))
    dims = [d if d < new else d + 1 for d in range(len(a.shape))]
    p.emit(f"stablehlo.broadcast_in_dim {a.name}, dims = [{', '.join(map(str, dims))}]@ATTR : "
           f"({tensor(a.shape)}) -> {tensor(out)}", out)


def _reshape(p: _Program) -> None:
    a = p.pick()
    shape = list(a.shape)
    rng = p.rng
    if len(shape) >= 2 and rng.random() < 0.5:
        i = rng.randrange(len(shape) - 1)
        out = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
    else:
        splittable = [i for i, n in enumerate(shape) if n % 2 == 0 and n > 2]
        if not splittable:
            return
        i = rng.choice(splittable)
        f = rng.choice([k for k in (2, 3, 4) if shape[i] % k == 0 and shape[i] > k])
        out = shape[:i] + [f, shape[i] // f] + shape[i + 1:]
    p.emit(f"stablehlo.reshape {a.name}@ATTR : ({tensor(shape)}) -> {tensor(out)}", out)


def _concatenate(p: _Program) -> None:
    a = p.pick()
    if not a.shape:
        return
    d = p.rng.randrange(len(a.shape))
    same = [v for v in p.values if v.shape == a.shape]
    b = p.rng.choice(same)
    out = list(a.shape)
    out[d] *= 2
    p.emit(f"stablehlo.concatenate {a.name}, {b.name}, dim = {d}@ATTR : ({tensor(a.shape)}, "
           f"{tensor(b.shape)}) -> {tensor(out)}", out)


def _constant(p: _Program) -> str:
    name = f"%c{p.n}"
    p.lines.append(f"    {name} = stablehlo.constant dense<0.000000e+00> : tensor<f32>")
    return name


def _pad(p: _Program) -> None:
    a, rng = p.pick(), p.rng
    if not a.shape:
        return
    low = [rng.choice((0, 0, 1, 2, -1)) if n > 1 else 0 for n in a.shape]
    high = [rng.choice((0, 0, 1, 3, -1)) if n > 1 else 0 for n in a.shape]
    interior = [rng.choice((0, 0, 0, 1)) for _ in a.shape]
    out = [lo + hi + n + (n - 1) * i for lo, hi, n, i in zip(low, high, a.shape, interior,
                                                             strict=True)]
    if min(out) < 1:
        return
    c = _constant(p)
    p.emit(f"stablehlo.pad {a.name}, {c}, low = {low}, high = {high}, interior = {interior}@ATTR"
           f" : ({tensor(a.shape)}, tensor<f32>) -> {tensor(out)}", out, a.sharding)


def _slice(p: _Program) -> None:
    """Mostly with the operand's sharding (Shardy's pass requires it for a slice)."""
    a, rng = p.pick(), p.rng
    if not a.shape:
        return
    ranges = []
    for n in a.shape:
        start = min(n - 1, rng.choice((0, 0, 0, 1, n // 2)))
        limit = rng.choice((n, n, n - 1, max(start + 1, n // 2)))
        limit = max(start + 1, min(n, limit))
        stride = rng.choice((1, 1, 1, 2))
        ranges.append((start, limit, stride))
    out = [-(-(hi - lo) // st) for lo, hi, st in ranges]
    text = ", ".join(f"{lo}:{hi}" + (f":{st}" if st != 1 else "") for lo, hi, st in ranges)
    same = a if rng.random() < 0.95 else None
    p.emit(f"stablehlo.slice {a.name} [{text}]@ATTR : ({tensor(a.shape)}) -> {tensor(out)}",
           out, a.sharding, same_as=same)


def _reverse(p: _Program) -> None:
    a, rng = p.pick(), p.rng
    if not a.shape:
        return
    dims = sorted(rng.sample(range(len(a.shape)), rng.randint(1, len(a.shape))))
    p.emit(f"stablehlo.reverse {a.name}, dims = {dims}@ATTR : {tensor(a.shape)}", a.shape,
           a.sharding, same_as=a if rng.random() < 0.5 else None)


OP_MAKERS = (_elementwise, _elementwise, _dot, _reduce, _transpose, _broadcast, _reshape,
             _concatenate)


PERMUTATION_MAKERS = (_pad, _pad, _slice, _slice, _reverse, _reverse, _elementwise, _transpose)


def op_function(rng: random.Random, name: str, mesh: Mesh, meshes: list[Mesh],
                n_ops: int = 4, makers: tuple = OP_MAKERS) -> str:
    p = _Program(rng, mesh, meshes)
    p.arg(p.rng_shape(rng.randint(1, 3)))
    for _ in range(n_ops):
        rng.choice(makers)(p)
    results = [v for v in p.values if not v.name.startswith("%arg")][-2:] or [p.values[-1]]
    args = ", ".join(
        f"{v.name}: {tensor(v.shape)}"
        + ("" if v.sharding is None else
           f" {{sdy.sharding = #sdy.sharding{v.sharding.text(v.mesh)}}}")
        for v in p.args
    )
    outs = []
    for v in results:
        s = p.sharding(v.shape, v.sharding, unreduced_ok=True)
        outs.append(tensor(v.shape) + ("" if s is None else
                                      f" {{sdy.sharding = #sdy.sharding{s.text(mesh)}}}"))
    ret = ", ".join(v.name for v in results)
    tys = ", ".join(tensor(v.shape) for v in results)
    body = "\n".join(p.lines)
    return (f"  func.func @{name}({args}) -> ({', '.join(outs)}) {{\n{body}\n"
            f"    return {ret} : {tys}\n  }}")


def op_module(rng: random.Random, n: int = 3, makers: tuple = OP_MAKERS) -> str:
    """A module of `n` functions of random ops whose values carry random shardings."""
    mesh = random_mesh(rng)
    meshes = [mesh]
    if rng.random() < 0.2 and math.prod(s for _, s in mesh.axes) > 1:
        meshes.append(permuted(rng, mesh, "mesh_perm"))
    lines = [m.decl() for m in meshes]
    for f in range(n):
        lines.append(op_function(rng, f"f{f}", mesh, meshes, makers=makers))
    return "\n".join(lines) + "\n"


def permutation_module(rng: random.Random, n: int = 3) -> str:
    """`op_module` of mostly pad, slice and reverse ops (permutation factors)."""
    return op_module(rng, n, PERMUTATION_MAKERS)


def main_module(rng: random.Random, n: int = 3) -> str:
    """`op_module` with its first function named `main` (Shardy's export pipeline looks it up)."""
    return op_module(rng, n).replace("@f0(", "@main(", 1)
