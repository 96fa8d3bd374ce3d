"""Random StableHLO+sdy functions for `sdy-pad-for-divisibility` (seeded, no hypothesis).

    text = pad_module(random.Random(3))

Arguments and results are replicated (the pass wants divisible function boundaries); inside,
`sdy.all_slice` shards the arguments with random shardings over dims of random sizes (often not
divisible), element-wise ops, `dot_general`, `slice` and `pad` compute on the sharded values,
and `sdy.all_gather`, `sdy.all_to_all` and `sdy.reduce_scatter` move them. Collectives get
consistent in/out shardings (jaxlib verifies them); StableHLO ops get their operand's sharding or
a mutation of it.
"""

from __future__ import annotations

import random

from tests.export_programs import Mesh, Sharding, mutate, random_mesh, random_sharding, tensor


def _dims_text(mesh: Mesh, s: Sharding) -> str:
    """`{"x"}, {}` of `<@mesh, [{"x"}, {}]>`."""
    return s.text(mesh).split(", [", 1)[1].rsplit("]", 1)[0]


class _Fn:
    def __init__(self, rng: random.Random, mesh: Mesh):
        self.rng, self.mesh = rng, mesh
        self.args: list[list[int]] = []
        self.lines: list[str] = []
        self.sharded: list[tuple[str, list[int], Sharding]] = []  # values a collective made
        self.results: list[tuple[str, list[int]]] = []
        self.n = 0

    def name(self) -> str:
        self.n += 1
        return f"%{self.n}"

    def shape(self, rank: int) -> list[int]:
        return [self.rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16)) for _ in range(rank)]

    def attr(self, s: Sharding) -> str:
        return f" {{sdy.sharding = #sdy.sharding_per_value<[{s.text(self.mesh)}]>}}"

    def slice_arg(self, shape: list[int] | None = None,
                  s: Sharding | None = None) -> tuple[str, list[int], Sharding]:
        shape = shape or self.shape(self.rng.randint(1, 3))
        self.args.append(shape)
        s = s or random_sharding(self.rng, self.mesh, len(shape))
        name = self.name()
        dims = _dims_text(self.mesh, s)
        self.lines.append(f"    {name} = sdy.all_slice [{dims}] %arg{len(self.args) - 1} "
                          f"out_sharding={s.text(self.mesh)} : {tensor(shape)}")
        v = (name, shape, s)
        self.sharded.append(v)
        return v

    def gather(self, v: tuple[str, list[int], Sharding]) -> None:
        name, shape, s = v
        dims = _dims_text(self.mesh, s)
        out = Sharding([[] for _ in shape])
        res = self.name()
        self.lines.append(f"    {res} = sdy.all_gather [{dims}] {name} "
                          f"out_sharding={out.text(self.mesh)} : {tensor(shape)}")
        self.results.append((res, shape))

    def elementwise(self, v):
        name, shape, s = v
        op = self.rng.choice(("abs", "negate", "add", "multiply"))
        res = self.name()
        operands = name if op in ("abs", "negate") else f"{name}, {name}"
        self.lines.append(f"    {res} = stablehlo.{op} {operands}{self.attr(s)} : "
                          f"{tensor(shape)}")
        return (res, shape, s)

    def dot(self, v):
        name, shape, s = v
        if len(shape) != 2:
            return v
        k, n = shape[1], self.rng.choice((3, 4, 5, 8))
        # the contracting dim sharded alike on both sides (else their padded sizes differ)
        free = [a for a in self.mesh.atoms if a not in [x for d in s.dims for x in d]]
        other = self.slice_arg([k, n], Sharding([list(s.dims[1]),
                                                 [a for a in free if self.rng.random() < 0.5]]))
        out_s = Sharding([list(s.dims[0]), [a for a in other[2].dims[1]
                                             if a not in s.dims[0]]])
        if self.rng.random() < 0.3:
            out_s = random_sharding(self.rng, self.mesh, 2)
        res = self.name()
        self.lines.append(
            f"    {res} = stablehlo.dot_general {name}, {other[0]}, contracting_dims = [1] x [0]"
            f"{self.attr(out_s)} : ({tensor(shape)}, {tensor([k, n])}) -> "
            f"{tensor([shape[0], n])}")
        return (res, [shape[0], n], out_s)

    def slice(self, v):
        name, shape, s = v
        # mostly slices that keep every shard where it is (else Shardy's pass fails a check)
        limits = [self.rng.randint(1, n) if k <= 1 or self.rng.random() < 0.1 else
                  self.rng.randint(max(1, (-(-n // k) - 1) * k + 1), n)
                  for n, k in zip(shape, s.counts())]
        out_s = s if self.rng.random() < 0.8 else mutate(self.rng, self.mesh, s)
        res = self.name()
        rng_text = ", ".join(f"0:{n}" for n in limits)
        self.lines.append(f"    {res} = stablehlo.slice {name} [{rng_text}]{self.attr(out_s)} : "
                          f"({tensor(shape)}) -> {tensor(limits)}")
        return (res, limits, out_s)

    def pad(self, v):
        name, shape, s = v
        lo = [self.rng.randint(0, 2) for _ in shape]
        hi = [self.rng.randint(0, 2) for _ in shape]
        inner = [self.rng.choice((0, 0, 1)) for _ in shape]
        out = [n + a + b + max(0, n - 1) * i for n, a, b, i in zip(shape, lo, hi, inner)]
        c = self.name()
        self.lines.append(f"    {c} = stablehlo.constant dense<1.000000e+00> : tensor<f32>")
        res = self.name()
        self.lines.append(
            f"    {res} = stablehlo.pad {name}, {c}, low = {lo}, high = {hi}, interior = {inner}"
            f"{self.attr(s)} : ({tensor(shape)}, tensor<f32>) -> {tensor(out)}")
        return (res, out, s)

    def all_to_all(self, v):
        name, shape, s = v
        src = [d for d, axes in enumerate(s.dims) if axes]
        if not src or len(shape) < 2:
            return v
        d = self.rng.choice(src)
        t = self.rng.choice([e for e in range(len(shape)) if e != d])
        dims = [list(x) for x in s.dims]
        moved = dims[d][-1:]
        dims[d] = dims[d][:-1]
        dims[t] = dims[t] + moved
        out = Sharding(dims)
        axes = _dims_text(self.mesh, Sharding([moved]))
        res = self.name()
        self.lines.append(f"    {res} = sdy.all_to_all [{axes}: {d}->{t}] {name} "
                          f"out_sharding={out.text(self.mesh)} : {tensor(shape)}")
        return (res, shape, out)

    def body(self, ops: tuple[str, ...]) -> None:
        steps = [getattr(self, name) for name in ops]
        for _ in range(self.rng.randint(1, 3)):
            v = self.slice_arg()
            for _ in range(self.rng.randint(0, 3)):
                v = self.rng.choice(steps)(v)
            self.gather(v)

    def text(self, fname: str) -> str:
        args = ", ".join(f"%arg{i}: {tensor(s)}" for i, s in enumerate(self.args))
        types = ", ".join(tensor(s) for _, s in self.results)
        names = ", ".join(n for n, _ in self.results)
        return "\n".join([f"  func.func @{fname}({args}) -> ({types}) {{", *self.lines,
                          f"    return {names} : {types}", "  }"])


# What jaxlib 0.10.2's pass (an older Shardy) pads as Shardy does today: it leaves a cast
# before `stablehlo.pad` and after `sdy.all_to_all` (docs/interop.md).
JAXLIB_OPS = ("elementwise", "dot", "slice")
ALL_OPS = (*JAXLIB_OPS, "pad", "all_to_all")


def pad_module(rng: random.Random, n: int = 2, ops: tuple[str, ...] = JAXLIB_OPS) -> str:
    """A module of `n` functions that shard, compute on (with `ops`) and gather non-divisible
    values."""
    mesh = random_mesh(rng)
    funcs = []
    for f in range(n):
        fn = _Fn(rng, mesh)
        fn.body(ops)
        funcs.append(fn.text(f"f{f}"))
    return "\n".join(["module {", f"  {mesh.decl()}", *funcs, "}"]) + "\n"
