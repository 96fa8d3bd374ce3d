"""StableHLO + Shardy (sdy) MLIR text import and export (what JAX prints and Shardy reads).

    module = import_stablehlo(text, "model.stablehlo.mlir")   # -> ir.core.Module
    text = export_stablehlo(module)                            # -> MLIR text
    looks_like_stablehlo(text)                                 # input-format detection

See docs/interop.md for the ops that import and what the importer normalises.
"""

from shardc.stablehlo.detect import looks_like_stablehlo
from shardc.stablehlo.exporter import ExportError, export_stablehlo
from shardc.stablehlo.importer import import_stablehlo

__all__ = ["ExportError", "export_stablehlo", "import_stablehlo", "looks_like_stablehlo"]
