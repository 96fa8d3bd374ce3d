"""ir/collector.py: a phase's objects skip the young generations, and nothing is lost."""

from __future__ import annotations

import gc
import weakref

import pytest

from shardc.ir.collector import long_lived


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_block_objects_land_in_the_oldest_generation(collector):
    with long_lived():
        assert not gc.isenabled()  # no collection while the block builds
        kept = [Node() for _ in range(10)]
    assert gc.isenabled()
    assert _in_generation(kept[0], 2) and not _in_generation(kept[0], 0)
    assert gc.get_freeze_count() == 0


def test_cycles_built_in_the_block_are_still_freed(collector):
    with long_lived():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        alive = weakref.ref(a)
        del a, b
    assert alive() is not None
    gc.collect()
    assert alive() is None


def test_objects_the_program_froze_stay_frozen(collector):
    frozen = Node()
    gc.freeze()
    count = gc.get_freeze_count()
    assert count > 0
    with long_lived():
        young = Node()
    assert gc.get_freeze_count() == count  # not unfrozen by the block
    assert _in_generation(young, 0)  # left to the young collections, as without the block
    assert frozen is not None


def test_a_disabled_collector_stays_disabled(collector):
    gc.disable()
    with long_lived():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_still_reenables(collector):
    with pytest.raises(ValueError), long_lived():
        raise ValueError("boom")
    assert gc.isenabled()
