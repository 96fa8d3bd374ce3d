"""Auto-sharding: choose shardings with an integer program (the `auto-shard` pass).

One module per part: `candidates` (per-op strategies from factor rules), `graph` (nodes, uses,
liveness), `repeats` and `simplify` (fewer choices: repeated layers, follow ops), `costs` (the
planner's reshard costs, buffer sizes), `formulation` (the integer program), `solve` (scipy's
`milp`), `apply` (writing the choice back as shardings). docs/autoshard.md explains it.
"""
