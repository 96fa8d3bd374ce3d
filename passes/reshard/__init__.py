"""Stage 3: making movement explicit, after propagation decided every sharding.

`insert-reshards` (reshards/) makes every op compute locally, inserting `reshard`s where the
shardings disagree (Shardy's `insert-explicit-reshards` beside it); `lower-collectives` and
`reshard-to-collectives` turn each reshard into collectives, picked by the planner of
`analysis/collectives/`; `canonicalize` folds what is left. The export-side passes Shardy runs
after propagation (close shardings, sink edges, export calls, drop rules, ...) live here too.
"""
