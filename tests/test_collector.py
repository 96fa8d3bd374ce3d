"""ir/collector.py: a phase's objects skip the young generations, and nothing is lost."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from shardc.ir import collector
from shardc.ir.collector import DIRECT, long_lived


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def _ring(n: int) -> list[Node]:
    nodes = [Node() for _ in range(n)]
    for a, b in zip(nodes, nodes[1:] + nodes[:1]):
        a.other = b
    return nodes


def test_a_large_phase_lands_in_the_oldest_generation(collector_on):
    with long_lived():
        assert not gc.isenabled()  # no collection while the block builds
        kept = [Node() for _ in range(DIRECT)]
    assert gc.isenabled()
    assert _in_generation(kept[0], 2) and not _in_generation(kept[0], 0)
    assert gc.get_freeze_count() == 0


def test_a_small_phase_stays_young(collector_on):
    with long_lived():
        kept = [Node() for _ in range(10)]
    assert _in_generation(kept[0], 0)  # left to the young collections, as Python would


def test_cycles_built_in_the_block_are_still_freed(collector_on):
    with long_lived():
        nodes = _ring(DIRECT)
        alive = weakref.ref(nodes[0])
        del nodes
    assert alive() is not None
    gc.collect()
    assert alive() is None


def test_garbage_of_earlier_phases_is_freed_without_asking(collector_on):
    """Moved objects skip Python's count of what reached the oldest generation; long_lived
    keeps that count, so building and dropping modules in a loop does not grow forever."""
    full = gc.get_stats()[-1]["collections"]
    refs = []
    # The rule is relative to the heap (a quarter of its blocks moved since the last full
    # collection), so how many rounds it takes depends on what the process already holds:
    # the whole test suite's heap needs more than a process of this file alone. Each round
    # moves ~DIRECT objects and grows the heap by about twice that, so a full collection is
    # due within heap / DIRECT rounds; without long_lived's count it never comes.
    bound = sys.getallocatedblocks() // DIRECT + 60
    for _ in range(bound):
        with long_lived():
            nodes = _ring(DIRECT)
        refs.append(weakref.ref(nodes[0]))
        del nodes
        if gc.get_stats()[-1]["collections"] > full:
            break
    assert gc.get_stats()[-1]["collections"] > full, (len(refs), bound)
    assert refs[0]() is None  # the first ring was garbage long before the last phase


def test_objects_the_program_froze_stay_frozen(collector_on):
    frozen = Node()
    gc.freeze()
    count = gc.get_freeze_count()
    assert count > 0
    with long_lived():
        young = [Node() for _ in range(DIRECT)]
    assert gc.get_freeze_count() == count  # not unfrozen by the block
    assert not _in_generation(young[0], 2)  # left to the young collections, as without the block
    assert frozen is not None


def test_a_disabled_collector_stays_disabled(collector_on):
    gc.disable()
    with long_lived():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_still_reenables(collector_on):
    with pytest.raises(ValueError), long_lived():
        raise ValueError("boom")
    assert gc.isenabled()


def test_the_count_restarts_after_any_full_collection(collector_on):
    with long_lived():
        kept = [Node() for _ in range(DIRECT)]
    assert collector._moved >= DIRECT
    gc.collect()
    with long_lived():
        pass
    assert collector._moved == 0
    assert kept
