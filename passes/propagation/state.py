"""What one propagation run shares between its stages: the module's groups, callers, region and
manual edges, the ops erased as dead, each op's `Site` (its `OpInfo` and the worklist's record
of it, kept on the op while the run lasts) and the memo of factor propagation.

`rule_for(op)` is the rule propagation uses (a `sdy.sharding_rule` attribute on the op wins over
the registry); `identity_rule(shape)` is the rule of every data-flow edge.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import ELEMENTWISE, attr, get_op_def
from shardc.ir.ops.data_flow import EDGE
from shardc.ir.ops.manual import normalize as normalize_manual
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.data_flow import Regions, build_regions
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.manual_edges import ManualEdges
from shardc.passes.propagation.origins import OriginTracker
from shardc.passes.propagation.rules.registry import rule_for as registered_rule
from shardc.passes.propagation.rules.registry import rule_key
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.passes.propagation.strategy import PropagationStrategy
from shardc.passes.propagation.walk_order import walk_order

if TYPE_CHECKING:  # (what a run is watched or recorded with only when asked: not imported else)
    from shardc.passes.propagation.audit import ChoiceAudit
    from shardc.passes.propagation.shardy_debug import ShardyDebugInfo


def rule_for(op: Operation) -> OpShardingRule | None:
    """The op's rule: a `sdy.sharding_rule` attribute written on it wins over the registry."""
    given = op.attributes.get("sdy.sharding_rule")
    if given is not None:
        text = given.text if hasattr(given, "text") else str(given)
        try:
            return parse_rule(text)
        except ShardcError as e:
            raise e.with_location(op.loc) from None
    return registered_rule(op)


@functools.lru_cache(maxsize=1 << 10)
def identity_rule(shape: tuple[int, ...], num_operands: int = 1) -> OpShardingRule:
    """`([i, j])->([i, j])`: each dim its own pass-through factor."""
    dims = tuple((d,) for d in range(len(shape)))
    return OpShardingRule(tuple(shape), tuple(dims for _ in range(num_operands)), (dims,))


def mapping_of(v: Value) -> NamedMapping | None:
    t = v.type
    return t.mapping if isinstance(t, DistributedTensorType) else None


class OpInfo:
    """What propagation reads from an op that does not change while it runs: its rule, whether
    it is element-wise, and its tensor sizes (operands then results; the aggressive strategy
    ranks them). Interned per run (`PropagationState.info`): equal infos are one object, so an
    info hashes by identity, cheaply, inside the memo key of `Driver._propagate`."""

    __slots__ = ("rule", "elementwise", "tensor_sizes")

    def __init__(
        self, rule: OpShardingRule | None, elementwise: bool, tensor_sizes: tuple[int, ...]
    ):
        self.rule = rule
        self.elementwise = elementwise
        self.tensor_sizes = tensor_sizes


# What one propagation through an op decided: the new mapping of each operand and each result,
# None where it does not change.
Outcome = tuple[tuple[NamedMapping | None, ...], tuple[NamedMapping | None, ...]]

# How the driver visits an op (`Site.kind`).
RULE = "rule"  # factor propagation through its rule
NO_RULE = "no rule"  # nothing flows through it (recorded for a warning)
# Never propagated through as an op: terminators, group markers, data-flow and edge ops (their
# edges are items of their own) and calls (Shardy's propagation does not look into callees;
# its pipeline turns each call site into a named computation first).
SKIP = "skip"
# `Site.clean` of an op nothing flows through (the driver skips it until a value of it changes).
NOTHING_SHARDED = "nothing sharded"
_SKIPPED = frozenset({"return", "sharding_group", "manual_computation", "call", EDGE})


@functools.cache
def _nones(n: int) -> tuple[None, ...]:
    return (None,) * n  # one shared tuple per length


