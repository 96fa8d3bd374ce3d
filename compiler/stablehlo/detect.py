"""Tell StableHLO + sdy MLIR text from shardc's native IR text.

Native text starts with `mesh`, `func` or `module_attributes`; MLIR text with `module`,
`sdy.mesh`, `func.func` or a `#loc` alias. Attribute names inside a native module (an imported
`sdy.constant = true`, `jax.result_info`) do not count: only the first declaration decides.
"""

from __future__ import annotations

import re

_FIRST_WORD = re.compile(r"(?:\s|//[^\n]*\n?)*([#A-Za-z_][\w.]*)")
_MLIR_STARTS = ("module", "sdy.mesh", "func.func", "#loc")


def looks_like_stablehlo(text: str) -> bool:
    """True for StableHLO / sdy MLIR text (`module @jit_f ...`, `func.func ...`, `sdy.mesh ...`)."""
    m = _FIRST_WORD.match(text)
    if m is None:
        return False
    word = m.group(1)
    if word == "module_attributes":
        return False
    if word.startswith("#loc") or word in _MLIR_STARTS:
        return True
    if word.startswith(("stablehlo.", "sdy.", "chlo.", "func.")):
        return True
    return word not in ("mesh", "func") and "func.func" in text
