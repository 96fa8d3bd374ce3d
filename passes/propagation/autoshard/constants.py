"""The layout each constant value (`graph.Constant`) takes under each choice of one node.

    layouts = ConstantLayouts(mesh)
    node, key, per_strategy = layouts(c)  # c's layout when `node` takes its strategy a, or None

A constant expression (`iota` and what is computed from it alone) or a broadcast scalar is not
a node: propagation gives it its layout after auto-shard, from its reader backwards. Split
constants have one reader each, so the layout of a constant value follows from the strategy of
the node its chain of readers ends at: the node's operand layout, carried back through each
op of the chain by its sharding rule (an axis on a result dim goes to the operand dims of the
same pass-through factor). That is what propagation writes on them, so the memory rows count
them as the compiled program holds them (the chain of JAX's random bits: several replicated
`ui64` counters live at once). A value several ops read, one the return reads, and the operands
of an op without a rule are replicated: nothing shards them.
"""

from __future__ import annotations

from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.passes.propagation.autoshard.graph import Constant, Node
from shardc.passes.propagation.factor_axes import mapping_from_factors
from shardc.passes.propagation.layouts import replicated
from shardc.passes.propagation.projection import project_tensor
from shardc.passes.propagation.rules.registry import rule_for
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

# (the node whose choice lays it out, a key equal for equal layouts, its layout per strategy)
Layouts = tuple[Node, tuple, tuple[NamedMapping, ...]] | None


class ConstantLayouts:
    """Each constant's layouts, memoised by what decides them: the reader's strategies (tied
    layers share theirs) and the rules along the chain, so a deep model derives each chain's
    layouts once, not once per layer."""

    def __init__(self, mesh: DeviceMesh) -> None:
        self.mesh = mesh
        self._of: dict[int, Layouts] = {}
        self._by_key: dict[tuple, tuple[NamedMapping, ...]] = {}
        self._back: dict[tuple, NamedMapping] = {}
        # keys are flat: a chain's key names its reader's by number (a nested tuple would be
        # hashed whole at every step of a long chain), and its rules by identity (kept alive)
        self._numbers: dict[tuple, int] = {}
        self._rules: dict[int, OpShardingRule | None] = {}

    def __call__(self, c: Constant) -> Layouts:
        found = self._of.get(id(c), False)
        if found is not False:
            return found  # type: ignore[return-value]
        reader = c.reader
        out: Layouts = None
        if isinstance(reader, Node):
            key: tuple = self._number(("node", id(reader.strategies), c.operand))
            layouts = self._by_key.get(key)
            if layouts is None:
                layouts = tuple(s.operands[c.operand] for s in reader.strategies)
                self._by_key[key] = layouts
            out = (reader, key, layouts)
        elif isinstance(reader, Constant):
            after = self(reader)
            if after is not None:
                node, parent, results = after
                rule = rule_for(reader.op)
                self._rules.setdefault(id(rule), rule)
                where = (reader.result, c.operand, c.value.type.rank)
                key = self._number((parent, id(rule), *where))
                layouts = self._by_key.get(key)
                if layouts is None:
                    layouts = tuple(self._operand(rule, where, m) for m in results)
                    self._by_key[key] = layouts
                out = (node, key, layouts)
        self._of[id(c)] = out
        return out

    def _number(self, key: tuple) -> tuple:
        return (self._numbers.setdefault(key, len(self._numbers)),)

    def _operand(self, rule: OpShardingRule | None, where: tuple[int, int, int],
                 result: NamedMapping) -> NamedMapping:
        """The layout of operand `i` (of rank `rank`) of an op with `rule` when its result `k`
        is laid out `result`; `where` is (k, i, rank)."""
        key = (id(rule), where, result)
        found = self._back.get(key)
        if found is None:
            found = self._back[key] = self._project(rule, where, result)
        return found

    def _project(self, rule: OpShardingRule | None, where: tuple[int, int, int],
                 result: NamedMapping) -> NamedMapping:
        k, i, rank = where
        if rule is None or not any(d.axes for d in result.dims):
            return replicated(self.mesh, rank)
        factors = project_tensor(result, rule.results[k], rule.factor_sizes, self.mesh)
        axes = tuple(
            factors.factors[f].axes
            if f in factors.factors and rule.kind(f) is FactorKind.PASS_THROUGH
            else ()
            for f in range(rule.num_factors)
        )
        return mapping_from_factors(rule.operands[i], axes, rule, self.mesh)
