"""shardc's passes, grouped by the stage a program is in when they run.

    analysis/     what reads a program or a layout and changes nothing: the collective model
                  (what each collective does to a layout, its cost, the cheapest plan between
                  two layouts), the cost report, the unreduced-axes check. Every stage consults
                  it, so it sits below them all (as MLIR's Analysis sits below its Transforms).
    ingest/       1. bringing a program in: meshes, size-1 axes, constants, calls, data-flow
                  edges, sharding groups, gather/scatter batching.
    propagation/  2. deciding shardings: the op rules (rules/), propagation (its parts are the
                  files), auto-shard (autoshard/), sharding constraints.
    reshard/      3. making movement explicit: insert-reshards and Shardy's explicit reshards
                  (reshards/), lower-collectives and reshard-to-collectives, canonicalize, and
                  the export-side passes Shardy runs after propagation.
    spmd/         4. per-device lowering: spmd (lowering/), convert-global-to-local
                  (global_to_local/), pad-for-divisibility, per-instruction partitioning.

`manager.py` holds the registry and the pass manager. A stage imports only earlier stages (and
`analysis/`); where a pass runs a later stage's passes it names them (`run_passes`), as a
pipeline does. docs/architecture.md draws the whole data flow.
"""

# The stage folders, in the order they import one another (tests/test_house.py checks it).
STAGES = ("analysis", "ingest", "propagation", "reshard", "spmd")
