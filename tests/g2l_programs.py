"""Random programs for sdy-convert-global-to-local (seeded): chains of reshards between random
shardings, which sdy-reshard-to-collectives turns into the sdy collectives the pass lowers, with
sharded iotas and dense sdy.constants added in along the way.

    text = g2l_module(random.Random(3))

Every program is one Shardy's pass accepts: dims divide evenly by their shardings, the result
is declared with the sharding it is returned with, and shardings use whole mesh axes.
`PRIME_MESHES` keep sub-axes out of the collectives too: jaxlib 0.10.2 reads a sub-axis as the
major part of its axis in offset tables and collective_permute pairs, where Shardy's own tests
(and shardc) read it as the part it names.
"""

from __future__ import annotations

import random

MESHES = ([("x", 2), ("y", 4)], [("x", 2), ("y", 2), ("z", 2)], [("x", 4)], [("a", 2), ("b", 3)])
# Meshes whose axes sdy-reshard-to-collectives never cuts into sub-axes.
PRIME_MESHES = ([("x", 2), ("y", 2), ("z", 2)], [("a", 2), ("b", 3)], [("x", 2), ("y", 3)])


def _mesh_text(axes: list[tuple[str, int]], ids: list[int] | None) -> str:
    inner = ", ".join(f'"{a}"={n}' for a, n in axes)
    tail = f", device_ids=[{', '.join(map(str, ids))}]" if ids else ""
    return f"<[{inner}]{tail}>"


def _sharding(rng: random.Random, axes: list[tuple[str, int]], rank: int) -> list[list[str]]:
    names = [a for a, _ in axes]
    rng.shuffle(names)
    dims: list[list[str]] = [[] for _ in range(rank)]
    for a in names:
        if rng.random() < 0.7:
            dims[rng.randrange(rank)].append(a)
    return dims


def _text(mesh: str, dims: list[list[str]]) -> str:
    return f"<@{mesh}, [" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}"
                                      for d in dims) + "]>"


def g2l_function(rng: random.Random, name: str, axes: list[tuple[str, int]]) -> str:
    size = dict(axes)
    rank = rng.randint(1, 3)
    steps = [_sharding(rng, axes, rank) for _ in range(rng.randint(2, 4))]
    shape = []
    for d in range(rank):  # divisible by every sharding of the chain
        need = 1
        for s in steps:
            k = 1
            for a in s[d]:
                k *= size[a]
            need = max(need, k)
        shape.append(need * rng.choice((1, 2, 4)) * (12 if need % 3 == 0 else 8) // 4)
    ty = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    first, last = steps[0], steps[-1]
    lines = [f"  func.func @{name}(%arg0: {ty} {{sdy.sharding = #sdy.sharding{_text('mesh', first)}}})"
             f" -> ({ty} {{sdy.sharding = #sdy.sharding{_text('mesh', last)}}}) {{"]
    v, k, prev = "%arg0", 0, first
    for s in steps[1:]:
        op = rng.choice(("abs", "add", "negate"))
        args = f"{v}, {v}" if op == "add" else v
        lines.append(f"    %{k} = stablehlo.{op} {args} {{sdy.sharding = #sdy.sharding_per_value<"
                     f"[{_text('mesh', prev)}]>}} : {ty}")
        lines.append(f"    %{k + 1} = sdy.reshard %{k} {_text('mesh', s)} : {ty}")
        v, k, prev = f"%{k + 1}", k + 2, s
        n = 1
        for d in shape:
            n *= d
        # A sharded value made in place, added in (constants small: MLIR prints larger ones
        # as hex, which shardc's printer does not).
        source = rng.choice((None, None, "iota", "constant" if n <= 64 else "iota"))
        if source is not None:
            per_value = f"{{sdy.sharding = #sdy.sharding_per_value<[{_text('mesh', s)}]>}}"
            if source == "iota":
                made = f"stablehlo.iota dim = {rng.randrange(rank)} {per_value} : {ty}"
            else:
                values = ", ".join(f"{rng.randint(-9, 9)}.0" for _ in range(n))
                made = f"sdy.constant {per_value} dense<{_nest(values.split(', '), shape)}> : {ty}"
            lines.append(f"    %{k} = {made}")
            lines.append(f"    %{k + 1} = stablehlo.add {v}, %{k} {per_value} : {ty}")
            v, k = f"%{k + 1}", k + 2
    lines.append(f"    return {v} : {ty}")
    lines.append("  }")
    return "\n".join(lines)


def _nest(values: list[str], shape: list[int]) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(values) + "]"
    step = len(values) // shape[0]
    return "[" + ", ".join(_nest(values[i * step:(i + 1) * step], shape[1:])
                           for i in range(shape[0])) + "]"


def g2l_module(rng: random.Random, n: int = 3, meshes=MESHES) -> str:
    axes = rng.choice(meshes)
    total = 1
    for _, s in axes:
        total *= s
    ids = rng.sample(range(total), total) if rng.random() < 0.3 else None
    funcs = [g2l_function(rng, f"f{i}", axes) for i in range(n)]
    return f"sdy.mesh @mesh = {_mesh_text(axes, ids)}\n" + "\n".join(funcs) + "\n"