class Site:
    """The driver's record of one op during a run, kept on the op (`op.scratch`, see
    `PropagationState.site_of`): looking it up costs an attribute read, where tables keyed by
    `id(op)` cost hash lookups in tables as large as the program, whose cache misses made the
    time per op grow with the program's size.

    What the driver reads at every visit is filled in at the first visit (`describe`;
    propagation does not change the IR's structure): how to visit the op (`kind`), its
    `OpInfo`, its operands and results, the all-unsharded mappings (to tell that nothing is
    sharded yet) and, for a `propagation_barrier`, its directions. The rest is the worklist's
    state: whether the op is on the worklist (`queued`), the driver and the directions of its
    last visit if that visit changed nothing (`clean`, `clean_directions`: see
    `Driver._visit`), a user of it last seen alive (`witness`,
    -1 for an op never erased as dead), and the directions the running stage gave it
    (`directions`, asked of the stage's driver `asked_by` once per stage)."""

    __slots__ = ("op", "kind", "info", "operands", "results", "unsharded_operands",
                 "unsharded_results", "barrier", "data_flow", "queued", "clean",
                 "clean_directions", "witness", "asked_by", "directions", "order", "values")

    def __init__(self, op: Operation, data_flow: bool):
        self.op = op
        self.kind: str | None = None  # not described yet
        self.info: OpInfo | None = None
        self.operands: tuple[Value, ...] = ()
        self.results: tuple[Value, ...] = ()
        self.values: tuple[Value, ...] = ()  # operands then results
        self.unsharded_operands: tuple[None, ...] = ()
        self.unsharded_results: tuple[None, ...] = ()
        self.barrier: tuple[PropagationDirection, ...] | None = None
        # A data-flow op or an edge op: its edges are the worklist's items, not the op.
        self.data_flow = data_flow
        self.queued = False
        self.clean: object = None
        self.clean_directions: tuple[PropagationDirection, ...] | None = None
        self.witness: int | None = None
        self.asked_by: object = None
        self.directions: tuple[PropagationDirection, ...] | None = None
        self.order = -1  # its place in the run's walk (`PropagationState.walk`); -1: not in it

    def describe(self, kind: str, info: OpInfo | None, barrier=None) -> str:
        op = self.op
        self.kind = kind
        self.info = info
        self.operands = op.operands
        self.results = tuple(op.results)
        self.values = self.operands + self.results
        self.unsharded_operands = _nones(len(self.operands))
        self.unsharded_results = _nones(len(self.results))
        self.barrier = barrier
        return kind


