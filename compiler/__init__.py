"""shardc: a sharding compiler for named device meshes.

    import shardc
    f = shardc.jit(mlp, mesh=mesh, in_shardings=(P("dp"), P(None, "tp"), P("tp")))
    module = shardc.parse(text); result = shardc.compile(module); shardc.run(result, inputs)

Every public name is importable from here; each is loaded on first use, so `import shardc`
costs almost nothing and never imports JAX (the `[jax]` extra is optional; the functions
that need it say how to install it).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # the JAX-facing API
    "jit": "shardc.jitted", "Jitted": "shardc.jitted", "ShardcWarning": "shardc.jitted",
    "Lowered": "shardc.stages", "Compiled": "shardc.stages",
    "from_jax": "shardc.jax_api", "to_jax_shardings": "shardc.jax_api",
    "mesh_to_jax": "shardc.jax_api",
    # programs: text, passes, compile, run
    "parse": "shardc.api", "opt": "shardc.api", "run": "shardc.api",
    "compile": "shardc.pipeline", "CompileOptions": "shardc.pipeline",
    "CompileResult": "shardc.pipeline",
    "run_reference": "shardc.executors.reference",
    "collective_report": "shardc.passes.analysis.cost",
    "import_stablehlo": "shardc.stablehlo", "export_stablehlo": "shardc.stablehlo",
    "PassManager": "shardc.passes.manager", "PassContext": "shardc.passes.manager",
    "Pass": "shardc.passes.manager", "parse_pipeline": "shardc.passes.manager",
    "register_pass": "shardc.passes.manager",
    # the IR vocabulary
    "DeviceMesh": "shardc.ir.mesh", "AxisRef": "shardc.ir.mesh",
    "DimSharding": "shardc.ir.mapping", "NamedMapping": "shardc.ir.mapping",
    "PlacementMapping": "shardc.ir.mapping",
    "Placement": "shardc.ir.placements", "Replicated": "shardc.ir.placements",
    "Sharded": "shardc.ir.placements", "Partial": "shardc.ir.placements",
    "ReduceOp": "shardc.ir.placements",
    "TensorType": "shardc.ir.types", "DistributedTensorType": "shardc.ir.types",
    "Module": "shardc.ir.core", "Function": "shardc.ir.core", "Block": "shardc.ir.core",
    "Operation": "shardc.ir.core", "Value": "shardc.ir.core",
    "Builder": "shardc.ir.builder",
    "parse_module": "shardc.ir.parser", "print_module": "shardc.ir.printer",
    "verify_module": "shardc.ir.verifier",
    # errors
    "Location": "shardc.ir.diagnostics", "ShardcError": "shardc.ir.diagnostics",
    "ParseError": "shardc.ir.diagnostics", "VerifyError": "shardc.ir.diagnostics",
    "ShardingError": "shardc.ir.diagnostics", "ConversionError": "shardc.ir.diagnostics",
    "PassError": "shardc.ir.diagnostics", "ExecutionError": "shardc.ir.diagnostics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'shardc' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

