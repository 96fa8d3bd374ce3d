"""`paused_gc()`: Python's cyclic garbage collector off while a compile runs, on again after.

    with paused_gc():
        result = compile(module)

Why: a compile allocates hundreds of thousands of IR objects that live on (the programs it
returns), on top of what JAX holds. CPython starts a full collection each time the objects that
survived younger collections grow by a quarter, and each one walks every tracked object in the
process: on the 8-layer Llama step of benchmarks/jit.py that was ~0.6-0.8 s of a ~7 s first
call of `shardc.jit` (docs/benchmarks.md), collecting little, since the IR's cycles are alive.
With the collector paused, what the compile left as garbage is collected once, by the first
collection after it. Reference counting frees everything without cycles as before; nothing the
compile computes depends on when the collector runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector off for the block (unchanged when it was off already, e.g. in an outer
    `paused_gc`)."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
