"""Plans as points of the integer program: built from choices, evaluated, and found greedily.

    v = plan_vector(problem, choices)      # x one-hot per group, e on each block's chosen cell
    cost, peak = evaluate(problem, choices)
    choices = choices_of(problem, v)       # a solver's point back to one choice per group
    plans = greedy_plans(problem)          # a few plans found without the solver

The greedy plans are the solver's first incumbents when the free optimum does not fit the
budget, and a floor: the pass never returns a plan worse than one of them that fits. Each is
iterated conditional modes on `objective + weight * bytes` (the bytes of the values a group
makes under each choice): every group starts at its own cheapest choice, then, sweep after
sweep in group order, takes the choice cheapest given its neighbours' current choices, until
no group changes (or a fixed number of sweeps). A fixed ladder of weights, from "moves
nothing" to "holds least", gives plans at different points between traffic and memory. All of
it is deterministic: ties go to the lowest choice.
"""

from __future__ import annotations

import numpy as np

from shardc.passes.propagation.autoshard.costs import UNPLANNABLE
from shardc.passes.propagation.autoshard.shares import fill_shares

WEIGHTS = (0.0, 0.25, 1.0, 4.0, 16.0, 1024.0)
_SWEEPS = 8


def class_of(classes: list[list[int]], size: int) -> np.ndarray:
    """Choice -> the index of the class (of `classes`, lists of choices) it is in."""
    out = np.zeros(size, dtype=np.int64)
    for i, members in enumerate(classes):
        out[members] = i
    return out


def _maps(problem) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per block: choice -> row class (producer), choice -> column class (consumer)."""
    cached = getattr(problem, "_class_maps", None)
    if cached is None:
        sizes = problem.space.sizes
        cached = [
            (class_of(b.rows, sizes[b.src_group]), class_of(b.cols, sizes[b.dst_group]))
            for b in problem.blocks
        ]
        problem._class_maps = cached
    return cached


def plan_vector(problem, choices: list[int]) -> np.ndarray:
    """The program's point for one choice per group."""
    v = np.zeros(problem.num_vars)
    for g, size in enumerate(problem.space.sizes):
        if size > 1:
            v[problem.x_offset[g] + choices[g]] = 1.0
    for block, (row_of, col_of) in zip(problem.blocks, _maps(problem)):
        r = row_of[choices[block.src_group]]
        c = col_of[choices[block.dst_group]]
        v[block.offset + r * len(block.cols) + c] = 1.0
    fill_shares(problem, v)
    return v


def choices_of(problem, v: np.ndarray) -> list[int]:
    """The choice of each group at point `v` (the largest x; ties: the lowest choice)."""
    out = []
    for g, size in enumerate(problem.space.sizes):
        if size == 1:
            out.append(0)
        else:
            base = problem.x_offset[g]
            out.append(int(np.argmax(v[base : base + size])))
    return out


def allowed(problem, v: np.ndarray) -> bool:
    """No unplannable reshard is taken."""
    return not bool(np.any(v[problem.forbidden] > 0.5))


def evaluate(problem, choices: list[int]) -> tuple[float, float]:
    """(objective, peak) of a plan; the objective is infinite if it takes an unplannable
    reshard."""
    v = plan_vector(problem, choices)
    if not allowed(problem, v):
        return float("inf"), problem.peak(v)
    return float(problem.objective @ v), problem.peak(v)


def _group_bytes(problem) -> list[np.ndarray]:
    """Per group and choice: the bytes of every value its nodes make (a memory proxy)."""
    graph, space, model = problem.graph, problem.space, problem.model
    out = [np.zeros(n) for n in space.sizes]
    for node in graph.nodes:
        g = space.group_of[node.index]
        if space.sizes[g] == 1:
            continue
        for k, value in enumerate(node.values):
            t = value.type
            out[g] += np.array([model.held(t.shape, t.dtype, s.results[k])
                                for s in node.strategies], dtype=float)
    return out


def _linear_costs(problem) -> list[np.ndarray]:
    """Per group: the objective of its own variables (unplannable: huge)."""
    out = []
    obj = problem.objective
    for g, size in enumerate(problem.space.sizes):
        if size == 1:
            out.append(np.zeros(1))
            continue
        sl = slice(problem.x_offset[g], problem.x_offset[g] + size)
        costs = obj[sl].astype(float)
        costs[problem.forbidden[sl]] = float(UNPLANNABLE)
        out.append(costs)
    return out


def _block_costs(problem) -> list[np.ndarray]:
    obj = problem.objective
    out = []
    for b in problem.blocks:
        cells = obj[b.offset : b.offset + b.size].astype(float).copy()
        cells[problem.forbidden[b.offset : b.offset + b.size]] = float(UNPLANNABLE)
        out.append(cells.reshape(len(b.rows), len(b.cols)))
    return out


def greedy_plans(problem, weights: tuple[float, ...] = WEIGHTS) -> list[list[int]]:
    """One plan per weight (module docstring), duplicates dropped, in weight order."""
    sizes = problem.space.sizes
    linear = _linear_costs(problem)
    memory = _group_bytes(problem)
    cells = _block_costs(problem)
    maps = _maps(problem)
    touching: list[list[int]] = [[] for _ in sizes]
    for i, b in enumerate(problem.blocks):
        touching[b.src_group].append(i)
        if b.dst_group != b.src_group:
            touching[b.dst_group].append(i)
    plans: list[list[int]] = []
    for weight in weights:
        own = [lin + weight * mem for lin, mem in zip(linear, memory)]
        choices = [int(np.argmin(c)) for c in own]
        for _ in range(_SWEEPS):
            changed = False
            for g, size in enumerate(sizes):
                if size == 1:
                    continue
                total = own[g].copy()
                for i in touching[g]:
                    b = problem.blocks[i]
                    row_of, col_of = maps[i]
                    if b.src_group == g:
                        total += cells[i][row_of, col_of[choices[b.dst_group]]]
                    else:
                        total += cells[i][row_of[choices[b.src_group]], col_of]
                best = int(np.argmin(total))
                if total[best] < total[choices[g]]:
                    choices[g] = best
                    changed = True
            if not changed:
                break
        if choices not in plans:
            plans.append(choices)
    return plans
