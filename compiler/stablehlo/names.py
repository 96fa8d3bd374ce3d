"""Value names as MLIR prints them: `%arg0`, `%0`, `%1#2`, `%cst`, `%c_1`, `%values`.

    %0 = stablehlo.add %arg0, %arg1 ...    %cst = stablehlo.constant ...    %c_0 = ...

Names are what MLIR's `SSANameState` gives the same ops, so the exporter's text matches the text
JAX and Shardy print; ops with an `OpAsmOpInterface` name their results
(`export_table.RESULT_NAMES`).
"""

from __future__ import annotations

from shardc.ir.core import Function, Operation, Value
from shardc.ir.types import is_float
from shardc.stablehlo.attributes import ARITH_CONSTANT_MARKER, SDY_CONSTANT_MARKER
from shardc.stablehlo.export_table import RESULT_NAMES
from shardc.stablehlo.mlir_text import ExportError


class Names:
    """MLIR's SSA naming: `%argN`, `%N` per op, `%cst`/`%c` for constants, one scope per region.

    As MLIR's `SSANameState`: a function's (or region's) own values are numbered first; each
    nested region then starts from the counters as they stand after its whole parent level, so
    sibling regions reuse numbers; a region sees its ancestors' names (for uniquing) but not its
    siblings'. A region is an outlined function here: `region()` names one use of it, with its
    block arguments named `block_names` (else `%argN`) and its captured arguments named as the
    outer values they are bound to.
    """

    def __init__(self, func: Function, parent: Names | None = None,
                 block_names: list[str] | None = None, captured: list[Value] = (),
                 num_block_args: int | None = None):
        self.parent = parent
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        if parent is None:
            self.conflict = self.next_value = self.next_arg = 0
        else:
            self.conflict, self.next_value, self.next_arg = (
                parent.conflict, parent.next_value, parent.next_arg)
        n_block = len(func.args) - len(captured) if num_block_args is None else num_block_args
        for i, a in enumerate(func.args[:n_block]):
            if block_names is not None:
                self.names[id(a)] = self.unique(block_names[i])
            else:
                self.names[id(a)] = f"arg{self.next_arg}"
                self.next_arg += 1
        for a, outer in zip(func.args[n_block:], captured):
            self.names[id(a)] = parent(outer)[1:]
        for op in func.body:
            self.number(op)

    def region(self, func: Function, block_names: list[str] | None = None,
               captured: list[Value] = ()) -> Names:
        return Names(func, self, block_names, captured)

    def _taken(self, name: str) -> bool:
        scope: Names | None = self
        while scope is not None:
            if name in scope.used:
                return True
            scope = scope.parent
        return False

    def unique(self, base: str) -> str:
        if not self._taken(base):
            self.used.add(base)
            return base
        while True:
            probe = f"{base}_{self.conflict}"
            self.conflict += 1
            if not self._taken(probe):
                self.used.add(probe)
                return probe

    def number(self, op: Operation) -> None:
        results = op.results
        if not results:
            return
        name = op.name
        if name in RESULT_NAMES:
            for r, base in zip(results, RESULT_NAMES[name]):
                self.names[id(r)] = self.unique(base)
            return
        if name == "constant" and not op.attributes.get(SDY_CONSTANT_MARKER):
            # MLIR's names: arith.constant of a tensor is %cst whatever its element type.
            cst = op.attributes.get(ARITH_CONSTANT_MARKER) or is_float(results[0].type.dtype)
            self.names[id(results[0])] = self.unique("cst" if cst else "c")
            return
        base = str(self.next_value)
        self.next_value += 1
        if len(results) == 1:
            self.names[id(results[0])] = base
        else:
            for i, r in enumerate(results):
                self.names[id(r)] = f"{base}#{i}"

    def group(self, op: Operation) -> str:
        """`%0 = `, `%1:2 = ` or '' for an op with no results."""
        results = op.results
        if len(results) == 1:
            return "%" + self.names[id(results[0])] + " = "
        if not results:
            return ""
        if op.name in RESULT_NAMES:
            return ", ".join(f"%{self.names[id(r)]}" for r in op.results) + " = "
        return f"%{self.names[id(op.results[0])].split('#')[0]}:{len(op.results)} = "

    def __call__(self, v: Value) -> str:
        name = self.names.get(id(v))
        if name is not None:
            return "%" + name
        scope: Names | None = self.parent
        while scope is not None:
            name = scope.names.get(id(v))
            if name is not None:
                return "%" + name
            scope = scope.parent
        raise ExportError(f"value {v!r} is used before it is defined")
