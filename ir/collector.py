"""Building many long-lived objects without Python's cyclic garbage collector in the way.

A parse or a propagation builds hundreds of thousands of objects that all live as long as the
module. Collections while they are being built find nothing to free, and the collector's
young generations would scan every one of them at least twice (young, then middle) before
they reach the oldest generation, each scan touching the objects they point to: memory-bound
work that grows faster than the program once it outgrows the caches (docs/benchmarks.md:
a 16k-layer MLP spent a fifth of its propagation in the one young collection that followed
it). `long_lived()` pauses the collector for the phase and then moves what is tracked straight
into the oldest generation (`gc.freeze()` + `gc.unfreeze()`, two list splices).

Objects moved that way skip the count by which Python decides that a full collection is due
(a quarter more objects reached the oldest generation since the last one), so a process that
builds and drops modules in a loop would never collect their garbage (measured: 576 MB after
3,000 parse + propagate rounds of a small transformer, 44 MB without). `long_lived` keeps that
count itself and runs the full collection Python would have run, at the start of the next
phase that is due one (before it builds, so the garbage of earlier modules is freed first).
A phase that made few objects (`DIRECT`) leaves them young, as Python would.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Below this many new objects a phase's objects are left to the young collections: scanning
# them costs little, and the garbage of small modules built and dropped in a loop is freed
# there, where moving it would leave it to the (rarer, whole-heap) full collections.
DIRECT = 20_000
# Objects `long_lived` moved into the oldest generation since the last full collection, and
# the number of full collections (Python's count) when that was last brought up to date.
_moved = 0
_full_seen = -1


def _full_collections() -> int:
    return gc.get_stats()[-1]["collections"]


@contextmanager
def long_lived() -> Iterator[None]:
    """Pause collection while the block runs; afterwards its survivors are old objects.

    A program that froze objects itself (`gc.get_freeze_count() > 0`) keeps them frozen: then
    the block's objects are left to the young collections, as without this. A collector the
    program turned off stays off."""
    global _moved, _full_seen
    if not gc.isenabled():
        yield  # an enclosing phase (or the program) has the collector off: leave it so
        return
    if _full_collections() != _full_seen:
        _moved = 0  # a full collection has looked at everything moved before it
    elif _moved > sys.getallocatedblocks() // 4:
        gc.collect()  # due, by Python's own rule, counting what was moved here
        _moved = 0
    gc.disable()
    try:
        yield
    finally:
        made = gc.get_count()[0]  # tracked objects made (net) since the last young collection
        if made >= DIRECT and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
            _moved += made
        _full_seen = _full_collections()
        gc.enable()
