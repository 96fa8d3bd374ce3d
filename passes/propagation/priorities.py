"""Op-priority stages and user-priority rounds around the driver (Shardy's propagation stack).

User priorities (outermost): every dim with priority > 0 starts closed and empty, its axes added
to the tensor's `replicated` set, so nothing else can use them; priorities are dropped from the
rest. After propagating, the p1 dims are restored (as written, minus the priority) and their axes
leave `replicated`; propagate again; then p2, and so on. A p0 decision is never undone by p1.

Op priorities (per user-priority round): the driver runs once per stage, each stage widening
the set of (op, factor) pairs that may propagate (each stage allows what the earlier ones did):

  0. pass-through ops (element-wise ops, reshape, transpose, sharding_constraint, data-flow
     edges, the host offload custom calls `MoveToHost`/`MoveToDevice`; `dynamic_slice` and
     `dynamic_update_slice` forward only) whose non-scalar operands each have a single use
     (not counting ops erased as dead so far), decided when the stage first looks at the op
     and kept for the stage (`stage_direction`);
  1. pass-through ops, any number of uses;
  2. also the pass-through factors of every other op; `broadcast_in_dim` backward only;
  3. also every factor of every op; `broadcast_in_dim` backward only;
  4. every factor of every op, both directions.

Each stage is a full aggressive (or basic) propagation to a fixed point. This is the schedule of the
Shardy in jaxlib 0.10.2, found by running it in-process (tests/propagation/test_shardy_live.py): the
older three-stage schedule in Shardy's public history gives different answers, e.g. a constraint
must win over a transpose whose operand has several uses
(tests/filecheck/propagation/propagate.mlir, `@constraint_before_multi_use_transpose`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.ir.ops import ELEMENTWISE, get_op_def
from shardc.ir.types import DistributedTensorType
from shardc.passes.propagation.data_flow import live_uses
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.driver import Driver
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.state import PropagationState

NONE = PropagationDirection.NONE
BOTH = PropagationDirection.BOTH
FORWARD = PropagationDirection.FORWARD
BACKWARD = PropagationDirection.BACKWARD

StageFn = Callable[[Operation | None, OpShardingRule], tuple[PropagationDirection, ...]]

PASS_THROUGH_OPS = ("reshape", "transpose", "sharding_constraint", "data_flow_edge")
# ops that pass shardings through forward only (Shardy: dynamic slice and update)
FORWARD_PASS_THROUGH_OPS = ("dynamic_slice", "dynamic_update_slice")
OFFLOAD_TARGETS = ("MoveToHost", "MoveToDevice")  # host offload custom calls pass through
NUM_STAGES = 5


def _pass_through(op: Operation | None) -> PropagationDirection:
    """How a pass-through op passes shardings in the first two stages (NONE: not one)."""
    if op is None:  # a data-flow edge (call argument/result)
        return BOTH
    op_def = get_op_def(op.name)
    if op_def is not None and op_def.has(ELEMENTWISE):
        return BOTH
    if op.name in PASS_THROUGH_OPS:
        return BOTH
    if op.name == "custom_call" and op.attributes.get("call_target_name") in OFFLOAD_TARGETS:
        return BOTH
    return FORWARD if op.name in FORWARD_PASS_THROUGH_OPS else NONE


def _single_use_operands(op: Operation | None, dead: set[int]) -> bool:
    """Every operand has one use (scalars, which cannot be sharded, do not count)."""
    return op is None or all(
        live_uses(v, dead) == 1 or not v.type.shape for v in op.operands
    )


def stage_direction(stage: int, dead: set[int] = frozenset()) -> StageFn:  # type: ignore[assignment]
    """The directions op-priority stage `stage` allows (see the module docstring). Uses by
    `dead` ops (erased by Shardy so far: the live set) do not count.

    Whether an op's operands each have a single use is decided the first time the stage asks
    (the first visit that finds something sharded) and kept for the rest of the stage: a dead
    user erased later in the stage does not make the op a stage-0 op until the next stage.
    That is what jaxlib's Shardy does (measured: tests/data/shardy_regressions/; neither
    counting the live uses at every visit nor the uses as the stage started agrees)."""

    # An op's rule never changes during a stage, so the driver asks for an op's directions once
    # per stage (at the first visit that finds something sharded, which is what the single-use
    # test needs) and keeps them (`Driver._directions`); data-flow edges (op None) are
    # pass-through, so theirs depend on the rule alone.

    # From the second stage on an op's directions are a function of its name and rule (but a
    # custom_call's, which depend on its target): asked once per (name, rule) and stage. The
    # rule is kept with them, so that its id stands for it while the entry lives.
    known: dict[tuple[str, int], tuple[OpShardingRule, tuple[PropagationDirection, ...]]] = {}

    def direction(op: Operation | None, rule: OpShardingRule) -> tuple[PropagationDirection, ...]:
        if op is None:
            return _uniform(BOTH, rule.num_factors)
        if stage == 0 or op.name == "custom_call":
            return _decide(op, rule)
        key = (op.name, id(rule))
        got = known.get(key)
        if got is None or got[0] is not rule:
            got = known[key] = (rule, _decide(op, rule))
        return got[1]

    def _decide(op: Operation, rule: OpShardingRule) -> tuple[PropagationDirection, ...]:
        n = rule.num_factors
        through = _pass_through(op)
        if through is not NONE and not (stage >= 1 or _single_use_operands(op, dead)):
            through = NONE
        if through is BOTH or stage <= 1:
            return _uniform(through, n)
        along = BACKWARD if op.name == "broadcast_in_dim" else BOTH
        if stage == 2:
            mixed = tuple(along if rule.is_pass_through(f) else through for f in range(n))
            return _MIXED.setdefault(mixed, mixed)
        if stage == 3:
            return _uniform(along, n)
        return _uniform(BOTH, n)

    return direction


_UNIFORM: dict[tuple[PropagationDirection, int], tuple[PropagationDirection, ...]] = {}
# One shared tuple per distinct direction tuple, so that the driver can compare them by identity.
_MIXED: dict[tuple[PropagationDirection, ...], tuple[PropagationDirection, ...]] = {}


def _uniform(d: PropagationDirection, n: int) -> tuple[PropagationDirection, ...]:
    """`(d,) * n`, one shared tuple per (d, n)."""
    out = _UNIFORM.get((d, n))
    if out is None:
        out = _UNIFORM[(d, n)] = (d,) * n
    return out


def _any(op: Operation | None, rule: OpShardingRule) -> tuple[PropagationDirection, ...]:
    return _uniform(BOTH, rule.num_factors)


def run_op_priority(state: PropagationState, op_priority: bool, label: str) -> None:
    if not op_priority:
        Driver(state, _any, label, pure_directions=True).run()
        return
    for stage in range(NUM_STAGES):
        # (only the first stage's directions depend on the ops erased when it asks)
        Driver(state, stage_direction(stage, state.erased), f"{label}op stage {stage}",
               pure_directions=stage >= 1).run()


# ----- user priorities -----------------------------------------------------------------------


@dataclass
class _Ref:
    """A value or function result whose user sharding has dims of priority > 0."""

    original: NamedMapping
    value: Value | None = None
    func: Function | None = None
    index: int = 0

    def get(self) -> NamedMapping | None:
        if self.value is not None:
            return self.value.mapping
        t = self.func.result_types[self.index]  # type: ignore[union-attr]
        return t.mapping if isinstance(t, DistributedTensorType) else None

    def set(self, m: NamedMapping) -> None:
        if self.value is not None:
            self.value.set_mapping(m)
        else:
            t = self.func.result_types[self.index]  # type: ignore[union-attr]
            self.func.result_types[self.index] = DistributedTensorType(t.shape, t.dtype, m)  # type: ignore[union-attr]


def _initial(m: NamedMapping) -> NamedMapping:
    dims, replicated = [], list(m.replicated)
    for d in m.dims:
        if (d.priority or 0) == 0:
            dims.append(DimSharding(d.axes, d.is_closed))
        else:
            replicated.extend(d.axes)
            dims.append(DimSharding((), True))
    return NamedMapping(
        m.mesh, tuple(dims), tuple(replicated), m.unreduced, m.unreduced_op, m.memory_kind
    )


def _restore(current: NamedMapping, original: NamedMapping, priority: int) -> NamedMapping:
    dims = list(current.dims)
    released: list[AxisRef] = []
    withheld: list[AxisRef] = []
    for i, d in enumerate(original.dims):
        if (d.priority or 0) == priority:
            dims[i] = DimSharding(d.axes, d.is_closed)
            released.extend(d.axes)
        elif (d.priority or 0) > priority:
            withheld.extend(d.axes)
    # `replicated` is canonical: withheld sub-axes may have merged ("z":(2)2 and "z":(1)2 of
    # one dim or two became "z"), so drop whatever overlaps a released axis and re-add what stays
    # withheld.
    mesh = current.mesh
    kept = [a for a in current.replicated if not any(a.overlaps(r, mesh) for r in released)]
    for w in [*withheld, *original.replicated]:
        if not any(w.overlaps(k, mesh) for k in kept):
            kept.append(w)
    replicated = tuple(kept)
    return NamedMapping(
        current.mesh,
        tuple(dims),
        replicated,
        current.unreduced,
        current.unreduced_op,
        current.memory_kind,
    )


@dataclass
class UserPriorities:
    levels: dict[int, list[_Ref]] = field(default_factory=dict)


def initialize_user_priorities(module: Module) -> UserPriorities:
    """Withhold every dim of priority > 0; return what to restore, by priority."""
    out = UserPriorities()

    def visit(ref: _Ref) -> None:
        m = ref.original
        prios = {d.priority for d in m.dims if d.priority}
        for p in prios:
            out.levels.setdefault(p, []).append(ref)
        if any(d.priority is not None for d in m.dims):
            ref.set(_initial(m))

    # Only a mapping with a dim of some priority needs a reference (one interned mapping stands
    # for many values: each is asked once).
    prioritised: dict[int, tuple[NamedMapping, bool]] = {}

    def has_priority(m: NamedMapping) -> bool:
        known = prioritised.get(id(m))
        if known is None or known[0] is not m:
            known = prioritised[id(m)] = (m, any(d.priority is not None for d in m.dims))
        return known[1]

    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None and has_priority(a.mapping):
                visit(_Ref(a.mapping, value=a))
        for op in func.body:
            for r in op.results:
                m = r.type.mapping
                if m is not None and has_priority(m):
                    visit(_Ref(m, value=r))
        for i, t in enumerate(func.result_types):
            m = t.mapping if isinstance(t, DistributedTensorType) else None
            if m is not None and has_priority(m):
                visit(_Ref(m, func=func, index=i))
    return out


def run_user_priorities(state: PropagationState, *, op_priority: bool = True) -> list[int]:
    """The whole propagation: p0 round, then each user priority in increasing order."""
    priorities = initialize_user_priorities(state.module)
    run_op_priority(state, op_priority, "priority 0, ")
    rounds = [0]
    for p in sorted(priorities.levels):
        state.forget_visits()  # the driver's record of what it visited is stale now
        for ref in priorities.levels[p]:
            current = ref.get()
            if current is not None:
                ref.set(_restore(current, ref.original, p))
        run_op_priority(state, op_priority, f"priority {p}, ")
        rounds.append(p)
    return rounds
