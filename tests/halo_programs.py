"""Random programs of sharded `stablehlo.reverse` ops for the halo exchange of
`sdy-resolve-permutation-factors` (tests/reshard/test_halo_exchange.py): meshes of one to three axes (of
size 1 to 4, device ids in order or shuffled), operands whose dims are sharded by whole axes or
by the two halves of a size-4 axis (sub-axes), reverses of one or several dims, one or two of
them in a chain.

    text = reverse_module(random.Random(3))
"""

from __future__ import annotations

import random

_NAMES = ("a", "b", "c")


def _mesh(rng: random.Random) -> tuple[list[tuple[str, int]], str]:
    axes = [(n, rng.choice((1, 2, 2, 3, 4, 4))) for n in _NAMES[: rng.randint(1, 3)]]
    total = 1
    for _, s in axes:
        total *= s
    text = ", ".join(f'"{n}"={s}' for n, s in axes)
    ids = list(range(total))
    if rng.random() < 0.3:
        rng.shuffle(ids)
    if ids != sorted(ids):
        text += f"], device_ids=[{', '.join(map(str, ids))}"
    return axes, f"sdy.mesh @m = <[{text}]>"


def _parts(rng: random.Random, axes: list[tuple[str, int]]) -> list[str]:
    """The axis refs a sharding may use: whole axes, or a size-4 axis as its two halves."""
    out = []
    for n, s in axes:
        if s == 4 and rng.random() < 0.5:
            out += [f'"{n}":(1)2', f'"{n}":(2)2']
        elif s > 1 or rng.random() < 0.3:
            out.append(f'"{n}"')
    return out


def _sharding(rng: random.Random, axes: list[tuple[str, int]], rank: int) -> str:
    dims: list[list[str]] = [[] for _ in range(rank)]
    for part in _parts(rng, axes):
        d = rng.randrange(rank + 1)
        name = part.split(":")[0]
        if d < rank and not any(p.split(":")[0] == name for p in dims[d]):
            dims[d].append(part)
    return "[" + ", ".join("{" + ", ".join(d) + "}" for d in dims) + "]"


def reverse_module(rng: random.Random) -> str:
    axes, mesh = _mesh(rng)
    rank = rng.randint(1, 3)
    shape = [rng.randint(1, 13) for _ in range(rank)]
    ty = f"tensor<{'x'.join(map(str, shape))}xf32>"
    sharding = f"<@m, {_sharding(rng, axes, rank)}>"
    lines = [mesh, f"func.func @main(%arg0: {ty} {{sdy.sharding = #sdy.sharding{sharding}}}) -> "
                   f"({ty} {{sdy.sharding = #sdy.sharding{sharding}}}) {{"]
    value = "%arg0"
    for i in range(rng.randint(1, 2)):
        dims = sorted(rng.sample(range(rank), rng.randint(1, rank)))
        lines.append(f"  %{i} = stablehlo.reverse {value}, dims = {dims} {{sdy.sharding = "
                     f"#sdy.sharding_per_value<[{sharding}]>}} : {ty}")
        value = f"%{i}"
    lines += [f"  return {value} : {ty}", "}"]
    return "\n".join(lines) + "\n"
