"""Random StableHLO+sdy modules of dots next to Shardy's collectives, for the export passes that
rewrite collectives (seeded text, the atoms of tests/export_programs.py):

    text = cmv1_module(random.Random(3))

Each function is one `dot_general` of two 2-d arguments whose operands sometimes come through
an `sdy.all_gather` (of a suffix of a dim's axes) and whose result sometimes goes through an
`sdy.reduce_scatter` (of axes no dim uses); a collective sometimes has a second user (the
return), and the dot's result is sometimes unreduced.
"""

from __future__ import annotations

import random

from tests.export_programs import (
    Mesh,
    Sharding,
    _merged,
    _ref,
    random_mesh,
    random_shape,
    random_sharding,
    tensor,
)


def _axes_text(mesh: Mesh, dims: list[list]) -> str:
    return "[" + ", ".join(
        "{" + ", ".join(_ref(mesh, *a) for a in _merged(mesh, d)) + "}" for d in dims) + "]"


def _gather(rng: random.Random, s: Sharding) -> tuple[list[list], Sharding]:
    """Gathering axes (a suffix of some dims' axes) and the sharding left."""
    gathered, kept = [], []
    for d in s.dims:
        k = rng.randint(0, len(d)) if d else 0
        gathered.append(d[len(d) - k:])
        kept.append(d[:len(d) - k])
    if not any(gathered) and any(s.dims):
        i = next(i for i, d in enumerate(s.dims) if d)
        gathered[i], kept[i] = s.dims[i][-1:], s.dims[i][:-1]
    return gathered, Sharding(kept, list(s.unreduced))


def _scatter(rng: random.Random, mesh: Mesh, s: Sharding) -> tuple[list[list], Sharding]:
    """Scattering axes (free atoms appended to dims) and the sharding they make."""
    used = {a for d in s.dims for a in d} | set(s.unreduced)
    free = [a for a in mesh.atoms if a not in used]
    rng.shuffle(free)
    scattered: list[list] = [[] for _ in s.dims]
    for a in free[: rng.randint(1, max(1, len(free)))]:
        scattered[rng.randrange(len(s.dims))].append(a)
    return scattered, Sharding([d + x for d, x in zip(s.dims, scattered, strict=True)],
                               list(s.unreduced))


def cmv1_function(rng: random.Random, name: str, mesh: Mesh) -> str:
    lines: list[str] = []
    sa, sb = random_sharding(rng, mesh, 2), random_sharding(rng, mesh, 2)
    operand_shardings = [sa, sb]
    values = ["%arg0", "%arg1"]
    extra: list[tuple[str, str]] = []  # returned besides the dot's value: (name, type)
    gathered_sh = list(operand_shardings)
    for i in range(2):
        if rng.random() < 0.5 and any(operand_shardings[i].dims):
            axes, out = _gather(rng, operand_shardings[i])
            gathered_sh[i] = out
            values[i] = f"%g{i}"
            lines.append(f"    %g{i} = sdy.all_gather {_axes_text(mesh, axes)} %arg{i} "
                         f"out_sharding={out.text(mesh)} : @T{i}")
            if rng.random() < 0.2:
                extra.append((f"%g{i}", f"@T{i}"))
    dot_sh = random_sharding(rng, mesh, 2)
    if rng.random() < 0.15:
        used = {a for d in dot_sh.dims for a in d}
        dot_sh.unreduced = [a for a in mesh.atoms if a not in used][:1]
    scatter = rng.random() < 0.6
    axes, rs_sh = _scatter(rng, mesh, dot_sh) if scatter else ([], dot_sh)
    counts = [sa.counts(), sb.counts(), dot_sh.counts(), rs_sh.counts()]
    def size(*per_sharding: int) -> int:
        return random_shape(rng, [[c] for c in per_sharding])[0]

    m = size(counts[0][0], counts[2][0], counts[3][0])
    k = size(counts[0][1], counts[1][0])
    n = size(counts[1][1], counts[2][1], counts[3][1])
    ta, tb, to = tensor([m, k]), tensor([k, n]), tensor([m, n])
    lines = [ln.replace("@T0", ta).replace("@T1", tb) for ln in lines]
    extra = [(v, t.replace("@T0", ta).replace("@T1", tb)) for v, t in extra]
    lines.append(f"    %d = stablehlo.dot_general {values[0]}, {values[1]}, contracting_dims = "
                 f"[1] x [0] {{sdy.sharding = #sdy.sharding_per_value<[{dot_sh.text(mesh)}]>}} "
                 f": ({ta}, {tb}) -> {to}")
    result = "%d"
    if scatter:
        lines.append(f"    %rs = sdy.reduce_scatter {_axes_text(mesh, axes)} %d "
                     f"out_sharding={rs_sh.text(mesh)} : {to}")
        result = "%rs"
        if rng.random() < 0.2:
            extra.append(("%d", to))
    rets = [(result, to), *extra]
    args = (f"%arg0: {ta} {{sdy.sharding = #sdy.sharding{sa.text(mesh)}}}, "
            f"%arg1: {tb} {{sdy.sharding = #sdy.sharding{sb.text(mesh)}}}")
    outs = ", ".join(t for _, t in rets)
    body = "\n".join(lines)
    return (f"  func.func @{name}({args}) -> ({outs}) {{\n{body}\n"
            f"    return {', '.join(v for v, _ in rets)} : {outs}\n  }}")


def cmv1_module(rng: random.Random, n: int = 3) -> str:
    mesh = random_mesh(rng)
    lines = [mesh.decl()] + [cmv1_function(rng, f"f{i}", mesh) for i in range(n)]
    return "\n".join(lines) + "\n"