@dataclass
class PropagationState:
    """Everything the driver needs that does not change between stages."""

    module: Module
    strategy: PropagationStrategy
    conservative: bool = False
    groups: dict[int, list[Value]] = field(default_factory=dict)
    group_of: dict[int, int] = field(default_factory=dict)  # id(value) -> group id
    # Functions whose declared results propagation keeps in sync with their returned values.
    entries: frozenset[str] = frozenset()
    manual: ManualEdges | None = None
    origins: OriginTracker | None = None
    # Watches the run for choices (audit.py); None: not watched.
    audit: ChoiceAudit | None = None
    # Shardy's debugging options' recorder (shardy_debug.py): None unless a pass asked for it.
    debug: ShardyDebugInfo | None = None
    no_rule: dict[str, Operation] = field(default_factory=dict)
    # (group id, one of its sharding_group ops) of groups whose members had two shardings.
    group_conflicts: list[tuple[int, Operation]] = field(default_factory=list)
    regions: Regions = field(default_factory=Regions)
    visits: int = 0
    # Ops erased as dead so far. MLIR's rewrite driver (which runs Shardy's propagation)
    # erases an op with no uses when it pops it from the worklist, so a dead op is gone for the
    # ops after it, and its operands' uses drop; shardc keeps the op in the IR but replays that.
    erased: set[int] = field(default_factory=set)
    interned_infos: dict[tuple, OpInfo] = field(default_factory=dict)
    # The info of ops by their rule's key (`rule_key`): name, shapes and the attributes the
    # rule reads, of which the whole info is a function. A model's layers repeat the same ops.
    infos_by_key: dict[tuple, OpInfo] = field(default_factory=dict)
    # Memo of factor propagation: (OpInfo, directions, operand mappings, result mappings) ->
    # Outcome. Propagation through an op is a pure function of these, and a model's layers
    # repeat the same ops with the same shardings, so most visits are a lookup.
    outcomes: dict[tuple, Outcome | None] = field(default_factory=dict)
    # The same for the identity edge of an entry function's result (edges.py's
    # `sync_func_results`): (shape, returned value's mapping, declared mapping) -> outcome.
    result_outcomes: dict[tuple, tuple] = field(default_factory=dict)
    # Every op's Site (`site_of`), in the order they were made; `release` takes them off the
    # ops. Whoever changes shardings behind the driver's back must `forget_visits`.
    sites: list[Site] = field(default_factory=list)
    _walk: list | None = None
    _walk_erased: int = 0
    # The first walk, indexed by each item's `order`, and its edges (never erased), in order;
    # `ordered` is False if an item appeared twice in it (the driver then sweeps it whole).
    by_order: list = field(default_factory=list)
    walk_edges: list = field(default_factory=list)
    ordered: bool = True

    def walk(self) -> list:
        """`walk_order` of the module without the erased ops, each op as its `Site`.
        Propagation does not change the module's structure and erased ops only leave the walk,
        so the first walk is filtered."""
        if self._walk is None:
            walk = walk_order(self.module, self.erased, self.regions, self.manual)
            self._walk = [self.site_of(x) if x.__class__ is Operation else x for x in walk]
            self._walk_erased = len(self.erased)
            for i, x in enumerate(self._walk):
                if x.order != -1:
                    self.ordered = False
                x.order = i
            self.by_order = list(self._walk)
            self.walk_edges = [x for x in self._walk if x.__class__ is not Site]
        elif self._walk_erased != len(self.erased):
            erased = self.erased
            self._walk = [x for x in self._walk
                          if x.__class__ is not Site or id(x.op) not in erased]
            self._walk_erased = len(erased)
        return self._walk

    def site_of(self, op: Operation) -> Site:
        site = op.scratch
        if site is None:
            site = op.scratch = Site(op, id(op) in self.regions.edges or op.name == EDGE)
            self.sites.append(site)
        return site  # type: ignore[return-value]

    def forget_visits(self) -> None:
        """Forget what the driver recorded of its visits (shardings changed behind its back)."""
        for site in self.sites:
            site.clean = None

    def release(self) -> None:
        """Take the sites off the ops: the run is over (ops outlive the state)."""
        for site in self.sites:
            site.op.scratch = None
        self.sites.clear()
        # The walk's sites point at the drivers (`clean`, `asked_by`), which point back here:
        # without this the run's sites would be a cycle only the collector frees.
        self._walk = None
        self.by_order = []
        self.walk_edges = []

    def describe(self, site: Site) -> str:
        """Fill in `site` at the op's first visit; its kind."""
        op = site.op
        name = op.name
        if name in _SKIPPED or id(op) in self.regions.edges:
            return site.describe(SKIP, None)
        info = self.info(op)
        rule = info.rule
        if rule is None:
            return site.describe(NO_RULE, info)
        if name == "propagation_barrier":
            allowed = PropagationDirection[attr(op, "allowed_direction").word]
            return site.describe(RULE, info, (allowed,) * rule.num_factors)
        return site.describe(RULE, info)

    def info(self, op: Operation) -> OpInfo:
        key = rule_key(op)
        if key is None:
            return self._info(op)
        info = self.infos_by_key.get(key)
        if info is None:
            info = self.infos_by_key[key] = self._info(op)
        return info

    def _info(self, op: Operation) -> OpInfo:
        op_def = get_op_def(op.name)
        sizes = tuple(v.type.num_elements for v in op.operands) + tuple(
            v.type.num_elements for v in op.results
        )
        elementwise = op_def is not None and op_def.has(ELEMENTWISE)
        return self.interned_info(rule_for(op), elementwise, sizes)

    def interned_info(
        self, rule: OpShardingRule | None, elementwise: bool, tensor_sizes: tuple[int, ...]
    ) -> OpInfo:
        # Rules are shared objects (the registry builds each distinct one once), so the rule's
        # identity stands for it here: hashing a rule walks all its factors. The info keeps
        # the rule alive, so its id is not reused while the entry exists.
        key = (id(rule), elementwise, tensor_sizes)
        info = self.interned_infos.get(key)
        if info is None:
            info = self.interned_infos[key] = OpInfo(rule, elementwise, tensor_sizes)
        return info


