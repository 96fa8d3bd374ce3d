"""Padded shards: a dim of n split k ways holds ceil(n/k) per device (`chunk`), the last shards
padded at the end (`shardc.ir.types.shard_shape`).

Uneven dims: a dim whose shard count changes from k to k·m (or back) keeps its data local to the
group only when every fine shard lies inside its coarse parent shard; `check_regroup` enforces
that (a collective step raises when it would need data from outside its group).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import NamedMapping

Shape = tuple[int, ...]


def chunk(n: int, k: int) -> int:
    """Padded size of one of k shards of a dim of size n."""
    return -(-n // k)


def local_elements(shape: Shape, counts: Sequence[int]) -> int:
    return math.prod(chunk(n, k) for n, k in zip(shape, counts))


@functools.lru_cache(maxsize=4096)
def nested_ok(n: int, k_coarse: int, k_fine: int) -> bool:
    """Does every one of the k_fine shards of a dim of n lie inside its coarse parent shard?

    Shard j of k_fine has parent j // (k_fine // k_coarse). Always true when k_coarse == 1 or
    k_fine divides n; false for n=10, 2 -> 4 (fine shard 1 is [3, 6), parent 0 is [0, 5)).
    """
    if k_coarse == 1 or k_coarse == k_fine:
        return True
    m = k_fine // k_coarse
    cf, cc = chunk(n, k_fine), chunk(n, k_coarse)
    for j in range(k_fine):
        lo, hi = min(j * cf, n), min((j + 1) * cf, n)
        if lo == hi:
            continue
        parent = j // m
        if lo < parent * cc or hi > min((parent + 1) * cc, n):
            return False
    return True


def check_regroup(shape: Shape, before: NamedMapping, after: NamedMapping) -> None:
    """Raise unless every dim whose shard count changes keeps its data inside the group."""
    for d, (n, k0, k1) in enumerate(zip(shape, before.shard_counts(), after.shard_counts())):
        if k0 == k1:
            continue
        lo, hi = min(k0, k1), max(k0, k1)
        if hi % lo != 0 or not nested_ok(n, lo, hi):
            raise ShardingError(
                f"dim {d} of size {n} cannot go from {k0} to {k1} shards with one collective: "
                f"the padded shards of size {chunk(n, hi)} do not nest in those of size "
                f"{chunk(n, lo)}, so devices would need data from outside their group"
            )
