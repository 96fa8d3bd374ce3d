"""Random StableHLO+sdy modules of calls, for the passes on function and call edges (seeded
text, the meshes and shardings of tests/export_programs.py):

    text = call_module(random.Random(3))              # @main calling private functions
    text = call_module(random.Random(3), edges=True)  # with sdy.func_data_flow_edge ops

Every value has one shape; each callee takes one or two arguments and returns one or two
values; arguments, results, calls and edges carry a random sharding or none (a sharding
sometimes open, a call result sometimes without one next to one with one).
"""

from __future__ import annotations

import random

from tests.export_programs import Mesh, random_mesh, random_shape, random_sharding, tensor


def _sharding(rng: random.Random, mesh: Mesh, rank: int) -> str | None:
    if rng.random() < 0.35:
        return None
    text = random_sharding(rng, mesh, rank).text(mesh)
    if rng.random() < 0.3:  # open the last dim
        head, _, tail = text.rpartition("}")
        text = head + (", ?}" if not head.endswith("{") else "?}") + tail
    return text


def _attr(s: str | None) -> str:
    return "" if s is None else f" {{sdy.sharding = #sdy.sharding{s}}}"


def _edge(rng: random.Random, mesh: Mesh, name: str, value: str, ty: str, rank: int) -> str:
    s = _sharding(rng, mesh, rank)
    attr = "" if s is None else f" {{sdy.sharding = #sdy.sharding_per_value<[{s}]>}}"
    return f"    {name} = sdy.func_data_flow_edge {value}{attr} : {ty}"


def call_module(rng: random.Random, n: int = 3, edges: bool = False) -> str:
    mesh = random_mesh(rng)
    rank = rng.randint(1, 2)
    counts = [random_sharding(rng, mesh, rank).counts() for _ in range(3)]
    shape = random_shape(rng, counts)
    ty = tensor(shape)
    lines = [mesh.decl()]
    arity: list[tuple[int, int]] = []
    for g in range(n):
        n_in, n_out = rng.randint(1, 2), rng.randint(1, 2)
        arity.append((n_in, n_out))
        args = ", ".join(f"%arg{i}: {ty}{_attr(_sharding(rng, mesh, rank))}" for i in range(n_in))
        outs = ", ".join(f"{ty}{_attr(_sharding(rng, mesh, rank))}" for _ in range(n_out))
        body = []
        names = [f"%arg{i}" for i in range(n_in)]
        if edges:
            for i in range(n_in):
                body.append(_edge(rng, mesh, f"%e{i}", f"%arg{i}", ty, rank))
                names[i] = f"%e{i}"
        body.append(f"    %0 = stablehlo.add {names[0]}, {names[-1]} : {ty}")
        rets = ["%0", "%1"][:n_out]
        if n_out == 2:
            body.append(f"    %1 = stablehlo.negate {names[0]} : {ty}")
        body.append(f"    return {', '.join(rets)} : {', '.join([ty] * n_out)}")
        lines.append(f"  func.func private @g{g}({args}) -> ({outs}) {{\n" + "\n".join(body)
                     + "\n  }")
    body, values = [], ["%arg0"]
    for k in range(rng.randint(1, 4)):
        g = rng.randrange(n)
        n_in, n_out = arity[g]
        operands = ", ".join(rng.choice(values[-2:]) for _ in range(n_in))
        shardings = [_sharding(rng, mesh, rank) for _ in range(n_out)]
        attr = ""
        if any(s is not None for s in shardings):
            open_ = "<@mesh, [" + ", ".join("{?}" for _ in shape) + "]>"
            texts = [s if s is not None else open_ for s in shardings]
            attr = f" {{sdy.sharding = #sdy.sharding_per_value<[{', '.join(texts)}]>}}"
        res = f"%c{k}" + (f":{n_out}" if n_out > 1 else "")
        sig = f"({', '.join([ty] * n_in)}) -> ({', '.join([ty] * n_out)})"
        body.append(f"    {res} = call @g{g}({operands}){attr} : {sig}")
        results = [f"%c{k}" + (f"#{j}" if n_out > 1 else "") for j in range(n_out)]
        for j, r in enumerate(results):
            if edges:
                body.append(_edge(rng, mesh, f"%f{k}_{j}", r, ty, rank))
                results[j] = f"%f{k}_{j}"
        body.append(f"    %n{k} = stablehlo.negate {results[-1]} : {ty}")
        values.append(f"%n{k}")
    body.append(f"    return {values[-1]} : {ty}")
    lines.append(f"  func.func @main(%arg0: {ty}{_attr(_sharding(rng, mesh, rank))}) -> {ty} "
                 "{\n" + "\n".join(body) + "\n  }")
    return "\n".join(lines) + "\n"


def call_module_with_edges(rng: random.Random) -> str:
    return call_module(rng, edges=True)
