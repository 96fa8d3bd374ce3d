"""What the spmd pass (passes/spmd/spmd.py) is made of: the lowering of each op family to per-device
code (see that module's docstring)."""
