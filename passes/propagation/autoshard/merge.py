"""Edge blocks between the same two groups merged into one.

    problem = merge_blocks(problem)

A consumer group often reads its producer group over several edges (a layer's weight read by
the forward and the backward matmul, a tied value read at several operands, the carry of a
state back to its argument): each edge has its own transportation block `e`, with its own row
and column classes. Between the same two groups these blocks are one block over the common
refinement of their classes: merged cell `(R, C)` lies in exactly one cell of each old block,
so the old cell is the sum of the merged cells it contains, its costs add up, and every memory
term on an old cell becomes one on those merged cells. Exact (the same objective and peak for
every plan), smaller, and at least as tight in the LP: separate blocks may pair the two groups'
fractional choices differently, one block cannot. On the Llama-3-8B-shaped step at 64 devices
with `carry=auto` it takes 1,508 blocks (284,067 variables) to 650 (172,826), and the free LP
from 10.5 s to 2.0 s CPU (docs/autoshard.md).
"""

from __future__ import annotations

import numpy as np

from shardc.passes.propagation.autoshard.parts import EdgeBlock, Term
from shardc.passes.propagation.autoshard.plans import class_of


def _refine(maps: list[np.ndarray], size: int) -> tuple[list[list[int]], np.ndarray]:
    """The common refinement of several class maps over `size` choices: its classes (in order
    of their first choice) and, per class, the index of its first choice."""
    keys: dict[tuple[int, ...], int] = {}
    members: list[list[int]] = []
    for a in range(size):
        key = tuple(int(m[a]) for m in maps)
        i = keys.setdefault(key, len(members))
        if i == len(members):
            members.append([])
        members[i].append(a)
    return members, np.array([m[0] for m in members], dtype=np.int64)


def merge_blocks(problem):
    """`problem` with its blocks between the same (producer, consumer) groups merged (module
    docstring); returns `problem` itself when no two blocks share their groups."""
    sizes = problem.space.sizes
    by_pair: dict[tuple[int, int], list[EdgeBlock]] = {}
    for b in problem.blocks:
        by_pair.setdefault((b.src_group, b.dst_group), []).append(b)
    if len(by_pair) == len(problem.blocks):
        return problem
    nx = min((b.offset for b in problem.blocks), default=problem.num_vars)
    remap: list[np.ndarray] = [np.array([j]) for j in range(nx)]
    remap += [np.zeros(0, dtype=np.int64)] * (problem.num_vars - nx)
    blocks: list[EdgeBlock] = []
    comm, ring, forbidden = [problem.comm[:nx]], [problem.ring[:nx]], [problem.forbidden[:nx]]
    n = nx
    for (gs, gd), old in by_pair.items():
        row_maps = [class_of(b.rows, sizes[gs]) for b in old]
        col_maps = [class_of(b.cols, sizes[gd]) for b in old]
        rows, row_first = _refine(row_maps, sizes[gs])
        cols, col_first = _refine(col_maps, sizes[gd])
        shape = (len(rows), len(cols))
        cells = n + np.arange(shape[0] * shape[1]).reshape(shape)
        parts = np.zeros((2, *shape))
        banned = np.zeros(shape, dtype=bool)
        for b, rm, cm in zip(old, row_maps, col_maps):
            r_old, c_old = rm[row_first], cm[col_first]  # merged class -> old class
            sl = slice(b.offset, b.offset + b.size)
            for k, vec in enumerate((problem.comm, problem.ring)):
                parts[k] += vec[sl].reshape(len(b.rows), len(b.cols))[np.ix_(r_old, c_old)]
            banned |= problem.forbidden[sl].reshape(len(b.rows), len(b.cols))[
                np.ix_(r_old, c_old)]
            for r in range(len(b.rows)):
                for c in range(len(b.cols)):
                    inside = cells[np.ix_(r_old == r, c_old == c)].ravel()
                    remap[b.offset + r * len(b.cols) + c] = inside
        # costs are per occurrence times count in `comm`; the merged block's are totals. Its
        # held/freed/peak stay zero: the memory rows were built from the old blocks, and their
        # terms are remapped below.
        merged = EdgeBlock(gs, gd, rows, cols, parts[0], parts[1], np.zeros(shape),
                           np.zeros(shape), np.zeros(shape), offset=n, count=1)
        blocks.append(merged)
        comm.append(parts[0].ravel())
        ring.append(parts[1].ravel())
        forbidden.append(banned.ravel())
        n += merged.size
    problem.blocks = blocks
    problem.num_vars = n
    problem.forbidden = np.concatenate(forbidden)
    problem.comm = np.where(problem.forbidden, 0.0, np.concatenate(comm))
    problem.ring = np.where(problem.forbidden, 0.0, np.concatenate(ring))
    problem.terms = [_remap(t, remap) for t in problem.terms]
    for share in problem.shares:
        share.reads = [_remap(t, remap) for t in share.reads]
    problem.__dict__.pop("_class_maps", None)  # plans.py's cache of the old blocks
    return problem


def _remap(term: Term, remap: list[np.ndarray]) -> Term:
    if not len(term.index):
        return term
    parts = [remap[j] for j in term.index]
    lens = np.array([len(p) for p in parts])
    return Term(np.concatenate(parts).astype(np.int64), np.repeat(term.coef, lens), term.const)
