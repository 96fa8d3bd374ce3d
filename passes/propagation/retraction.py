"""Taking back what propagation derived from an annotation that changes (delete, then
re-derive: Datalog's DRed).

    gone = Retraction(origins).of([(w, '"tp"')])     # {id(value): {axis keys}}
    m = cut(mapping, gone[id(v)])                   # v's sharding without them

Propagation's `OriginTracker` records, for every axis a value got, the neighbour it took it
from. When an annotation loses an axis (or an edge of the program is rewired), every axis whose
recorded derivation runs through a removed one goes too, and so do the axes after it in the
same dim (a dim's axes are a major-to-minor list). What stays has an intact derivation from the
annotations that stay, so it is below what propagating the changed program from scratch
decides; when that propagation makes no choice (audit.py), propagating again from the cut
state reaches exactly it (passes/propagation/incremental.py). Taking back more than needed is
safe: propagation derives it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shardc.ir.core import Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.passes.propagation.origins import OriginTracker


def _name(key: str) -> str:
    return key.split(":")[0]


def cut(m: NamedMapping, keys: set[str]) -> NamedMapping:
    """`m` with each dim's axes cut before the first one `keys` names (by axis name)."""
    names = {_name(k) for k in keys}
    dims = []
    for d in m.dims:
        kept = []
        for a in d.axes:
            if str(a) in keys or a.name in names:
                break
            kept.append(a)
        dims.append(DimSharding(tuple(kept), d.is_closed, d.priority))
    return m.with_dims(dims)


class Retraction:
    """The dependents of axes, over one propagation's records (see the module docstring)."""

    def __init__(self, origins: OriginTracker):
        self.origins = origins
        # (id(neighbour), axis name) -> the (value, axis key)s derived from it
        self.dependents: dict[tuple[int, str], list[tuple[Value, str]]] = {}
        origins.by_value  # noqa: B018 - replays propagation's records (they are kept lazily)
        for vid, came in list(origins._from.items()):  # noqa: SLF001 - its own records
            v = origins.values.get(vid)
            if v is None:
                continue
            for key, n in came.items():
                self.dependents.setdefault((id(n), _name(key)), []).append((v, key))

    def unexplained(self) -> int:
        """How many axes propagation gave a value without a recorded neighbour (nothing is
        known to depend on them: taking things back is then unsafe)."""
        count = self.origins.imprecise
        for vid, known in self.origins.by_value.items():
            came = self.origins._from.get(vid, {})  # noqa: SLF001
            count += sum(1 for key, o in known.items()
                         if o.via and o.via != "return" and key not in came)
        return count

    def of(self, removed: Iterable[tuple[Value, str]],
           layout: Callable[[Value], NamedMapping | None]) -> dict[int, tuple[Value, set[str]]]:
        """Everything that goes with `removed` (value, axis key) facts: id(value) -> (value,
        its axis keys that go). `layout(v)` is `v`'s sharding as propagation decided it."""
        gone: dict[int, tuple[Value, set[str]]] = {}
        todo = list(removed)
        while todo:
            v, key = todo.pop()
            entry = gone.setdefault(id(v), (v, set()))
            if key in entry[1]:
                continue
            entry[1].add(key)
            todo += self.dependents.get((id(v), _name(key)), ())
            m = layout(v)
            if m is None:
                continue
            for d in m.dims:  # the axes after it in its dim go too
                names = [a.name for a in d.axes]
                if _name(key) in names:
                    todo += [(v, str(a)) for a in d.axes[names.index(_name(key)) + 1:]]
        return gone
