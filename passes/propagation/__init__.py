"""Stage 2: deciding every value's sharding.

`rules/` gives every op its factor rule. Propagation's parts are the files here: projection
onto factors (projection.py), one op's factor propagation (factor_propagation.py) under a
strategy (strategy.py, strategies.py, conflicts.py, direction.py), the worklist driver and its
state (driver.py, state.py, edges.py, walk_order.py, liveness.py, data_flow.py,
manual_edges.py), the priority loops (priorities.py) and the origins (origins.py). The passes:
`propagate` and `propagation-pipeline` (propagate.py), Shardy's four propagation passes
(sdy_propagate.py) and its pipeline (sdy_propagation_pipeline.py), `apply-sharding-constraints`,
`populate-sharding-rules`, `auto-shard` (auto_shard.py, its solver in autoshard/), and
`gather-weights` (gather_weights.py: FSDP's plan, weights gathered where they are defined).
"""

from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.factor_propagation import propagate_factors, propagate_shardings
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
)
from shardc.passes.propagation.strategies import AGGRESSIVE, BASIC, strategy_named
from shardc.passes.propagation.strategy import PropagationStrategy, TensorUpdates

__all__ = [
    "AGGRESSIVE",
    "BASIC",
    "FactorSharding",
    "PropagationDirection",
    "PropagationStrategy",
    "ShardingProjection",
    "TensorFactorShardings",
    "TensorUpdates",
    "propagate_factors",
    "propagate_shardings",
    "strategy_named",
]
