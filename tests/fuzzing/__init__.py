"""The fuzzer (issue 13): mutation of the repository's programs through every command
(mutate.py), generation of valid random programs (generate.py), and the oracle that judges a
run (oracle.py). tests/test_fuzz.py runs a few thousand inputs in CI; benchmarks/fuzz.py runs
as many as asked, in parallel, and reports crashes, hangs, wrong results and memory peaks."""
