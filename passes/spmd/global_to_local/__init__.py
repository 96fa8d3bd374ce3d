"""`sdy-convert-global-to-local`'s rewrites: shared state (state.py), the sdy collectives
(collectives.py) and the other ops it rewrites (ops.py); the pass is
`shardc.passes.spmd.convert_global_to_local`."""
