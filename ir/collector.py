"""Building many long-lived objects without Python's cyclic garbage collector in the way.

A parse or a propagation builds hundreds of thousands of objects that all live as long as the
module. Collections while they are being built find nothing to free, and the collector's
young generations would scan every one of them at least twice (young, then middle) before
they reach the oldest generation, each scan touching the objects they point to: memory-bound
work that grows faster than the program once it outgrows the caches (docs/benchmarks.md:
a 16k-layer MLP spent a fifth of its propagation in the one young collection that followed
it). `long_lived()` pauses the collector for the phase and then moves what is tracked straight
into the oldest generation (`gc.freeze()` + `gc.unfreeze()`, two list splices), where the
next full collection looks at it like any other old object: nothing is freed later or never.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived() -> Iterator[None]:
    """Pause collection while the block runs; afterwards its survivors are old objects.

    A program that froze objects itself (`gc.get_freeze_count() > 0`) keeps them frozen: then
    the block's objects are left to the young collections, as without this."""
    if not gc.isenabled():
        yield  # an enclosing phase (or the program) has the collector off: leave it so
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
