"""Stage 1: bringing a program in, before any sharding is decided (Shardy's import passes).

In the order the pipelines run them: data-flow edges sunk to their owners, meshes lifted or
inlined, size-1 axes removed, constant sub-computations split per user, calls flattened and
imported as named computations, sharding groups merged, gather/scatter batching made explicit,
manual axes cleaned up. `call_graph.py` and `sharding_walk.py` are the helpers later stages
reuse.
"""
