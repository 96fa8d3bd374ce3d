"""Executors: the reference interpreter (the global program) and the SPMD executors (the
per-device program on every device of its mesh).

- `reference.py`: the reference interpreter, numpy, global arrays (`run_reference`); `manual.py`
  runs a `manual_computation` in it;
- `kernels/`: the numpy kernels by op family, `kernels/table.py` the op name -> kernel table;
- `numpy_exec.py`: the numpy SPMD executor (`run_spmd`); how it batches devices in
  `device_layout.py`, its local ops in `batched_kernels.py`, its collectives in
  `batched_collectives.py`;
- `jax_exec.py`: the SPMD program as one jitted `jax.shard_map` (numpy arrays in and out;
  `jax_arrays.py`: over global `jax.Array`s); `jax_global.py`: the global program as a JAX
  function; they translate ops with `jax_ops/`, collectives with `jax_collectives.py`, and
  import JAX through `jax_runtime.py`;
- shared: `signature.py` (inputs and their checks), `control.py` (`while`, `case`),
  `scalar_bodies.py` (reduce bodies and sort comparators), `reduce_kinds.py`, `dtypes.py`.
"""
