"""Where each decided axis came from (Shardy's `debug-sharding-origins`).

Every axis of every sharding the user wrote is a *source*: `input: 0` (function argument 0),
`output: 1` (function result 1), `constraint_%3` (a `sharding_constraint`), `%v` (an annotated op
result). When propagation gives a value an axis, the axis inherits the source of the neighbour
that already had it, plus the op, stage and priority round it travelled through. An axis the
`auto-shard` pass chose has the source `auto-shard`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.origin_factors import factor_source
from shardc.passes.propagation.rules.rule import OpShardingRule

AUTO_SHARD = "auto-shard"


@dataclass(frozen=True, slots=True)
class Origin:
    source: str  # the user annotation the axis came from
    via: str = ""  # the op it propagated through last ("" for the annotation itself)
    stage: str = ""  # "priority 0, op stage 1" etc.

    def text(self) -> str:
        if not self.via:
            return self.source
        return f"{self.source} via {self.via}" + (f" ({self.stage})" if self.stage else "")


class OriginTracker:
    """Per value: axis name -> Origin."""

    def __init__(self) -> None:
        self._by_value: dict[int, dict[str, Origin]] = {}
        self.values: dict[int, Value] = {}
        self._results: dict[tuple[str, int], dict[str, Origin]] = {}
        self._interned: dict[tuple[str, str, str], Origin] = {}
        # Per value and axis, the neighbour it took the axis from (`path` walks them back to
        # the annotation; compiler/explain/collectives.py prints the walk).
        self._from: dict[int, dict[str, Value]] = {}
        # The sharding each annotated value was written with (priorities included).
        self._written: dict[int, NamedMapping] = {}
        # Per recorded event, the op's rule and its values' shardings then (origin_factors.py).
        self._factors: dict[tuple[int, int], tuple] = {}
        self.imprecise = 0  # axes whose neighbour could not be told by factor
        self.chosen: Mapping[Value, Collection[str]] = {}
        # What propagation reported, replayed in order when someone first reads the origins:
        # most runs (`shardc opt`, the benchmarks) never do. An event keeps the neighbours of
        # its op as they were, since later passes may rewire the op.
        self._pending: list[tuple] = []

    @property
    def by_value(self) -> dict[int, dict[str, Origin]]:
        self._replay()
        return self._by_value

    @property
    def results(self) -> dict[tuple[str, int], dict[str, Origin]]:
        self._replay()
        return self._results

    def _replay(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        for event in pending:
            event[0](*event[1:])

    def _origin(self, source: str, via: str = "", stage: str = "") -> Origin:
        """One shared `Origin` per distinct (source, via, stage): most values share a few, and
        fewer long-lived objects keep Python's garbage collector from rescanning large graphs."""
        key = (source, via, stage)
        origin = self._interned.get(key)
        if origin is None:
            origin = self._interned[key] = Origin(source, via, stage)
        return origin

    def seed(
        self, module: Module, label, chosen: Mapping[Value, Collection[str]] | None = None
    ) -> None:
        """Record the user's annotations as sources; `label(value)` names them. `chosen` maps
        values to the axes the `auto-shard` pass chose for them (their source is `auto-shard`).

        Only the shardings as they are now are read here (one walk); the per-axis records are
        built, like propagation's, when someone first reads the origins."""
        self.chosen = chosen or {}
        snapshot = []
        for func in module.functions.values():
            args = [(a, a.type.mapping) for a in func.args]
            prefix = f"@{func.name} input: " if func.is_private else "input: "
            results = [t.mapping if isinstance(t, DistributedTensorType) else None
                       for t in func.result_types]
            annotated = [(r, m, label(r)) for op in func.body for r in op.results
                         if (m := r.type.mapping) is not None]
            snapshot.append((func.name, prefix, args, results, annotated))
        self._pending.append((self._seed, snapshot))

    def _seed(self, snapshot: list[tuple]) -> None:
        for func_name, prefix, args, results, annotated in snapshot:
            for i, (a, m) in enumerate(args):
                self._seed_value(a, m, f"{prefix}{i}")
            for i, m in enumerate(results):
                if m is not None:
                    self._results[(func_name, i)] = {
                        str(a): self._origin(f"output: {i}") for a in m.used_axes()
                    }
            for r, m, name in annotated:
                self._seed_value(r, m, name)

    def _seed_value(self, v: Value, m: NamedMapping | None, name: str) -> None:
        if m is None:
            return
        self.values[id(v)] = v
        self._written[id(v)] = m
        auto = self.chosen.get(v, ())
        self._by_value[id(v)] = {
            str(a): self._origin(AUTO_SHARD if str(a) in auto else name) for a in m.used_axes()
        }

    def _find(
        self, axis: str, name: str, neighbours: tuple[Value, ...], exclude: Value
    ) -> tuple[Origin, Value] | None:
        for v in neighbours:
            if v is exclude:
                continue
            known = self._by_value.get(id(v))
            if not known:
                continue
            if axis in known:
                return known[axis], v
            for key, origin in known.items():
                if key.split(":")[0] == f'"{name}"' or key.startswith(f'"{name}"'):
                    return origin, v
        return None

    def record(
        self,
        v: Value,
        old: NamedMapping | None,
        new: NamedMapping,
        via: Operation | None,
        stage: str,
        rule: OpShardingRule | None = None,
        neighbours: tuple[Value, ...] | None = None,
    ) -> None:
        """`v` went from `old` to `new` through `via` in `stage`, under `via`'s `rule` when
        known (the neighbour an axis came from is then the one with it on the same factor).
        `neighbours`, if given, are `via`'s operands then results (the driver keeps them)."""
        if neighbours is None:
            neighbours = (*via.operands, *via.results) if via is not None else ()
        if rule is not None:
            # The shardings as they are now: the factor each axis is on (origin_factors.py).
            self._factors[id(v), len(self._pending)] = (
                rule, tuple([x.type.mapping for x in neighbours])
            )
        returned = None
        if via is not None and via.name == "return" and via.function is not None:
            # From the function's declared result: the identity edge of a returned value.
            index = next(i for i, o in enumerate(via.operands) if o is v)
            returned = (via.function.name, index)
        self._pending.append((self._record, v, old, new, via, neighbours, stage, returned,
                              len(self._pending)))

    def _record(
        self,
        v: Value,
        old: NamedMapping | None,
        new: NamedMapping,
        via: Operation | None,
        neighbours: tuple[Value, ...],
        stage: str,
        returned: tuple[str, int] | None = None,
        event: int = -1,
    ) -> None:
        known = self._by_value.setdefault(id(v), {})
        by_factor = self._factors.pop((id(v), event), None)
        self.values[id(v)] = v
        before = {str(a) for a in old.used_axes()} if old is not None else set()
        for ref in new.used_axes():
            key = str(ref)
            if key in before or key in known:
                continue
            found = self._find(key, ref.name, neighbours, v)
            if by_factor is not None and v in neighbours:
                rule, mappings = by_factor
                index = next(i for i, x in enumerate(neighbours) if x is v)
                mappings = (*mappings[:index], new, *mappings[index + 1:])
                t = factor_source(rule, mappings, index, key)
                n = neighbours[t] if t is not None else None
                origin = self._by_value.get(id(n), {}) if n is not None else {}
                match = origin.get(key) or next(
                    (o for k, o in origin.items() if k.split(":")[0] == ref.name), None)
                found = (match, n) if match is not None and n is not None else found
                if match is None:
                    self.imprecise += 1  # a name match on another factor, or none
            elif via is not None and via.name != "return":
                self.imprecise += 1
            label = found[0].source if found is not None else "propagation"
            if found is None and returned is not None:
                declared = self._results.get(returned, {})
                label = declared[key].source if key in declared else label
            known[key] = self._origin(label, via.name if via is not None else "", stage)
            if found is not None:
                self._from.setdefault(id(v), {})[key] = found[1]

    def copy(self, member: Value, source: Value, via: Operation | None, stage: str) -> None:
        """`member` took the sharding of `source` (one group or linked set)."""
        self._pending.append((self._copy, member, source, stage))

    def _copy(self, member: Value, source: Value, stage: str) -> None:
        src = self._by_value.get(id(source), {})
        self.values[id(member)] = member
        known = self._by_value.setdefault(id(member), {})
        for key, origin in src.items():
            if key not in known:
                known[key] = self._origin(origin.source, "sharding_group", stage)
                self._from.setdefault(id(member), {})[key] = source

    def record_result(self, func: Function, index: int, old, new: NamedMapping, v: Value) -> None:
        """Result `index` of `func` went from `old` to `new`, from the returned value `v`."""
        self._pending.append((self._record_result, func.name, index, new, v))

    def _record_result(self, func_name: str, index: int, new: NamedMapping, v: Value) -> None:
        known = self._results.setdefault((func_name, index), {})
        src = self._by_value.get(id(v), {})
        for ref in new.used_axes():
            key = str(ref)
            if key not in known:
                origin = src.get(key)
                known[key] = self._origin(origin.source if origin else "propagation", "return")

    def came_from(self, v: Value) -> dict[str, Value]:
        """Per axis of `v` propagation gave it, the neighbour it took the axis from."""
        self._replay()
        return self._from.get(id(v), {})

    def written(self, v: Value) -> NamedMapping | None:
        """The sharding `v` was written with before propagation (None: none was)."""
        self._replay()
        return self._written.get(id(v))

    def origin(self, v: Value, axis: str) -> Origin | None:
        """Where `v`'s `axis` (`'"tp"'`, `'"x":(1)2'`, as `str(AxisRef)`) came from."""
        known = self.by_value.get(id(v), {})
        found = known.get(axis)
        if found is None:  # a sub-axis of an axis recorded whole, or the reverse
            name = axis.split(":")[0]
            found = next((o for k, o in known.items() if k.split(":")[0] == name), None)
        return found

    def path(self, v: Value, axis: str, limit: int = 100_000) -> list[tuple[Value, Origin]]:
        """The values `axis` of `v` travelled through, `v` first and the annotated value (or the
        first value propagation gave it to) last, each with its origin: a walk back along the
        neighbours propagation took the axis from."""
        self._replay()
        out: list[tuple[Value, Origin]] = []
        seen: set[int] = set()
        cur: Value | None = v
        while cur is not None and id(cur) not in seen and len(out) < limit:
            seen.add(id(cur))
            found = self.origin(cur, axis)
            if found is None:
                break
            out.append((cur, found))
            if not found.via:
                break  # the annotation itself
            came = self._from.get(id(cur), {})
            cur = came.get(axis) or next(
                (n for k, n in came.items() if k.split(":")[0] == axis.split(":")[0]), None
            )
        return out

    def describe(self, v: Value) -> str:
        """`{"dp" = input: 0, "tp" = input: 1 via dot_general (priority 0, stage 2)}`."""
        known = self.by_value.get(id(v), {})
        m = v.mapping
        if m is None or not known:
            return ""
        parts = [f"{a} = {known[str(a)].text()}" for a in m.used_axes() if str(a) in known]
        return "{" + ", ".join(parts) + "}"

    def describe_result(self, func: Function, index: int) -> str:
        known = self.results.get((func.name, index), {})
        if not known:
            return ""
        return "{" + ", ".join(f"{k} = {o.text()}" for k, o in known.items()) + "}"
