"""The integer program of a `Problem` as sparse matrices, for each solve of `solve.py`.

    builder = ProgramBuilder(problem)
    lp = builder.build(budget=None, peak=False)          # communication, no memory rows
    lp = builder.build(budget=B)                         # communication within the budget
    lp = builder.build(budget=B, peak=True, limit=L)     # the least peak moving <= L
    x0 = builder.start(v)                                # a plan's point, auxiliaries filled

Columns: the problem's variables (`x` per group and choice, `e` per block cell), then one
auxiliary per memory term that several rows share and that spans several variables
(`y_t = coef . v`, memory.py), then with `peak` the peak `M`. Rows: one choice per group; each
block's marginals; the auxiliaries' definitions; the memory rows (`<= budget`, or `- M <= 0`
with `peak`); with `limit`, `objective . v <= limit`. Everything is built from arrays with
numpy (no Python loop per variable), so a 300k-variable program takes a second.

Bytes are scaled by powers of two (exact in floating point) so that the largest objective
coefficient and the largest memory coefficient are below 2^20: HiGHS's tolerances are relative
to numbers of that size, not to gigabytes.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import coo_matrix

from shardc.passes.propagation.autoshard.highs import LinearProgram
from shardc.passes.propagation.autoshard.shares import share_rows


def _scale(values: np.ndarray) -> float:
    """A power of two bringing max |values| to at most 2^20."""
    top = float(np.max(np.abs(values))) if len(values) else 0.0
    if top <= 2.0**20:
        return 1.0
    return 2.0 ** -math.ceil(math.log2(top / 2.0**20))


class _Triplets:
    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lower: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.count = 0

    def rows(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, lower: np.ndarray,
             upper: np.ndarray) -> None:
        """Add len(lower) rows; `rows` are indices relative to the first new one."""
        self.r.append(rows + self.count)
        self.c.append(cols)
        self.v.append(vals)
        self.lower.append(lower)
        self.upper.append(upper)
        self.count += len(lower)

    def matrix(self, ncols: int):
        if not self.r:
            return coo_matrix((0, ncols)).tocsc(), np.zeros(0), np.zeros(0)
        a = coo_matrix(
            (np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
            shape=(self.count, ncols),
        ).tocsc()
        a.sum_duplicates()
        return a, np.concatenate(self.lower), np.concatenate(self.upper)


class ProgramBuilder:
    def __init__(self, problem) -> None:
        self.problem = problem
        self.n = problem.num_vars
        self.obj_scale = _scale(problem.objective)
        coefs = [t.coef for t in problem.terms if len(t.coef)]
        self.mem_scale = _scale(np.concatenate(coefs)) if coefs else 1.0
        terms = problem.terms
        self.term_len = np.array([len(t.index) for t in terms], dtype=np.int64)
        self.term_start = np.cumsum(self.term_len) - self.term_len
        self.flat_index = np.concatenate([t.index for t in terms]) if terms else np.zeros(0, int)
        self.flat_coef = np.concatenate([t.coef for t in terms]) if terms else np.zeros(0)
        term_const = np.array([t.const for t in terms])
        self.row_ids = [row.ids for row in problem.rows]
        lens = np.array([len(ids) for ids in self.row_ids], dtype=np.int64)
        self.entry_row = np.repeat(np.arange(len(lens)), lens)
        self.entry_term = np.concatenate(self.row_ids) if self.row_ids else np.zeros(0, int)
        self.entry_count = (np.concatenate([row.counts for row in problem.rows])
                            if problem.rows else np.zeros(0))
        uses = np.bincount(self.entry_term, minlength=len(terms))
        # terms with an auxiliary column: shared by rows and spanning several variables
        self.aux = np.nonzero((uses > 1) & (self.term_len > 1))[0]
        self.aux_col = np.full(len(terms), -1, dtype=np.int64)
        self.aux_col[self.aux] = self.n + np.arange(len(self.aux))
        self.row_const = np.bincount(self.entry_row, self.entry_count * term_const[
            self.entry_term] if len(self.entry_term) else None, minlength=len(lens)).astype(float)
        self._structure = self._structure_rows()

    # ----- rows --------------------------------------------------------------------------------

    @property
    def structure_rows(self) -> int:
        """The number of rows before the memory rows (choices and block marginals)."""
        return self._structure.count

    def _structure_rows(self) -> _Triplets:
        p = self.problem
        rows = _Triplets()
        groups = [g for g, size in enumerate(p.space.sizes) if size > 1]
        if groups:
            sizes = np.array([p.space.sizes[g] for g in groups])
            starts = np.array([p.x_offset[g] for g in groups])
            r = np.repeat(np.arange(len(groups)), sizes)
            c = np.repeat(starts, sizes) + _ranges(sizes)
            one = np.ones(len(groups))
            rows.rows(r, c, np.ones(len(c)), one, one)
        for b in p.blocks:
            nr, nc = len(b.rows), len(b.cols)
            cells = b.offset + np.arange(nr * nc).reshape(nr, nc)
            # row marginals: sum_c e[r, c] - sum_{a in r} x[src, a] = 0
            r_cells = np.repeat(np.arange(nr), nc)
            r_x = np.concatenate([np.full(len(m), i) for i, m in enumerate(b.rows)])
            x_src = p.x_offset[b.src_group] + np.concatenate([np.array(m) for m in b.rows])
            c_cells = np.tile(np.arange(nc), nr) + nr
            c_x = nr + np.concatenate([np.full(len(m), i) for i, m in enumerate(b.cols)])
            x_dst = p.x_offset[b.dst_group] + np.concatenate([np.array(m) for m in b.cols])
            zero = np.zeros(nr + nc)
            rows.rows(
                np.concatenate([r_cells, r_x, c_cells, c_x]),
                np.concatenate([cells.ravel(), x_src, cells.ravel(), x_dst]),
                np.concatenate([np.ones(nr * nc), -np.ones(len(x_src)), np.ones(nr * nc),
                                -np.ones(len(x_dst))]),
                zero, zero,
            )
        r, c, v, lower = share_rows(p)  # a shared reshard's z covers each of its reads
        if len(lower):
            rows.rows(r, c, v, lower, np.full(len(lower), np.inf))
        return rows

    def _expand(self, terms: np.ndarray, rows: np.ndarray, weights: np.ndarray):
        """The entries of `weights[i] * terms[terms[i]]` in row `rows[i]`."""
        lens = self.term_len[terms]
        at = np.repeat(self.term_start[terms], lens) + _ranges(lens)
        return np.repeat(rows, lens), self.flat_index[at], self.flat_coef[at] * np.repeat(
            weights, lens)

    def _memory(self, rows: _Triplets, budget: float | None, peak_col: int | None) -> None:
        p, s = self.problem, self.mem_scale
        if not p.rows:
            return
        if len(self.aux):  # y_t: coef . v - y_t = 0
            k = np.arange(len(self.aux))
            r, c, v = self._expand(self.aux, k, np.full(len(k), s))
            zero = np.zeros(len(k))
            rows.rows(np.concatenate([r, k]), np.concatenate([c, self.aux_col[self.aux]]),
                      np.concatenate([v, -np.ones(len(k))]), zero, zero)
        is_aux = self.aux_col[self.entry_term] >= 0
        r1 = self.entry_row[is_aux]
        c1 = self.aux_col[self.entry_term[is_aux]]
        v1 = self.entry_count[is_aux]
        inline = ~is_aux
        r2, c2, v2 = self._expand(self.entry_term[inline], self.entry_row[inline],
                                  self.entry_count[inline] * s)
        parts_r, parts_c, parts_v = [r1, r2], [c1, c2], [v1, v2]
        nrows = len(p.rows)
        if peak_col is not None:
            parts_r.append(np.arange(nrows))
            parts_c.append(np.full(nrows, peak_col))
            parts_v.append(-np.ones(nrows))
        const = self.row_const * s
        upper = -const if peak_col is not None else (budget * s - const)
        rows.rows(np.concatenate(parts_r), np.concatenate(parts_c), np.concatenate(parts_v),
                  np.full(nrows, -np.inf), upper)

    # ----- programs ----------------------------------------------------------------------------

    def build(self, *, budget: float | None = None, peak: bool = False,
              limit: float | None = None, fixed: np.ndarray | None = None) -> LinearProgram:
        """The program of one solve (module docstring); `fixed` (bool per problem variable):
        variables held at 0."""
        p = self.problem
        with_memory = budget is not None or peak
        naux = len(self.aux) if with_memory else 0
        ncols = self.n + naux + (1 if peak else 0)
        peak_col = ncols - 1 if peak else None
        rows = _Triplets()
        rows.r, rows.c, rows.v = list(self._structure.r), list(self._structure.c), \
            list(self._structure.v)
        rows.lower, rows.upper = list(self._structure.lower), list(self._structure.upper)
        rows.count = self._structure.count
        if with_memory:
            self._memory(rows, budget, peak_col)
        objective = p.objective * self.obj_scale
        if limit is not None:
            nz = np.nonzero(objective)[0]
            rows.rows(np.zeros(len(nz), dtype=np.int64), nz, objective[nz],
                      np.array([-np.inf]), np.array([limit * self.obj_scale]))
        matrix, lower, upper = rows.matrix(ncols)
        cost = np.zeros(ncols)
        if peak:
            cost[peak_col] = 1.0
        else:
            cost[: self.n] = objective
        col_lower = np.zeros(ncols)
        col_upper = np.ones(ncols)
        col_upper[: self.n][p.forbidden] = 0.0
        if fixed is not None:
            col_upper[: self.n][fixed] = 0.0
        col_lower[self.n :] = -np.inf  # an auxiliary may be negative (bytes freed)
        col_upper[self.n :] = np.inf
        integer = np.zeros(ncols, dtype=bool)
        for g, size in enumerate(p.space.sizes):
            if size > 1:
                integer[p.x_offset[g] : p.x_offset[g] + size] = True
        return LinearProgram(cost, col_lower, col_upper, matrix, lower, upper, integer)

    def start(self, v: np.ndarray, *, memory: bool, peak: bool) -> np.ndarray:
        """The full point of a plan `v` for a program built with memory rows / `peak`."""
        parts = [v]
        s = self.mem_scale
        if memory:
            p = self.problem
            parts.append(np.array([float(p.terms[t].coef @ v[p.terms[t].index]) * s
                                   for t in self.aux], dtype=float))
        if peak:
            parts.append(np.array([self.problem.peak(v) * s]))
        return np.concatenate(parts)

    def unscale_peak(self, value: float) -> float:
        return value / self.mem_scale

    def unscale_objective(self, value: float) -> float:
        return value / self.obj_scale


def _ranges(sizes: np.ndarray) -> np.ndarray:
    """[0..sizes[0]), [0..sizes[1]), ... concatenated."""
    total = int(sizes.sum())
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.arange(total) - starts
