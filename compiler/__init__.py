"""shardc's user-facing layer: the CLI, the pipeline, StableHLO interop and the executors.

`shardc.from_jax(f, *args, mesh=..., in_shardings=...)` lowers a JAX function and imports it;
`shardc.to_jax_shardings` / `shardc.mesh_to_jax` go the other way (docs/jax.md).
"""

from shardc.jax_api import from_jax, mesh_to_jax, to_jax_shardings

__all__ = ["from_jax", "mesh_to_jax", "to_jax_shardings"]
