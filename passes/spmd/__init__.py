"""Stage 4: the per-device program. `spmd` (lowering/) rewrites the global program into the
one every device runs; `convert-global-to-local` (global_to_local/) is Shardy's own lowering;
`pad-for-divisibility` and `per-instruction-partitioning` prepare or partition parts of it.
"""