def build_state(
    module: Module,
    strategy: PropagationStrategy,
    *,
    conservative: bool = False,
    origins: OriginTracker | None = None,
    debug: ShardyDebugInfo | None = None,
) -> PropagationState:
    state = PropagationState(module, strategy, conservative, origins=origins, debug=debug)
    normalize_manual(module)
    state.manual = ManualEdges(module)
    _collect_groups(state, module)
    state.regions = build_regions(module)
    state.entries = entry_functions(module, state.regions.functions | set(state.manual.bodies))
    _unify_groups(state)
    return state


def entry_functions(module: Module, bodies: set[str]) -> frozenset[str]:
    """The functions whose results propagation updates: Shardy's main function (`@main`, or
    the only function). jaxlib's Shardy fails on a module with several functions and no
    `@main`; shardc then takes every public function (docs/propagation.md)."""
    if "main" in module.functions:
        return frozenset({"main"})
    funcs = [f for f in module.functions.values() if f.name not in bodies]
    if len(funcs) == 1:
        return frozenset({funcs[0].name})
    return frozenset(f.name for f in funcs if not f.is_private)


def _collect_groups(state: PropagationState, module: Module) -> None:
    """Members of each sharding group; groups that share a value are one group (as after
    Shardy's `sdy-sharding-group-import`), known by the id first met."""
    leader: dict[int, int] = {}

    def find(g: int) -> int:
        while leader.setdefault(g, g) != g:
            g = leader[g]
        return g

    values: list[Value] = []
    for op in module.walk():
        if op.name == "sharding_group":
            gid, v = find(attr(op, "group_id")), op.operand(0)
            old = state.group_of.get(id(v))
            if old is None:
                values.append(v)
                state.group_of[id(v)] = gid
            elif find(old) != gid:
                leader[gid] = find(old)
    for v in values:
        gid = state.group_of[id(v)] = find(state.group_of[id(v)])
        state.groups.setdefault(gid, []).append(v)


def _unify_groups(state: PropagationState) -> None:
    """Shardy's `syncGroupMemberShardings`: members start with the one sharding any of them has
    (fully open, fully replicated ones do not count). Members with two different shardings are
    a conflict: as Shardy does, each member is followed by a fully open `sharding_constraint`
    that takes its place in the group and in its uses, and a warning says so
    (`state.group_conflicts`)."""
    for gid, members in state.groups.items():
        common, conflict = None, False
        for m in members:
            s = m.mapping
            if s is None or (len(members) > 1 and _open_and_replicated(s)):
                continue
            if common is None:
                common = s
            elif s != common:
                conflict = True
                break
        if common is None:
            continue
        if not conflict:
            for m in members:
                for linked in state.regions.linked(m):  # a loop result is also its body's
                    linked.set_mapping(common)
            continue
        op = next(u.op for u in members[0].uses if u.op.name == "sharding_group")
        state.group_conflicts.append((gid, op))
        for i, m in enumerate(members):
            new = _open_constraint_after(m, common)
            del state.group_of[id(m)]
            state.group_of[id(new)] = gid
            members[i] = new


def _open_and_replicated(m: NamedMapping) -> bool:
    return (not m.replicated and not m.unreduced
            and all(not d.axes and not d.is_closed for d in m.dims))


def _open_constraint_after(v: Value, like: NamedMapping) -> Value:
    """A fully open `sharding_constraint` of `v` right after its definition, in place of `v` in
    every use (its `sharding_group` ops included)."""
    t = v.type
    open_type = DistributedTensorType(t.shape, t.dtype, NamedMapping.fully_open(like.mesh, t.rank))
    d = v.defining_op
    op = (Operation.at(d, "sharding_constraint", [v], [open_type]) if d is not None
          else Operation("sharding_constraint", [v], [open_type]))
    block = d.parent if d is not None else v.owner.body
    block.insert_after_definition(v, op)
    new = op.results[0]
    v.replace_uses_if(new, lambda use: use.op is not op)
    return new
