"""`shardc.ir.core.Module` -> StableHLO + Shardy (sdy) MLIR text, in MLIR's own pretty form.

    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding =
        #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<...>, ...) -> tensor<...>

The text is what MLIR (JAX's `as_text()`, Shardy's `sdy_opt`) prints for the same content, so
`export_stablehlo(import_stablehlo(t)) == t` for JAX's output: values are named as MLIR names
them (`%arg0`, `%0`, `%cst`, `%c_1`: names.py), attribute dictionaries are sorted, floats are
printed by MLIR's rules (`1.000000e+00`, `0.797884583`, `0xFF800000`: literals.py), shardings
sit where Shardy puts them (`#sdy.sharding<...>` on function arguments/results,
`#sdy.sharding_per_value<[...]>` on ops, inline on sdy ops). Each op family in `ops/` prints
its ops (export_table.py); printer.py prints the module around them. `loc(...)` is printed only
with `debug_info=True`.
"""

from __future__ import annotations

import shardc.stablehlo.ops  # noqa: F401  (registers every op family's printers)
from shardc.ir.core import Module
from shardc.stablehlo.mlir_text import ExportError
from shardc.stablehlo.printer import Printer

__all__ = ["ExportError", "export_stablehlo"]


def export_stablehlo(module: Module, *, debug_info: bool = False) -> str:
    """The StableHLO + sdy MLIR text of `module`, as MLIR/Shardy print it (ends with a newline).

    `debug_info=True` writes each op's written location as `loc("file":line:col)`.
    Raises `ExportError` for an op with no StableHLO equivalent (e.g. `reciprocal`).
    """
    return Printer(module, debug_info).print()
