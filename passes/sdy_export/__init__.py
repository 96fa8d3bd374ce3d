"""What the Shardy-export passes share: the walk over every sharding of a module (`walk.py`)
and the call graph (`call_graph.py`)."""
