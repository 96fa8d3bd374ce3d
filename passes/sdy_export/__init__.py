"""What the Shardy-export passes share: the walk over every sharding of a module (`walk.py`).
The call graph they read is passes/call_graph.py."""
